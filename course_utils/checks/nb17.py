"""Checkers for notebook 17: the online softmax over a stream of chunks (constrain), the tiles a
causal mask skips (predict), a causal query block read tile by tile (extend), the fast memory
from which FlashAttention-1 moves fewer numbers than standard attention (predict), and a tile's
backward pass with a bug (debug)."""

from __future__ import annotations

import contextlib
import inspect
import math
import tracemalloc
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from course_utils import costs, online_softmax, tiled
from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    names_used,
    randn,
    wraps_answer,
)

_COPYING = {"copy", "astype", "tolist", "tobytes", "view", "__deepcopy__", "__copy__",
            "__reduce__", "__reduce_ex__", "__getstate__"}


# turning chunks into PyTorch tensors: torch's allocator is outside what tracemalloc sees
_TORCH_COPIES = ("tensor", "from_numpy", "as_tensor", "cat", "stack")


# the course's own online softmax: Exercise 1 asks for its rescaling, written by hand
_COURSE_MERGES = ("online_softmax", "merge_softmax_stats", "merge_attention_partials")


def _no_course_merges(func: Callable) -> Callable:
    """``func`` refused with :class:`RuleBroken` when it names the course's online softmax
    (``online_softmax.merge_softmax_stats`` and the like) or calls one of its functions while it
    runs, under any name."""
    names = ("online_softmax_stats", "merge_softmax_stats", "merge_attention_partials")
    course = {id(getattr(online_softmax, name)): f"online_softmax.{name}" for name in names}
    inner = inspect.unwrap(func)
    scope = getattr(inner, "__globals__", {})
    used = [f"the course's module `{name}`" if name == "online_softmax" else f"`{name}`"
            for name in sorted(names_used(func) & set(_COURSE_MERGES))]
    values = [scope.get(name) for name in sorted(names_used(func))]  # under other names, too
    for cell in getattr(inner, "__closure__", None) or ():
        with contextlib.suppress(ValueError):  # a cell not filled yet
            values.append(cell.cell_contents)
    values += list(getattr(inner, "__defaults__", None) or ())
    values += list((getattr(inner, "__kwdefaults__", None) or {}).values())
    values += [item for value in list(values) if isinstance(value, (dict, list, tuple))
               for item in (value.values() if isinstance(value, dict) else value)]
    used += [f"`{course[id(value)]}`" for value in values if id(value) in course]
    rule = "it calls {}, the course's online softmax: write the chunk-by-chunk update yourself"

    def refuse(name: str) -> Callable:
        def refused(*args: Any, **kwargs: Any) -> Any:
            raise RuleBroken(rule.format(name))
        return refused

    @wraps_answer(func)
    def checked(*args: Any) -> Any:
        if used:
            raise RuleBroken(rule.format(used[0]))
        saved = [getattr(online_softmax, name) for name in names]
        try:
            for name in names:
                setattr(online_softmax, name, refuse(f"`online_softmax.{name}`"))
            return func(*args)
        finally:
            for name, original in zip(names, saved, strict=True):
                setattr(online_softmax, name, original)

    return checked


def _no_torch_copies(func: Callable, what: str) -> Callable:
    """``func`` refused with :class:`RuleBroken` when its code builds PyTorch tensors (or joins
    tensors): a copy kept as a tensor would hide from the memory the stream watches."""
    used = sorted(names_used(func) & set(_TORCH_COPIES))

    @wraps_answer(func)
    def checked(*args: Any) -> Any:
        if used:
            raise RuleBroken(f"it calls `{used[0]}`: {what}s are used as they arrive, with "
                             f"NumPy, and not turned into (or joined as) PyTorch tensors, whose "
                             f"memory the checker cannot watch")
        return func(*args)

    return checked


class Block(np.lib.mixins.NDArrayOperatorsMixin):
    """One item of a :class:`Stream`: a view of the stream's single buffer, valid until the next
    item arrives. Arithmetic, NumPy functions, methods and views work while it is valid; using
    it later, or copying it, raises :class:`RuleBroken`."""

    def __init__(self, stream: Stream, serial: int, view: np.ndarray) -> None:
        self._stream, self._serial, self._view = stream, serial, view

    def _live(self) -> np.ndarray:
        if self._serial != self._stream.serial:
            raise RuleBroken(self._stream.message("stale"))
        return self._view

    def _wrap(self, value: Any) -> Any:
        if isinstance(value, np.ndarray) and np.may_share_memory(value, self._view):
            return Block(self._stream, self._serial, value)
        return value

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(_unwrap(x) for x in inputs)
        kwargs = {key: _unwrap(value) for key, value in kwargs.items()}
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_unwrap(args), **_unwrap(kwargs))

    def __array__(self, dtype=None, copy=None):  # np.asarray(block) while it is valid
        view = self._live()
        if dtype is not None:
            return view.astype(dtype)
        return view.copy() if copy else view  # np.array(block) copies, as for an array

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") and name not in _COPYING:
            raise AttributeError(name)
        if name in _COPYING:
            raise RuleBroken(self._stream.message("copy"))
        value = getattr(self._live(), name)
        if callable(value):
            return lambda *args, **kwargs: self._wrap(value(*_unwrap(args), **_unwrap(kwargs)))
        return self._wrap(value)

    def __getitem__(self, index: Any) -> Any:
        return self._wrap(self._live()[_unwrap(index)])

    def __len__(self) -> int:
        return len(self._live())

    def __iter__(self):
        for row in range(len(self._live())):
            yield self[row]

    def __float__(self) -> float:
        return float(self._live())

    def __repr__(self) -> str:
        state = "valid" if self._serial == self._stream.serial else "stale"
        return f"Block({state}, shape {self._view.shape})"


def _unwrap(value: Any) -> Any:
    if isinstance(value, Block):
        return value._live()
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(x) for x in value)
    if isinstance(value, dict):
        return {key: _unwrap(x) for key, x in value.items()}
    return value


class Stream:
    """Items that arrive one at a time and can be read only once, like the key tiles of a long
    sequence: ``for item in x`` works once. Every item (an array, or a tuple of arrays) is handed
    out in the same reused buffer, so a kept reference goes stale: using an item after the next
    one has arrived, copying one, reading the stream twice or turning it into an array raises
    :class:`RuleBroken`. ``stop_after`` (an index) makes reading any item after that one a
    broken rule too, with the message ``stop_message``.

    A copy of an item's values (``np.array(item)``, ``item + 0``, a list of its floats) is not a
    view of the buffer and cannot go stale, so with ``watch_memory`` the stream also watches the
    memory the reader holds (``tracemalloc``, which sees NumPy's arrays): each time an item is
    asked for, the memory allocated since the first item must stay below a few items' worth, so
    that copies kept for a second pass break the rule too."""

    def __init__(self, items: Sequence[Any], name: str = "x", what: str = "value",
                 todo: str = "update m and ℓ together", stop_after: int | None = None,
                 stop_message: str = "", watch_memory: bool = False) -> None:
        self._items = list(items)
        self._name, self._what, self._todo = name, what, todo
        self._stop_after, self._stop_message = stop_after, stop_message
        self._next, self._ended, self.serial = 0, False, -1
        if not self._items:
            raise ValueError("a Stream needs at least one item")
        first = self._items[0] if isinstance(self._items[0], tuple) else (self._items[0],)
        # one buffer per part, as large as the largest item, made before the reader starts
        self._buffers = [np.empty((max(len(it[p] if isinstance(it, tuple) else it)
                                       for it in self._items), *part.shape[1:]))
                         for p, part in enumerate(first)]
        self._watch_memory, self._tracing = watch_memory, False
        self._baseline: int | None = None
        item_bytes = max(sum(np.asarray(part).nbytes
                             for part in (it if isinstance(it, tuple) else (it,)))
                         for it in self._items)
        self._item_bytes = item_bytes
        self._memory_limit = 4 * item_bytes + 16 * 2**10  # a few items' temporaries, no more

    def message(self, problem: str) -> str:
        rule = f"{self._todo} as each {self._what} arrives (one pass)"
        if problem == "stale":
            return (f"it uses a {self._what} after the next one arrived: {self._name} is read "
                    f"once, one {self._what} at a time, each in the same reused buffer, so a "
                    f"kept {self._what} goes stale; {rule}")
        if problem == "copy":
            return (f"it copies a {self._what} to keep it: {self._name} is read once, one "
                    f"{self._what} at a time, without keeping them; {rule}")
        if problem.startswith("kept"):
            held = int(problem.split()[1])
            return (f"it keeps what it reads: after {self._next} {self._what}s it holds "
                    f"{held / 2**10:,.0f} KiB more than when it started, about "
                    f"{held / self._item_bytes:.0f} {self._what}s' worth; {self._name} is "
                    f"read once and nothing is kept for a second pass; {rule}")
        if problem == "twice":
            return f"it reads {self._name} a second time: {self._name} is read once; {rule}"
        return f"it turns {self._name} into an array: {self._name} is read once; {rule}"

    def __iter__(self) -> Stream:
        if self._ended or self._next:
            raise RuleBroken(self.message("twice"))
        return self

    def _check_memory(self) -> None:
        if not self._watch_memory:
            return
        if self._baseline is None:  # the first item: start counting from here
            self._tracing = not tracemalloc.is_tracing()
            if self._tracing:
                tracemalloc.start()
            self._baseline = tracemalloc.get_traced_memory()[0]
            return
        held = tracemalloc.get_traced_memory()[0] - self._baseline
        if held > self._memory_limit:
            self._stop_tracing()
            raise RuleBroken(self.message(f"kept {held}"))

    def _stop_tracing(self) -> None:
        if self._tracing:
            tracemalloc.stop()
            self._tracing = False

    def __del__(self) -> None:
        self._stop_tracing()

    def __next__(self) -> Any:
        self._check_memory()
        if self._next == len(self._items):
            self._ended = True
            self._stop_tracing()
            raise StopIteration
        if self._stop_after is not None and self._next > self._stop_after:
            self._stop_tracing()
            raise RuleBroken(self._stop_message)
        item = self._items[self._next]
        parts = item if isinstance(item, tuple) else (item,)
        views = []
        for buffer, part in zip(self._buffers, parts, strict=True):
            view = buffer[: len(part)]
            view[...] = part
            views.append(view)
        self.serial = self._next
        self._next += 1
        blocks = tuple(Block(self, self.serial, view) for view in views)
        return blocks if isinstance(item, tuple) else blocks[0]

    def __array__(self, dtype=None, copy=None):
        raise RuleBroken(self.message("array"))

    def __deepcopy__(self, memo: dict) -> Stream:  # a fresh stream of the same items
        return Stream(self._items, self._name, self._what, self._todo, self._stop_after,
                      self._stop_message, self._watch_memory)

    def __repr__(self) -> str:
        left = len(self._items) - self._next
        return f"Stream({left} of {len(self._items)} {self._what}s left)"


@exercise("constrain")
def check_online_softmax_stats(func: Callable[[Stream], tuple[float, float]]) -> CheckResult:
    """``func(chunks)`` must return ``(m, ℓ)``: the max of all the scores and ``Σ e^(x_i − m)``,
    reading the :class:`Stream` of 1-D chunks once, chunk by chunk, without keeping any."""
    chunked = [
        ([[2.0, 1.0], [0.1]], "softmax([2, 1, 0.1]) in chunks [2, 1] and [0.1]"),
        ([[0.0, 5.0], [-3.0, 5.0]], "the maximum appears in both chunks"),
        ([[1000.0, 999.0], [998.0, 1001.0, 997.0]], "scores near 1000 must not overflow"),
        ([[-4.0], [-2.0, 0.0], [2.0, 1.0, 4.0]], "the max rises with every chunk: rescale ℓ"),
        ([[-5.0, -3.0], [-4.0]], "all negative: m starts at -inf, not 0"),
        ([[7.5]], "one chunk of one score: (7.5, 1.0)"),
    ]
    rng = np.random.default_rng(16)
    long = [3 * rng.normal(size=1024) + shift for shift in np.linspace(-20, 20, 40)]
    chunked.append((long, "40 chunks of 1,024 scores: nothing kept between chunks, not even a "
                          "copy"))
    cases = []
    for chunks, label in chunked:
        arrays = [np.array(c) for c in chunks]
        stream = Stream(arrays, "chunks", "chunk", "update m and ℓ", watch_memory=True)
        cases.append(Case((stream,), label,
                          expected=online_softmax.online_softmax_stats(np.concatenate(arrays))))
    return check_function(_no_torch_copies(_no_course_merges(func), "chunk"), cases=cases,
                          name="online_softmax_stats", names=("m", "ℓ"),
                          no_warnings=True)


@exercise("predict")
def check_skipped_tiles(answer: Any) -> CheckResult:
    """``answer``: how many of the 8 × 32 tiles of 1,024 new queries against 4,096 keys (128 ×
    128 tiles, the causal mask aligned bottom-right) a causal tiled loop skips."""
    grid = tiled.visited_tiles(1024, 4096, 128, 128, causal=True)
    skipped = int(grid.size - grid.sum())
    explanation = (
        "The 1,024 new queries sit at positions 3,072 to 4,095. Query block i (i = 0…7) ends at "
        "position 3,072 + 128 i + 127, so it sees key blocks 0 to 24 + i and skips the last "
        f"7 - i: 7 + 6 + … + 0 = {skipped} of {grid.size} tiles, about 11%. Half the tiles go "
        "only when the queries start at position 0.")
    n_q, n_k = grid.shape  # top-left: query block i would see key blocks 0 to i only
    mistakes = {
        sum(n_k - 1 - i for i in range(n_q)):
            "that aligns the mask top-left, as if the new queries started at position 0; they "
            "come after the 3,072 cached keys, so the mask is aligned bottom-right.",
        int(grid.sum()): "that counts visited tiles, not skipped ones.",
    }
    return check_number(answer, skipped, name="skipped_tiles",
                        label="tiles skipped, 1,024 queries after 3,072 cached, 128 × 128 tiles",
                        explanation=explanation, rtol=0, atol=0.5, mistakes=mistakes,
                        hint="for each of the 8 query blocks, find the last key block it can "
                             "see; the blocks after that one are skipped.")


def _smallest_fast_memory(n: int, d: int, moves: Callable[[int], float], standard: float) -> int:
    """The smallest ``M``, a whole number of rows of ``4d`` numbers, with ``moves(M) < standard``
    (``moves`` falls as ``M`` grows; none is larger than ``N`` rows)."""
    return next(rows * 4 * d for rows in range(1, n + 1) if moves(rows * 4 * d) < standard)


@exercise("predict")
def check_fa1_break_even(answer: Any) -> CheckResult:
    """``answer``: the smallest fast memory ``M`` (a whole number of rows of ``4d`` numbers) at
    which FlashAttention-1 (Algorithm 1 of Dao et al. 2022, key blocks of ``⌈M/4d⌉`` rows
    outside) moves fewer numbers between slow and fast memory than standard attention, for one
    head with ``N = 32,768`` and ``d = 64``."""
    n, d = 32_768, 64

    def fa1(fast: int, per_step: int = 3 * n * d + 4 * n) -> int:
        steps = math.ceil(n / math.ceil(fast / (4 * d)))
        return 3 * n * d + 2 * n + steps * per_step

    def fa2(fast: int) -> int:
        return 2 * n * d + n + math.ceil(n / (fast // (4 * d))) * 2 * n * d

    standard = costs.standard_attention_io(n, d)
    expected = _smallest_fast_memory(n, d, fa1, standard)
    rows = expected // (4 * d)
    bound = (4 * n + d - 2) / (3 * d + 4)
    steps = math.ceil(n / rows)
    explanation = (
        f"FlashAttention-1 moves 3Nd + 2N + T_c(3Nd + 4N), standard attention 4Nd + 4N²: divided "
        f"by N, FlashAttention-1 moves fewer when T_c < (4N + d - 2)/(3d + 4) = {bound:.2f}, so "
        f"at most {math.floor(bound)} outer steps, and ⌈N/B_c⌉ ≤ {math.floor(bound)} once "
        f"B_c ≥ {n:,}/{math.floor(bound)} = {n / math.floor(bound):.2f}: B_c = {rows} rows, "
        f"M = 4d·B_c = {expected:,} numbers. There FlashAttention-1 moves "
        f"{fa1(expected) / 1e6:,.2f} million numbers in {steps} steps, standard attention "
        f"{standard / 1e6:,.2f} million; with {rows - 1} rows, {fa1(expected - 4 * d) / 1e6:,.2f} "
        f"million. The margin, {(standard - fa1(expected)) / 1e6:.2f} million, is less than one "
        f"outer step ({(3 * n * d + 4 * n) / 1e6:.2f} million), so every term counts.")
    mistakes = {
        rows: f"that is B_c, in rows of keys; the question asks for M, in numbers: {4 * d} "
              "numbers (4d) for each row.",
        _smallest_fast_memory(n, d, fa1, 4 * n * n):
            "that drops standard attention's 4Nd (reading Q, K, V and writing O): the two counts "
            "differ here by less than one outer step of FlashAttention-1, so every term counts.",
        _smallest_fast_memory(n, d, fa2, standard):
            "that is where section 6's FlashAttention-2 order (2Nd + N + T_r·2Nd) moves fewer "
            "than standard attention; FlashAttention-1 reads and writes O, ℓ and m at every outer "
            "step, and needs a larger M.",
        _smallest_fast_memory(n, d, fa1, 2 * n * n + 4 * n * d):
            "that counts S and P once each (2N²); standard attention writes S, reads it back, "
            "writes P and reads P again: 4N².",
        _smallest_fast_memory(n, d, partial(fa1, per_step=2 * n * d + 4 * n), standard):
            "that leaves out Q, read at every outer step: each step reads Q, O, ℓ, m and writes "
            "O, ℓ, m, 3Nd + 4N numbers.",
        expected - 4 * d:
            f"with B_c = {rows - 1} rows FlashAttention-1 needs ⌈N/{rows - 1}⌉ = "
            f"{math.ceil(n / (rows - 1))} outer steps and still moves more: "
            f"{fa1(expected - 4 * d) / 1e6:,.2f} million numbers against standard attention's "
            f"{standard / 1e6:,.2f} million.",
        2 * expected: "that is in bytes, 2 per float16 number; the question counts M in numbers.",
        expected - 4 * d + 1: f"M is a whole number of rows of 4d = {4 * d} numbers here; write "
                              "the smallest such M.",
    }
    return check_number(answer, expected, name="fa1_break_even",
                        label="the smallest M at which FlashAttention-1 moves fewer numbers "
                              "than standard attention, N = 32,768, d = 64",
                        explanation=explanation, rtol=0, atol=0.5, mistakes=mistakes,
                        hint="write both counts, find the most outer steps T_c that keep "
                             "FlashAttention-1 below standard attention, then the smallest B_c "
                             "that needs no more steps than that; M = 4d·B_c.")


def _causal_reference(q: np.ndarray, q_start: int, k: np.ndarray, v: np.ndarray):
    s = q @ k.T / math.sqrt(q.shape[1])
    rows = q_start + np.arange(len(q))
    s = np.where(np.arange(len(k))[None, :] <= rows[:, None], s, -np.inf)
    m = s.max(axis=1)
    p = np.exp(s - m[:, None])
    return p @ v / p.sum(axis=1, keepdims=True), m + np.log(p.sum(axis=1))


@exercise("extend")
def check_causal_block_forward(func: Callable[..., tuple]) -> CheckResult:
    """``func(q, q_start, blocks)``: causal attention ``(out, lse)`` of the queries ``q`` at
    positions ``q_start …``, the keys and values arriving as a :class:`Stream` of ``(k_blk,
    v_blk)`` blocks from position 0; it must use one block at a time and stop before the first
    block that lies wholly after its last query."""
    rng = np.random.default_rng(16)

    def case(q, q_start, k, v, size, label):
        cuts = list(range(size, len(k), size))
        blocks = list(zip(np.split(k, cuts), np.split(v, cuts), strict=True))
        last = q_start + len(q) - 1
        stop_after = last // size  # the block holding the last query's own key
        message = (f"it reads key block {stop_after + 1} (keys {(stop_after + 1) * size} on), "
                   f"which lies wholly after the last query (position {last}): a causal loop "
                   "stops before it, so count the keys seen and leave the loop once the next "
                   "block would start after the last query")
        stream = Stream(blocks, "blocks", "block", "update m, ℓ and the accumulator",
                        stop_after=stop_after, stop_message=message, watch_memory=True)
        return Case((q, q_start, stream), label, expected=_causal_reference(q, q_start, k, v))

    q, k, v = rng.normal(size=(4, 4)), rng.normal(size=(16, 4)), rng.normal(size=(16, 2))
    direction = np.array([1.0, 0.0, 0.0, 0.0])
    rising = np.outer(np.arange(16.0), direction) * 3  # later keys score higher
    cases = [
        case(q, 8, k, v, 4, "queries 8-11, keys in blocks of 4: blocks 0, 1 and the diagonal 2"),
        case(q, 0, k, v, 4, "queries 0-3: only the diagonal block, masked inside"),
        case(q[:3], 5, k, v, 4, "queries 5-7 (not a whole block): the diagonal cuts block 1"),
        case(q, 5, k, v, 4, "queries 5-8: the next block starts at the last query (key 8), so "
             "the loop must read it"),
        case(q * 0.1 + 2 * direction, 10, k * 0.1 + rising, v, 3,
             "the max rises in every block: rescale ℓ and the accumulator"),
        case(q * 40 + 80 * direction, 12, k + 25 * direction, v, 5,
             "scores near 1000, the last block shorter: no overflow"),
        case(rng.normal(size=(4, 8)), 30 * 256 - 4, rng.normal(size=(30 * 256, 8)),
             rng.normal(size=(30 * 256, 8)), 256,
             "30 blocks of 256 keys: each used as it arrives, none kept, not even a copy"),
    ]
    return check_function(_no_torch_copies(func, "block"), cases=cases,
                          name="causal_block_forward", names=("out", "lse"),
                          no_warnings=True)


def _tile_gradients(q, k, v, grad_out, tile: slice):
    """``(dq, dk, dv)`` of one key tile, by autograd: the scores of the tile's keys use their
    own copy of q, so that q's gradient through that copy is the tile's share of dq."""
    import torch

    q_tile, q_rest = q.clone().requires_grad_(), q.clone().requires_grad_()
    k, v = k.clone().requires_grad_(), v.clone().requires_grad_()
    in_tile = torch.zeros(k.shape[0], dtype=torch.bool)
    in_tile[tile] = True
    scores = torch.where(in_tile, q_tile @ k.T, q_rest @ k.T) / math.sqrt(q.shape[-1])
    out = torch.softmax(scores, dim=-1) @ v
    dq, dk, dv = torch.autograd.grad(out, (q_tile, k, v), grad_out)
    return dq, dk[tile], dv[tile]


def tile_backward_given(q, k, v, out, lse, grad_out):
    """Exercise 5's function with its bug (kept here so the notebook and the tests share it)."""
    import torch

    scale = 1 / math.sqrt(q.shape[1])
    p = torch.softmax(q @ k.T * scale, dim=1)   # this tile's probabilities
    dv = p.T @ grad_out
    dp = grad_out @ v.T
    d_row = (grad_out * out).sum(dim=1, keepdim=True)
    ds = p * (dp - d_row)
    return ds @ k * scale, ds.T @ q * scale, dv


@exercise("debug")
def check_tile_backward(func: Callable[..., tuple]) -> CheckResult:
    """``func(q, k, v, out, lse, grad_out)`` must return one tile's ``(dq, dk, dv)``: q, out,
    lse and grad_out of a query block, k and v of one key tile (float64 tensors)."""
    import torch

    def case(q, k, tile, label, seed):
        v, grad_out = randn(k.shape[0], 3, seed=seed), randn(q.shape[0], 3, seed=seed + 1)
        scores = q @ k.T / 2
        out = torch.softmax(scores, dim=-1) @ v
        lse = torch.logsumexp(scores, dim=-1)
        expected = _tile_gradients(q, k, v, grad_out, tile)
        return Case((q, k[tile], v[tile], out, lse, grad_out), label, expected=expected)

    cases = [
        case(randn(3, 4, seed=1), randn(5, 4, seed=2), slice(0, 5),
             "one tile holding every key: the whole gradient", seed=3),
        case(randn(4, 4, seed=4), randn(7, 4, seed=5), slice(4, 7),
             "the second of two key tiles: the tile holds only some of each row's keys", seed=6),
        case(randn(2, 4, seed=7, shift=400.0), randn(6, 4, seed=8, scale=0.001, shift=1.0),
             slice(0, 3), "scores near 800: exp(S) alone overflows", seed=9),
    ]
    return check_function(func, cases=cases, name="tile_backward", names=("dq", "dk", "dv"),
                          no_warnings=True)
