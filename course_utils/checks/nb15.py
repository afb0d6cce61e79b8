"""Checkers for notebook 15: KV cache, RoPE's score, top-p, grouped-query attention, NTK RoPE."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from course_utils import positional, sampling
from course_utils.checks import Case, CheckResult, check_function, check_number, exercise, randn
from course_utils.checks.rules import Rule

_PER_TOKEN, _MACHINE, _WEIGHTS, _USERS = 2 * 80 * 8 * 128 * 2, 8 * 80 * 2**30, 2 * 70.6e9, 45
_OFFSETS = np.array([*range(-40, 41), 500, 4095])  # Exercise 2's offsets n − m


def _tokens(machine: float = _MACHINE, weights: float = _WEIGHTS, per: float = 1.0) -> int:
    return math.floor((machine - weights) / (_USERS * _PER_TOKEN * per))


@exercise("predict")
def check_kv_cache_70b(answer: Any, *, show_answer: bool = False) -> CheckResult:
    """``answer``: the longest context (whole tokens) of 45 conversations on 8 × 80 GiB beside
    Llama 3.1 70B's bfloat16 weights: ⌊(640 GiB − 2·70.6·10⁹ B) / (45 · 2·80·8·128·2 B)⌋."""
    left, expected = _MACHINE - _WEIGHTS, _tokens()
    explanation = (
        f"Per token: 2 (a key and a value) × 80 layers × 8 K/V heads × 128 numbers × 2 bytes = "
        f"{_PER_TOKEN:,} bytes, in each of {_USERS} caches. The weights take 2 × 70.6·10⁹ bytes "
        f"of the 640 × 2³⁰, leaving {left:,.0f} ({left / 2**30:.1f} GiB); divided by {_USERS} × "
        f"{_PER_TOKEN:,}: {left / (_USERS * _PER_TOKEN):,.2f}, so {expected:,} whole tokens each.")
    mistakes: dict[float, str] = {  # each wrong route rounded down, as a learner would
        expected + 1: "that rounds up (as round() does here): the last token would not fit.",
        _tokens(weights=0): "that is what 640 GiB holds with no weights: subtract them first.",
        _tokens(per=8): "that counts the 64 query heads; only the 8 K/V heads are cached.",
        _tokens(per=1 / _USERS): f"that is one conversation's context; {_USERS} share the memory.",
        _tokens(per=1 / 2): "that halves a token's bytes: a key and a value, 2 bytes a number.",
        _tokens(weights=141.2 * 2**30): "that reads the weights' 141.2·10⁹ bytes as 141.2 GiB; "
                                        "a GiB is 2³⁰ bytes, not 10⁹.",
        _tokens(weights=_WEIGHTS / 2): "that counts 1 byte per weight; a weight takes 2 bytes.",
        _tokens(machine=640e9): "that reads 80 GiB as 80·10⁹ bytes; a GiB is 2³⁰ bytes."}
    atol = 0.5  # whole tokens: the answer itself, not a number near it
    if isinstance(answer, (float, np.floating)) and math.isfinite(answer) and answer % 1:
        atol, mistakes[float(answer)] = 0.0, ("that is not a whole number of tokens: a token is "
                                             "cached whole or not at all, so round down.")
    return check_number(answer, expected, name="kv_cache_70b", rtol=0.0, atol=atol,
                        label="the longest context of 45 conversations beside Llama 3.1 70B",
                        explanation=explanation, mistakes=mistakes, show_answer=show_answer,
                        hint="count the bytes the weights leave, then divide by the bytes one "
                             "token takes in all 45 caches (section 5's formula).")


def _scores(terms: Callable) -> Callable:
    """(ξ, Σ_i ξ_i cos(Δ ω_i + ψ_i) at the offsets Δ of ``_OFFSETS``) from ``terms(q, k)``."""
    def scores(q: np.ndarray, k: np.ndarray, base: float = 10000.0) -> tuple:
        amplitude, phase = (np.asarray(x) if isinstance(x, list) else x for x in terms(q, k))
        omega = base ** (-np.arange(0, len(q), 2) / len(q))
        waves = np.asarray(amplitude) * np.cos(_OFFSETS[:, None] * omega + np.asarray(phase))
        return amplitude, waves.sum(-1)
    return scores


def _rope(q: np.ndarray, k: np.ndarray, base: float = 10000.0) -> tuple:
    """(‖q⁽ⁱ⁾‖‖k⁽ⁱ⁾‖ per pair, (R_m q)·(R_n k) at the offsets n − m, with m = 7)."""
    n = len(_OFFSETS)
    rq, rk = (positional.apply_rope(torch.from_numpy(x).expand(n, -1), at, base)
              for x, at in ((q, [7] * n), (k, 7 + _OFFSETS)))
    return np.hypot(q[0::2], q[1::2]) * np.hypot(k[0::2], k[1::2]), (rq * rk).sum(-1).numpy()


def _terms(q: np.ndarray, k: np.ndarray, phase_sign: float = 1.0, flip: bool = False,
           half: bool = False) -> tuple:
    h = len(q) // 2  # half: the pairs (i, i + d/2) of the half layout, not RoPE's (2i, 2i + 1)
    pair_q, pair_k = ((x[:h] + 1j * x[h:]) if half else (x[0::2] + 1j * x[1::2]) for x in (q, k))
    product = np.conj(pair_q) * pair_k
    amplitude, phase = np.abs(product), phase_sign * np.angle(product)
    return (-amplitude, phase + np.pi) if flip else (amplitude, phase)


@exercise("derive")
def check_rope_score_terms(func: Callable) -> CheckResult:
    """``func(q, k)`` = (ξ ≥ 0, ψ), one per pair, with ``(R_m q)·(R_n k) = Σ_i ξ_i cos((n − m) ω_i
    + ψ_i)``: ξ and the sum at offsets -40…40, 500 and 4,095 are compared with RoPE's."""
    q8, k8 = np.array([0.5, -1.0, 2.0, 0.25, -0.75, 1.5, 1.0, -2.0]), randn(8, seed=3).numpy()
    one, up = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    cases = [Case((one, one), "d = 2, q = k = (1, 0): the score is cos Δ"),
             Case((one, up), "d = 2, q = (1, 0), k = (0, 1): the score is -sin Δ, so k's angle "
                  "enters the phase"), Case((q8, k8), "d = 8, q ≠ k: a phase per pair"),
             Case((q8, q8), "d = 8, q = k: every phase is 0"),
             Case((k8, q8), "d = 8, q and k swapped: the phases change sign"),
             Case((q8, k8, 100.0), "another base")]
    mistakes = {"the phases have the wrong sign: rotating k by Δω turns k's angle, so ψ_i is k's "
        "angle minus q's": _scores(lambda q, k: _terms(q, k, -1.0)),
        "every phase is 0, which holds only where each pair of k points the way q's does":
            _scores(lambda q, k: _terms(q, k, 0.0)),
        "an amplitude is negative: an amplitude is a product of lengths, never negative; put the "
        "sign into the phase (ψ + π)": _scores(lambda q, k: _terms(q, k, flip=True)),
        "it pairs entry i with entry i + d/2, the half layout of Hugging Face's code; the "
        "exercise's pair i is entries 2i and 2i + 1, as section 2 rotates them":
            _scores(lambda q, k: _terms(q, k, half=True))}
    return check_function(_scores(func), cases=cases, reference=_rope, name="rope_score_terms",
                          names=("amplitudes", "scores"), rtol=1e-9, atol=1e-9, mistakes=mistakes)


def top_p_given(logits: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    """Exercise 3's function with its bug, as the notebook shows it (here without its warning)."""
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    z = logits / temperature
    q = np.exp(z - z.max())
    q /= q.sum()
    order = np.argsort(-q, kind="stable")        # most probable first; "stable": ties keep order
    total = np.cumsum(q[order])                  # the total up to and including each token
    keep = np.zeros(len(q), dtype=bool)
    keep[order[total <= top_p]] = True
    out = np.where(keep, q, 0.0)
    with np.errstate(invalid="ignore"):  # 0 / 0
        return out / out.sum()


@exercise("debug")
def check_top_p(func: Callable) -> CheckResult:
    """``func(logits, temperature, top_p)``: float64 ``softmax(logits / T)`` cut to the fewest
    most probable tokens whose total reaches ``top_p``, renormalised; ValueError outside (0, 1]."""
    four, log = np.log(np.array([0.5, 0.1, 0.25, 0.15])), np.log
    cases = [Case((log(np.array([0.9, 0.05, 0.05])), 1.0, 0.5), "a confident model: 0.9 alone "
                  "passes top_p = 0.5, and that one token must stay", expected=np.eye(3)[0]),
             Case((four, 1.0, 0.8), "0.5 + 0.25 = 0.75 < 0.8: the 0.15 that crosses 0.8 stays",
                  expected=np.array([0.5, 0.0, 0.25, 0.15]) / 0.9),
             Case((log(np.array([0.4, 0.3, 0.2, 0.1])), 3.0, 0.6), "temperature 3 first: the "
                  "flatter distribution needs 3 tokens"),
             Case((np.array([1.2, -0.3, 2.5, 0.0, 0.7, -1.1, 1.9, 0.4, -2.0, 1.0]), 0.5, 0.9),
                  "ten logits, T = 0.5, top_p 0.9"), Case((four, 1.0, 1.0), "top_p = 1 keeps all"),
             Case((log(np.array([0.25, 0.5, 0.25])), 1.0, 0.5), "0.5 alone reaches top_p = 0.5 "
                  "exactly: the next token's total before it is 0.5, not below, so it goes",
                  expected=np.eye(3)[1]),
             Case((four, 1.0, 0.0), "top_p = 0 is not in (0, 1]: a ValueError", raises=ValueError),
             Case((four, 1.0, 1.5), "top_p = 1.5 is not in (0, 1]: ValueError", raises=ValueError)]
    return check_function(func, cases=cases, name="top_p_probs", rtol=1e-9, atol=1e-12,
                          reference=lambda z, t, p: sampling.filter_probs(
                              torch.from_numpy(z), t, top_p=p).numpy(),
                          no_warnings=True, shortcuts=("filter_probs",), mistakes={
                              "still the bug: these are top_p_given's numbers (which tokens does "
                              "`total <= top_p` keep?)": top_p_given})


def _gqa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, interleaved: bool = False,
         scale: float | None = None) -> torch.Tensor:
    """softmax(q kᵀ · scale) v, query head i reading K/V head i // G (i % H_kv if interleaved)."""
    if interleaved:
        order = torch.arange(q.shape[1]).view(-1, k.shape[1]).T.flatten()  # the heads it groups
        return _gqa(q[:, order], k, v, scale=scale)[:, order.argsort()]
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True, scale=scale)


@exercise("constrain")
def check_gqa_attention(func: Callable) -> CheckResult:
    """``func(q (B, H_q, N, d), k, v (B, H_kv, N, d))``: attention (no mask), query head i reading
    K/V head i // (H_q / H_kv). The rule, by a scan of the code: nothing that copies K/V heads."""
    shapes = {(1, 4, 2, 5, 8): "4 query heads, 2 K/V heads: query heads 0, 1 read K/V head 0",
              (2, 6, 3, 3, 4): "a batch of 2, 6 query heads in 3 groups",
              (1, 8, 1, 4, 4): "multi-query: one K/V head for 8 query heads",
              (1, 2, 2, 6, 4): "as many K/V heads as query heads: ordinary multi-head attention"}
    cases = [Case(tuple(randn(b, heads, n, d, seed=3 * s + j) for j, heads in enumerate((h, g, g))),
                  label) for s, ((b, h, g, n, d), label) in enumerate(shapes.items())]
    no_copy = Rule(says="no copy of the K/V heads: give the query heads a group axis that k and v "
                        "do not have, and let broadcasting (einsum, or @) share each K/V head",
                   names=set("repeat_interleave repeat tile expand expand_as broadcast_to "
                             "broadcast_tensors cat concat concatenate stack hstack vstack "
                             "index_select gather scaled_dot_product_attention".split()))
    mistakes = {"these are the unscaled scores: divide QKᵀ by √d before the softmax":
            lambda q, k, v: _gqa(q, k, v, scale=1.0),
        "the query heads are grouped 0, 1, 0, 1, …: the G heads that share a K/V head are "
        "consecutive: split the head axis as (H_kv, G)": lambda q, k, v: _gqa(q, k, v, True)}
    return check_function(func, cases=cases, reference=_gqa, name="gqa_attention", rtol=1e-9,
                          atol=1e-12, rule=no_copy, mistakes=mistakes)


def _ntk(d: int, b: float, s: float, power: float | None = None, first: int = 0) -> torch.Tensor:
    """b'^(-2i/d), b' = b · s^(d / (d − 2)) (YaRN 3.1), for i = first, …, first + d/2 − 1."""
    i = torch.arange(first, first + d // 2, dtype=torch.float64)
    return (b * s ** (d / (d - 2) if power is None else power)) ** (-2 * i / d)


@exercise("extend")
def check_ntk_frequencies(func: Callable) -> CheckResult:
    """``func(head_dim, base, factor)``: the d/2 frequencies b'^(-2i/d) (float64 tensor) with the
    base b' that slows the slowest pair ``factor`` times and keeps pair 0."""
    cases = [Case((128, 500_000.0, 8.0), "Llama 3's heads: d = 128, b = 500,000, s = 8"),
             Case((64, 1e4, 4.0), "d = 64, b = 10⁴, s = 4"), Case((16, 1e4, 2.0), "d = 16, s = 2"),
             Case((4, 100.0, 3.0), "d = 4: two pairs, the second slowed exactly 3 times"),
             Case((32, 1e4, 1.0), "s = 1: nothing changes")]
    mistakes = {"these are wavelengths 2π/ω_i, in positions: return the frequencies ω_i":
            lambda d, b, s: 2 * math.pi / _ntk(d, b, s),
        "these are position interpolation's ω_i / s: pair 0 slowed too; NTK-aware scaling changes "
        "the base only, and b'^0 = 1 for any base": lambda d, b, s: _ntk(d, b, 1.0) / s,
        "pair 0's frequency is not 1: ω_i = b'^(-2i/d) with i = 0, 1, …, d/2 − 1, and b'^0 = 1 "
        "for any base": lambda d, b, s: _ntk(d, b, s, first=1),
        "the base b·s slows the slowest pair by s^((d − 2)/d), not by s: solve "
        "b'^(-(d − 2)/d) = b^(-(d − 2)/d) / s for b'": lambda d, b, s: _ntk(d, b, s, power=1.0),
        "the slowest pair (i = d/2 − 1) turns s^(((d − 2)/d)²) times slower than with b, not s "
        "times: s's exponent is upside down": lambda d, b, s: _ntk(d, b, s, power=(d - 2) / d)}
    return check_function(func, cases=cases, reference=_ntk, name="ntk_frequencies", rtol=1e-9,
                          atol=0.0, exact_dtype=True, mistakes=mistakes)
