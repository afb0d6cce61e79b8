"""Checkers for notebook 15 (today's language models): the context that fits beside a 70B
model (predict), RoPE's score as a function of the offset (derive), an off-by-one in top-p
(debug), grouped-query attention without copying the key/value heads (constrain), and
"NTK-aware" RoPE scaling, a new base instead of new frequencies (extend)."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from course_utils import language_model, positional, sampling
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
from course_utils.checks.nb10 import refusing_library

# -- Exercise 1 (predict): how long 45 conversations may be beside a 70B model ----------------

_GPU_GIB, _N_GPUS, _PARAMETERS, _USERS = 80, 8, 70.6e9, 45


@exercise("predict")
def check_kv_cache_70b(answer: Any) -> CheckResult:
    """``answer``: the longest context, in whole tokens, that 45 conversations can each have at once
    on a server of 8 GPUs of 80 GiB, beside the weights of a model of Llama 3.1 70B's shape (80
    layers, 8 K/V heads of 128, 70.6 billion weights), weights and cache in bfloat16."""
    per_token = language_model.kv_cache_bytes(80, 8, 128, 1, bytes_per_value=2)
    weights = 2 * _PARAMETERS
    left = _N_GPUS * _GPU_GIB * 2**30 - weights
    expected = math.floor(left / (_USERS * per_token))
    explanation = (
        "Per token: 2 (a key and a value) × 80 layers × 8 K/V heads × 128 numbers × 2 bytes = "
        f"{per_token:,} bytes (320 KiB), for each of the {_USERS} conversations. The weights take "
        f"2 × 70.6·10⁹ = {weights:,.0f} bytes ({weights / 2**30:.1f} GiB) of the 640 × 2³⁰ = "
        f"{_N_GPUS * _GPU_GIB * 2**30:,} bytes, leaving {left:,.0f} bytes "
        f"({left / 2**30:.1f} GiB): {left:,.0f} / ({_USERS} × {per_token:,}) = "
        f"{left / (_USERS * per_token):,.2f}, so {expected:,} whole tokens each.")
    # a learner rounds down each wrong route too, so each mistake is its whole number of tokens
    mistakes: dict[float, str] = {
        # round() gives this too: the quotient's fraction is above one half
        expected + 1: "that rounds up (as round() does here): the last token would not fit.",
        math.floor(_N_GPUS * _GPU_GIB * 2**30 / (_USERS * per_token)):
            "that is what 640 GiB holds with no weights: subtract the weights first.",
        math.floor(left / (_USERS * 8 * per_token)):
            "that counts the 64 query heads; only the 8 K/V heads have keys and values to cache.",
        math.floor(left / per_token):
            f"that is the context of one conversation; the memory is shared by {_USERS}.",
        math.floor(left / (_USERS * per_token / 2)):
            "that halves the bytes of a token: each token stores a key and a value, 2 bytes per "
            "number in bfloat16.",
        math.floor((_N_GPUS * _GPU_GIB - weights / 1e9) * 2**30 / (_USERS * per_token)):
            "that reads the weights' 141.2·10⁹ bytes as 141.2 GiB; a GiB is 2³⁰ bytes, not 10⁹.",
        math.floor((_N_GPUS * _GPU_GIB * 2**30 - _PARAMETERS) / (_USERS * per_token)):
            "that counts 1 byte per weight; the weights take 2 bytes each: "
            f"{weights / 1e9:.1f}·10⁹ bytes.",
        math.floor((_N_GPUS * _GPU_GIB * 1e9 - weights) / (_USERS * per_token)):
            f"that reads {_GPU_GIB} GiB as {_GPU_GIB}·10⁹ bytes; a GiB is 2³⁰ bytes.",
    }
    assert len(mistakes) == 8, "two mistakes give the same number of tokens"
    atol = 0.5  # whole tokens: the answer itself, not a number near it
    if (isinstance(answer, (float, np.floating)) and math.isfinite(answer)
            and not float(answer).is_integer()):
        mistakes = {float(answer): "that is not a whole number of tokens: a token is cached "
                                   "whole or not at all, so round down.", **mistakes}
        atol = 0.0
    return check_number(answer, expected, name="kv_cache_70b",
                        label=f"longest context (tokens) for {_USERS} conversations beside Llama "
                              "3.1 70B's weights on 8 × 80 GiB, bfloat16",
                        explanation=explanation, rtol=0.0, atol=atol, mistakes=mistakes,
                        hint="count the bytes the weights leave, then divide by the bytes one "
                             f"token takes in all {_USERS} caches (section 5's formula).")


# -- Exercise 2 (derive): the RoPE score as a sum of cosines of the offset --------------------

_OFFSETS = np.array([*range(-40, 41), 500, 4095])


def _rope_scores(q: np.ndarray, k: np.ndarray, base: float) -> np.ndarray:
    """``(R_m q) · (R_n k)`` at the offsets ``n - m`` of ``_OFFSETS`` (with m = 7)."""
    n_off = len(_OFFSETS)
    rq = positional.apply_rope(torch.from_numpy(q).expand(n_off, -1), [7] * n_off, base)
    rk = positional.apply_rope(torch.from_numpy(k).expand(n_off, -1), 7 + _OFFSETS, base)
    return (rq * rk).sum(-1).numpy()


def _scores_from_terms(func: Callable) -> Callable:
    @functools.wraps(func)
    def scores(q: np.ndarray, k: np.ndarray, base: float = 10000.0) -> np.ndarray:
        got = func(q, k)
        if not isinstance(got, tuple) or len(got) != 2:
            raise RuleBroken(f"expected a tuple (amplitudes, phases), got {type(got).__name__}")
        amplitude, phase = (np.asarray(part, dtype=np.float64) for part in got)
        d = len(q)
        if amplitude.shape != (d // 2,) or phase.shape != (d // 2,):
            raise RuleBroken(f"expected amplitudes and phases of shape ({d // 2},), one per pair, "
                             f"got {amplitude.shape} and {phase.shape}")
        if np.any(amplitude < 0):
            raise RuleBroken("an amplitude is negative: an amplitude is a product of lengths, "
                             "never negative; put the sign into the phase (ψ + π)")
        omega = base ** (-np.arange(0, d, 2) / d)
        return (amplitude * np.cos(_OFFSETS[:, None] * omega + phase)).sum(-1)

    return scores


@exercise("derive")
def check_rope_score_terms(func: Callable) -> CheckResult:
    """``func(q, k)`` returns ``(amplitudes, phases)``, one per pair ``i``, such
    that ``(R_m q)·(R_n k) = Σ_i ξ_i cos((n - m) ω_i + ψ_i)`` at every offset; the checker
    compares that sum with RoPE's scores at offsets -40…40, 500 and 4,095."""
    q8, k8 = np.array([0.5, -1.0, 2.0, 0.25, -0.75, 1.5, 1.0, -2.0]), randn(8, seed=3).numpy()
    cases = [
        Case((np.array([1.0, 0.0]), np.array([1.0, 0.0])), "d = 2, q = k = (1, 0): the score is "
             "cos Δ", expected=np.cos(_OFFSETS * 1.0)),
        Case((np.array([1.0, 0.0]), np.array([0.0, 1.0])), "d = 2, q = (1, 0), k = (0, 1): the "
             "score is -sin Δ, so k's angle enters the phase", expected=-np.sin(_OFFSETS * 1.0)),
        Case((q8, q8), "d = 8, q = k: every phase is 0 (notebook 15's curve)"),
        Case((q8, k8), "d = 8, q ≠ k: a phase per pair"),
        Case((k8, q8), "d = 8, q and k swapped: the phases change sign"),
        Case((q8, k8, 100.0), "another base"),
    ]
    return check_function(_scores_from_terms(func), cases=cases,
                          reference=lambda q, k, base=10000.0: _rope_scores(q, k, base),
                          name="rope_score_terms", rtol=1e-9, atol=1e-9)


# -- Exercise 3 (debug): top-p with an off-by-one ---------------------------------------------


def top_p_given(logits: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    """Exercise 3's function with its bug (kept here so the notebook and the tests share it)."""
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    z = logits / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.argsort(-p, kind="stable")
    total = np.cumsum(p[order])                  # the total up to and including each token
    keep = np.zeros(len(p), dtype=bool)
    keep[order[total <= top_p]] = True
    out = np.where(keep, p, 0.0)
    return out / out.sum()


def _top_p_probs(logits: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    return sampling.filter_probs(torch.from_numpy(logits), temperature, top_p=top_p).numpy()


_NUMPY_LIBRARY = {"sampling": "course_utils.sampling", "filter_probs": "sampling.filter_probs",
                  "torch": "torch"}
_NUMPY_RULE = ("your code uses {name}, and the rule is NumPy only, without course_utils.sampling "
               "or torch: find the bug in the given function and fix it there")


def _library_module(value: object) -> str | None:
    """The name of the module of ``value`` when it is torch or course_utils.sampling (a module,
    a function or a class of theirs), else None."""
    if inspect.ismodule(value):
        module = value.__name__
    elif inspect.isroutine(value) or inspect.isclass(value):
        module = getattr(value, "__module__", None) or ""
    else:
        return None
    if module == "torch" or module.startswith("torch.") or module == sampling.__name__:
        return "torch" if module.startswith("torch") else "course_utils.sampling"
    return None


def _cell_value(cell: Any) -> object:
    """What a closure cell holds, None while it is empty."""
    try:
        return cell.cell_contents
    except ValueError:
        return None


def _numpy_only(func: Callable) -> Callable:
    """``func``, refused with :class:`RuleBroken` while the check runs when its code names
    ``torch``, ``sampling`` or ``filter_probs``, uses an alias of them (``import torch as tt``,
    ``from torch import softmax``), or calls ``sampling.filter_probs`` by a built name; a helper
    of such a name the learner wrote next to ``func`` is theirs and allowed."""
    inner = inspect.unwrap(func)
    scope = getattr(inner, "__globals__", {})
    # a name of the library is refused by refusing_library, with that name; here, other names
    values = [scope.get(name) for name in names_used(func) if name not in _NUMPY_LIBRARY]
    values += [_cell_value(cell) for cell in getattr(inner, "__closure__", None) or ()]
    values += list(getattr(inner, "__defaults__", None) or ())
    aliased = sorted({found for value in values if (found := _library_module(value))})
    checked = refusing_library(func, func, _NUMPY_LIBRARY, _NUMPY_RULE,
                               [(sampling, "filter_probs")])

    @wraps_answer(func)
    def run(*args: object) -> object:
        if aliased:
            raise RuleBroken(_NUMPY_RULE.format(name=aliased[0]))
        return checked(*args)

    return run


@exercise("debug")
def check_top_p(func: Callable) -> CheckResult:
    """``func(logits, temperature, top_p)``: the float64 distribution ``softmax(logits / T)``
    cut to the smallest set of most probable tokens whose total reaches ``top_p`` (never fewer
    than one) and renormalised; ValueError for ``top_p`` outside (0, 1]. In NumPy: code that uses
    ``torch`` or ``course_utils.sampling`` (by name, alias or a built name) is refused."""
    four = np.log(np.array([0.5, 0.1, 0.25, 0.15]))
    ordered = np.log(np.array([0.4, 0.3, 0.2, 0.1]))
    ten = np.array([1.2, -0.3, 2.5, 0.0, 0.7, -1.1, 1.9, 0.4, -2.0, 1.0])
    cases = [
        Case((np.log(np.array([0.9, 0.05, 0.05])), 1.0, 0.5), "a confident model: 0.9 alone "
             "passes top_p = 0.5, and that one token must stay", expected=np.array([1.0, 0, 0])),
        Case((four, 1.0, 0.8), "0.5 + 0.25 = 0.75 < 0.8: the 0.15 that crosses 0.8 stays",
             expected=np.array([0.5, 0.0, 0.25, 0.15]) / 0.9),
        Case((four, 1.0, 1.0), "top_p = 1 keeps everything"),
        Case((ordered, 3.0, 0.6), "temperature 3 first: the flatter distribution needs 3 tokens"),
        Case((ten, 0.5, 0.9), "ten logits, temperature 0.5, top_p 0.9"),
        Case((np.log(np.array([0.25, 0.5, 0.25])), 1.0, 0.5), "0.5 alone reaches top_p = 0.5 "
             "exactly: the next token's total before it is 0.5, not below, so it goes",
             expected=np.array([0.0, 1.0, 0.0])),
        Case((four, 1.0, 0.0), "top_p = 0 is not in (0, 1]: a ValueError", raises=ValueError),
        Case((four, 1.0, 1.5), "top_p = 1.5 is not in (0, 1]: a ValueError", raises=ValueError),
    ]
    return check_function(_numpy_only(func), cases=cases, reference=_top_p_probs,
                          name="top_p_probs", rtol=1e-9, atol=1e-12, no_warnings=True)


# -- Exercise 4 (constrain): grouped-query attention without copying K and V -----------------

_COPIES = {"repeat_interleave", "repeat", "expand", "expand_as", "broadcast_to", "tile", "cat",
           "concat", "concatenate", "stack", "hstack", "vstack", "index_select", "gather",
           "clone", "softmax_attention", "scaled_dot_product_attention", "broadcast_tensors",
           "__deepcopy__", "numpy", "tolist", "__setitem__", "copy_", "index_copy",
           "index_copy_", "index_put", "index_put_", "scatter"}
# products that contract k or v with q: their result may be larger than k without copying k
_CONTRACTIONS = {"einsum", "matmul", "__matmul__", "__rmatmul__", "bmm", "mm", "tensordot"}
_MATMULS = {"matmul", "__matmul__", "__rmatmul__"}
_HOW = ("Give the queries a group axis that k does not have, and let the product with k and v "
        "read each K/V head for the whole group.")
_VIEWS = {"__getitem__", "__get__", "transpose", "swapaxes", "unsqueeze", "squeeze", "permute",
          "view", "reshape", "flatten", "contiguous", "movedim", "select", "narrow"}


class _SharedHeads(torch.Tensor):
    """Keys or values whose heads must not be copied: a call that copies or repeats them, or an
    index that picks heads by a list, raises :class:`RuleBroken`."""

    def as_subclass(self, cls: type) -> torch.Tensor:  # type: ignore[override]
        raise RuleBroken("it calls `as_subclass` on k or v, which sheds the checker's watch: the "
                         f"rule is no copy of the K/V heads. {_HOW}")

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise RuleBroken("it turns k or v into a NumPy array, a copy of the K/V heads: the rule "
                         f"is no copy of the K/V heads. {_HOW}")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        if name in _COPIES:
            raise RuleBroken(f"it calls `{name}` on k or v: the rule is no copy of the K/V "
                             f"heads. {_HOW}")
        if name == "__getitem__" and len(args) > 1:
            index = args[1] if isinstance(args[1], tuple) else (args[1],)
            if any(isinstance(i, (list, torch.Tensor, np.ndarray)) for i in index):
                raise RuleBroken("it picks heads of k or v by a list of indices, which copies "
                                 f"them: the rule is no copy of the K/V heads. {_HOW}")
        shared = [t for t in _tensors(args, kwargs) if isinstance(t, _SharedHeads)]
        if name in _MATMULS and len(args) == 2:
            _refuse_broadcast_matmul(*args)
        result = super().__torch_function__(func, types, args, kwargs or {})
        if (name not in _CONTRACTIONS and isinstance(result, torch.Tensor)
                and result.numel() > max((t.numel() for t in shared), default=result.numel())):
            raise RuleBroken(
                f"`{name}` spreads k or v over {tuple(result.shape)}, more numbers than k or v "
                "hold: an element-by-element product writes k or v out again (over the group or "
                f"the query axis). Multiply with `@` or `einsum`, which read k as it is. {_HOW}")
        if name in _VIEWS or not isinstance(result, torch.Tensor):
            return result  # a view of k or v stays watched
        if all(isinstance(t, _SharedHeads) for t in _tensors(args, kwargs)):
            return result  # k + 0, k.detach(), k.float(): still k's heads, still watched
        return _plain(result)  # a product with q is an ordinary tensor


def _plain(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` as an ordinary tensor, no longer watched (the checker's own `as_subclass`)."""
    return torch.Tensor.as_subclass(tensor, torch.Tensor)


def _refuse_broadcast_matmul(a: Any, b: Any) -> None:
    """``a @ b`` with k or v of length 1 on a batch axis where the other operand is longer: PyTorch
    expands k or v to the other's batch shape and copies it before the product."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return
    for mine, other in ((a, b), (b, a)):
        if not isinstance(mine, _SharedHeads) or mine.dim() < 3:
            continue
        batch, other_batch = mine.shape[:-2], other.shape[:-2]
        pad = max(len(other_batch) - len(batch), 0)
        padded = (1,) * pad + tuple(batch)
        for axis, size in enumerate(other_batch[::-1]):
            if padded[::-1][axis] == 1 and size > 1:
                raise RuleBroken(
                    f"it multiplies k or v of batch shape {tuple(batch)} with `@` against "
                    f"{tuple(other_batch)}: `@` expands the axis of length 1 and copies k or v "
                    f"G times inside PyTorch. {_HOW}")


def _tensors(*values: Any) -> list[torch.Tensor]:
    """The tensors among ``values``, looking inside lists, tuples and dicts."""
    found: list[torch.Tensor] = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(_tensors(*value))
        elif isinstance(value, dict):
            found.extend(_tensors(*value.values()))
    return found


def _without_copies(func: Callable) -> Callable:
    @functools.wraps(func)
    def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> Any:
        out = func(q, k.as_subclass(_SharedHeads), v.as_subclass(_SharedHeads))
        if not isinstance(out, torch.Tensor):
            return out
        out = _plain(out)
        _refuse_unscaled(out, q, k, v)
        return out

    return run


def _refuse_unscaled(out: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                     v: torch.Tensor) -> None:
    """Raise :class:`RuleBroken` when ``out`` is attention with the scores not divided by √d."""
    right = _gqa(q, k, v)
    if out.shape != right.shape or out.dtype != right.dtype:
        return
    unscaled = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True,
                                                                scale=1.0)
    if (torch.allclose(out, unscaled, rtol=1e-9, atol=1e-12)
            and not torch.allclose(out, right, rtol=1e-9, atol=1e-12)):
        raise RuleBroken("these are the unscaled scores: divide QKᵀ by √d before the softmax")


def _gqa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)


@exercise("constrain")
def check_gqa_attention(func: Callable) -> CheckResult:
    """``func(q, k, v)``: grouped-query attention (no mask), q ``(B, H_q, N, d)``, k and v
    ``(B, H_kv, N, d)``, query head ``i`` reading K/V head ``i // (H_q / H_kv)``, without
    copying or repeating the K/V heads."""
    cases = [
        Case((randn(1, 4, 5, 8, seed=1), randn(1, 2, 5, 8, seed=2), randn(1, 2, 5, 8, seed=3)),
             "4 query heads, 2 K/V heads: query heads 0, 1 read K/V head 0"),
        Case((randn(2, 6, 3, 4, seed=4), randn(2, 3, 3, 4, seed=5), randn(2, 3, 3, 4, seed=6)),
             "a batch of 2, 6 query heads in 3 groups"),
        Case((randn(1, 8, 4, 4, seed=7), randn(1, 1, 4, 4, seed=8), randn(1, 1, 4, 4, seed=9)),
             "multi-query: one K/V head for 8 query heads"),
        Case((randn(1, 2, 6, 4, seed=10), randn(1, 2, 6, 4, seed=11), randn(1, 2, 6, 4, seed=12)),
             "as many K/V heads as query heads: ordinary multi-head attention"),
    ]
    return check_function(_without_copies(func), cases=cases, reference=_gqa,
                          name="gqa_attention", rtol=1e-9, atol=1e-12)


# -- Exercise 5 (extend): "NTK-aware" scaling, a new base ----------------------------------------


def _ntk(head_dim: int, base: float, factor: float) -> torch.Tensor:
    """The frequencies with the base ``b' = b · s^(d / (d - 2))`` (Peng et al. 2023, YaRN, 3.1)."""
    return positional.rope_frequencies(head_dim, base * factor ** (head_dim / (head_dim - 2)))


def _ntk_diagnosed(func: Callable) -> Callable:
    """``func`` with the mistakes a learner makes named: position interpolation's ω/s, pair 0
    moved, the base b·s, wavelengths instead of frequencies."""

    @functools.wraps(func)
    def run(head_dim: int, base: float, factor: float) -> Any:
        got = func(head_dim, base, factor)
        values = got.detach().cpu().numpy() if isinstance(got, torch.Tensor) else got
        try:
            values = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            return got
        if values.shape != (head_dim // 2,) or not np.all(np.isfinite(values)):
            return got
        omega = positional.rope_frequencies(head_dim, base).numpy()
        expected = _ntk(head_dim, base, factor).numpy()

        def near(other: np.ndarray) -> bool:
            return bool(np.allclose(values, other, rtol=1e-6, atol=0))

        if near(expected):
            return got  # right, or right but for the dtype or the rounding: compare says which

        slowest = omega[-1] / values[-1]
        if near(2 * np.pi / expected) or near(2 * np.pi / omega):
            raise RuleBroken("these are wavelengths 2π/ω_i, in positions; return the "
                             "frequencies ω_i themselves")
        if near(omega / factor):
            raise RuleBroken("these are position interpolation's frequencies ω_i / s: every "
                             "pair slowed, pair 0 too. NTK-aware scaling changes the base only, "
                             "and with any base pair 0 keeps ω_0 = b'^0 = 1")
        if not math.isclose(values[0], 1.0, rel_tol=1e-9):
            raise RuleBroken(f"pair 0's frequency is {values[0]:.6g}, not 1: ω_i = b'^(-2i/d) "
                             "with i = 0, 1, …, d/2 − 1, and b'^0 = 1 for any base")
        if near(positional.rope_frequencies(head_dim, base * factor).numpy()):
            raise RuleBroken(f"the base b·s slows the slowest pair by s^((d − 2)/d) = "
                             f"{factor ** ((head_dim - 2) / head_dim):.6g}, not by s = {factor:g}: "
                             "solve b'^(-(d − 2)/d) = b^(-(d − 2)/d) / s for b'")
        if not math.isclose(slowest, factor, rel_tol=1e-9):
            raise RuleBroken(f"the slowest pair (i = d/2 − 1) turns {slowest:.6g} times more "
                             f"slowly than with b, not s = {factor:g} times")
        return got

    return run


@exercise("extend")
def check_ntk_frequencies(func: Callable) -> CheckResult:
    """``func(head_dim, base, factor)``: the ``head_dim / 2`` RoPE frequencies ``b'^(-2i/d)``
    (float64 tensor) with the base ``b'`` for which the slowest pair turns ``factor`` times more
    slowly than with ``base`` and pair 0 is unchanged ("NTK-aware" scaling)."""
    cases = [
        Case((128, 500_000.0, 8.0), "Llama 3's heads: d = 128, b = 500,000, s = 8"),
        Case((64, 10_000.0, 4.0), "d = 64, b = 10,000, s = 4"),
        Case((16, 10_000.0, 2.0), "d = 16, b = 10,000, s = 2"),
        Case((4, 100.0, 3.0), "d = 4: two pairs, the second slowed exactly 3 times"),
        Case((32, 10_000.0, 1.0), "s = 1: nothing changes"),
    ]
    return check_function(_ntk_diagnosed(func), cases=cases, reference=_ntk,
                          name="ntk_frequencies", rtol=1e-9, atol=0.0, exact_dtype=True)
