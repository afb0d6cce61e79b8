"""Checkers for notebook 16: the batch that makes the weight products compute-bound (predict),
the best number of draft tokens for speculative decoding (derive), a rolling buffer whose logits
drift after W tokens (debug), and a paged cache's gather without a Python loop (constrain)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    lines_run,
    wraps_answer,
)


@exercise("predict")
def check_decode_intensity(answer: Any) -> CheckResult:
    """``answer``: the smallest batch size ``B`` at which a ``(B, 4096)`` by ``(4096, 4096)``
    float16 product (weights and inputs read, results written) reaches the A100's ridge point,
    312 TFLOP/s over 1.555 TB/s."""
    n, ridge = 4096, 312e12 / 1.555e12

    def per_byte(batch: float, itemsize: int = 2) -> float:
        return 2 * batch * n * n / (itemsize * (n * n + 2 * batch * n))

    expected = next(b for b in range(1, n) if per_byte(b) >= ridge)
    explanation = (
        f"B sequences: 2Bn² FLOPs over (n² + 2Bn) × 2 bytes, Bn/(n + 2B) FLOP per byte for "
        f"n = {n:,}. It reaches the ridge point {ridge:.1f} when B ≥ {ridge:.1f}·n/(n − "
        f"{2 * ridge:.1f}) = {ridge * n / (n - 2 * ridge):.1f}: B = {expected}, at "
        f"{per_byte(expected):.1f} FLOP per byte. Each weight is read once and used B times; the "
        "B input and output vectors, which grow with B, keep the intensity a little below B.")
    float32 = next(b for b in range(1, 4 * n) if per_byte(b, 4) >= ridge)
    round_up = (f"at B = {expected - 1} the intensity is {per_byte(expected - 1):.1f}, still "
                f"below {ridge:.1f}: round up.")
    mistakes: dict[float, str] = {
        expected - 1: round_up,
        math.ceil(ridge): "that takes the intensity to be B itself; the B input and output "
                          "vectors are bytes too, and they grow with B.",
        1: "that is one sequence, about 1 FLOP per byte: far below the ridge.",
        float32: "that counts 4 bytes a number; the weights and vectors are float16, 2 bytes.",
    }
    atol = 0.5  # a batch size: the whole number itself, not a number near it
    if (isinstance(answer, (float, np.floating)) and math.isfinite(answer)
            and not float(answer).is_integer()):
        whole = "that is not a whole number of sequences: a batch holds whole sequences"
        near = expected - 1 < answer < expected
        mistakes = {float(answer): f"{whole}; {round_up}" if near else f"{whole}.", **mistakes}
        atol = 0.0
    return check_number(answer, expected, name="decode_intensity",
                        label="smallest batch at which a (B, 4096) × (4096, 4096) float16 "
                              "product reaches the A100's ridge point",
                        explanation=explanation, rtol=0, atol=atol, mistakes=mistakes,
                        hint="write the FLOPs and the bytes for B sequences as expressions in B, "
                             "and find the first B at which their ratio reaches 200.6.")


def _speedup(a: float, c: float, k: np.ndarray) -> np.ndarray:
    return (1 - a ** (k + 1)) / ((1 - a) * (k * c + 1))


def _best_draft_length(a: float, c: float) -> int:
    ks = np.arange(0, 2000)
    return int(ks[np.argmax(_speedup(a, c, ks))])


_TIE = 1e-9  # a k whose speedup is this close (relative) to the best is a best k too


@exercise("derive")
def check_best_draft_length(func: Callable[[float, float], int]) -> CheckResult:
    """``func(a, c)``: the number of draft tokens ``k >= 0`` with the largest expected speedup
    over plain decoding, ``(1 − a^(k+1)) / ((1 − a)(k·c + 1))``, for an acceptance rate ``a`` and
    a draft pass that costs ``c`` target passes; 0 when speculating does not pay."""
    cases = [
        Case((0.8, 0.05), "a = 0.8, c = 0.05 (a draft 20 times cheaper)"),
        Case((0.9, 0.02), "a = 0.9, c = 0.02"),
        Case((0.6, 0.1), "a = 0.6, c = 0.1"),
        Case((0.8, 0.1), "a = 0.8, c = 0.1"),
        Case((0.95, 0.01), "a = 0.95, c = 0.01"),
        Case((0.6, 0.3), "a = 0.6, c = 0.3"),
        Case((0.5, 0.6), "a = 0.5, c = 0.6: a slow draft that is often wrong"),
    ]

    @wraps_answer(func)
    def as_count(a, c):
        k = func(a, c)
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise RuleBroken(f"expected a whole number of draft tokens (an int), got "
                             f"{type(k).__name__} {k!r}")
        best_k = _best_draft_length(a, c)
        best = float(_speedup(a, c, np.array(best_k)))
        got = float(_speedup(a, c, np.array(k))) if k >= 0 else -math.inf
        if got < best * (1 - _TIE):  # a k that ties with the best passes
            raise RuleBroken(f"k = {k} gives an expected speedup of {got:.3f}, the best k gives "
                             f"{best:.3f}: the speedup is the tokens per round over the cost of "
                             "a round, k draft passes of c and one target pass")
        return best_k

    return check_function(as_count, cases=cases, reference=_best_draft_length,
                          name="best_draft_length")


def store_given(k_buffer, v_buffer, p, k_p, v_p):
    """Notebook 16 Exercise 3's function with its bug: writes position ``p`` into a rolling buffer
    of W slots and rotates the key by RoPE at its slot instead of its position."""
    from course_utils import positional

    slot = p % len(k_buffer)
    k_buffer[slot] = positional.apply_rope(k_p[None], [slot])[0]
    v_buffer[slot] = v_p


def _rolling_outputs(store: Callable, q, k, v, window: int):
    """Decode one head token by token with ``store`` writing into a buffer of ``window`` slots."""
    import torch

    from course_utils import positional
    from course_utils.attention import softmax_attention

    n, d = q.shape
    k_buffer = torch.zeros(window, d, dtype=q.dtype)
    v_buffer = torch.zeros(window, d, dtype=q.dtype)
    rows = []
    for p in range(n):
        k_before, v_before = k_buffer.clone(), v_buffer.clone()
        store(k_buffer, v_buffer, p, k[p].clone(), v[p].clone())
        if torch.equal(k_buffer, k_before) or torch.equal(v_buffer, v_before):
            raise RuleBroken(f"after store(..., p = {p}, ...) k_buffer or v_buffer is as it was: "
                             "write into the buffers it is given, in place (k_buffer[slot] = ...), "
                             "not into a copy or a new tensor")
        filled = min(p + 1, window)
        q_p = positional.apply_rope(q[p : p + 1], [p])
        rows.append(softmax_attention(q_p, k_buffer[:filled], v_buffer[:filled])[0])
    return torch.cat(rows)


def _band_reference(q, k, v, window: int):
    import torch

    from course_utils import positional
    from course_utils.attention import softmax_attention

    n = len(q)
    positions = torch.arange(n)
    i, j = positions[:, None], positions[None, :]
    mask = (j <= i) & (j > i - window)
    return softmax_attention(positional.apply_rope(q, positions),
                             positional.apply_rope(k, positions), v, mask)[0]


@exercise("debug")
def check_store(func: Callable) -> CheckResult:
    """``func(k_buffer, v_buffer, p, k_p, v_p)`` must write the key (rotated by RoPE at position
    ``p``) and the value of position ``p`` into slot ``p mod W`` of the W-slot buffers, in place.
    The checker decodes one head token by token with it and compares every output with
    attention over all tokens with the band mask of width W."""
    import torch

    from course_utils.checks import randn

    def case(n, window, d, seed, label):
        q, k, v = (randn(n, d, seed=seed + i) for i in range(3))
        return Case((q, k, v, window), label, expected=_band_reference(q, k, v, window))

    cases = [
        case(6, 8, 4, 0, "6 tokens, W = 8: the buffer never fills"),
        case(8, 8, 4, 10, "8 tokens, W = 8: the buffer just fills"),
        case(20, 8, 4, 20, "20 tokens, W = 8: the buffer wraps at token 8"),
        case(13, 4, 6, 30, "13 tokens, W = 4: it wraps three times"),
        case(9, 1, 2, 40, "9 tokens, W = 1: each token sees only itself"),
    ]

    @wraps_answer(func)
    def decode(q, k, v, window):
        with torch.no_grad():
            out = _rolling_outputs(func, q, k, v, window)
        right = [torch.allclose(row, want, rtol=1e-9, atol=1e-9)
                 for row, want in zip(out, _band_reference(q, k, v, window), strict=True)]
        if not all(right):
            first = right.index(False)
            if first >= window and all(right[:window]):
                raise RuleBroken(f"the outputs are right for the first {window} tokens and wrong "
                                 f"from token {first} on: right until the buffer wraps, where the "
                                 "slot p mod W and the position p start to differ")
            raise RuleBroken(f"the output of token {first} is wrong, before the buffer wraps "
                             f"(W = {window}): look at what is stored for each position")
        return out

    return check_function(decode, cases=cases, name="store", rtol=1e-9, atol=1e-9)


_GATHER_LINE_BUDGET = 25  # the loop-free version runs under 10 lines; a loop runs 30 or more


def _gather_reference(pool, tables, lengths):
    import torch

    n_max = int(lengths.max())
    out = torch.zeros(len(tables), n_max, pool.shape[-1], dtype=pool.dtype)
    size = pool.shape[1]
    for b, length in enumerate(lengths.tolist()):
        for p in range(length):
            out[b, p] = pool[tables[b, p // size], p % size]
    return out


@exercise("constrain")
def check_gather(func: Callable) -> CheckResult:
    """``func(pool, tables, lengths)``: ``pool`` ``(n_blocks, size, d)``, ``tables`` int64
    ``(B, n_table)`` block tables padded with -1, ``lengths`` int64 ``(B,)`` →
    ``(B, max(lengths), d)``: row b holds sequence b's keys in position order, zeros after its
    length. The rule is enforced: no Python loop (counted with lines_run on a batch of 40
    sequences of up to 59 positions in blocks of 2: a loop over the sequences, over the positions
    or over the 30 columns of the tables runs 30 lines or more)."""
    import torch

    @wraps_answer(func)
    def no_loop(pool, tables, lengths):
        result, lines = lines_run(func, pool, tables, lengths)
        if lines > _GATHER_LINE_BUDGET:
            raise RuleBroken(f"it loops in Python ({lines} lines of Python ran for {len(tables)} "
                             "sequences): the rule is no Python loop; compute the block and the "
                             "slot of every position at once, with p // size and p % size on a "
                             "tensor of positions")
        return result

    def paged(lengths, size, d, seed, label):
        g = torch.Generator().manual_seed(seed)
        blocks = [math.ceil(n / size) for n in lengths]
        n_blocks = sum(blocks) + 3
        order = torch.randperm(n_blocks, generator=g).tolist()  # blocks handed out in any order
        tables = torch.full((len(lengths), max(blocks)), -1, dtype=torch.long)
        for b, count in enumerate(blocks):
            tables[b, :count] = torch.tensor([order.pop() for _ in range(count)])
        pool = torch.randn(n_blocks, size, d, generator=g, dtype=torch.float64)
        return Case((pool, tables, torch.tensor(lengths)), label)

    lengths_40 = torch.randint(1, 60, (40,), generator=torch.Generator().manual_seed(7)).tolist()
    lengths_40[-1] = 59  # 30 blocks of 2: a loop over the columns of the tables runs long too
    cases = [
        paged([9, 8], 4, 2, 0, "section 4's two requests: 9 and 8 positions, blocks of 4"),
        paged([5, 1, 12], 4, 3, 1, "lengths 5, 1, 12: short tables padded with -1"),
        paged([7], 8, 2, 2, "one sequence shorter than one block"),
        paged(lengths_40, 2, 4, 3, f"40 sequences of 1 to {max(lengths_40)} positions, blocks "
              "of 2"),
    ]
    return check_function(no_loop, cases=cases, reference=_gather_reference, name="gather",
                          rtol=0, atol=0)
