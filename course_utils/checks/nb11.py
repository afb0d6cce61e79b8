"""Checkers for notebook 11 (multi-head attention)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from course_utils import attention
from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    randn,
    wraps_answer,
)
from course_utils.checks.nb10 import refusing_library

# The course's own functions, held here: while the learner's code runs they are replaced by
# functions that refuse (see _writes_own_heads), and the reference still needs them.
_SPLIT_HEADS, _MERGE_HEADS = attention.split_heads, attention.merge_heads


def _mha(x, w_q, w_k, w_v, w_o, n_heads, *, plain_reshape=False, scale_by_d_model=False,
         w_o_per_head=False, over_queries=False, plain_merge=False):
    """Multi-head self-attention without biases, or one of the named mistakes."""
    b, n, d_model = x.shape
    d_k = d_model // n_heads

    def split(t):
        if plain_reshape:
            return t.reshape(b, n_heads, n, d_k)
        return _SPLIT_HEADS(t, n_heads)

    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_model if scale_by_d_model else d_k)
    z = torch.softmax(scores, dim=-2 if over_queries else -1) @ v
    if w_o_per_head:  # W^O's first d_k rows applied to every head, then the heads summed
        return (z @ w_o[:d_k]).sum(1)
    if plain_merge:  # (B, h, N, d_k) reshaped to (B, N, d_model) without the transpose back
        return z.reshape(b, n, d_model) @ w_o
    return _MERGE_HEADS(z) @ w_o


_MISTAKES = {
    "plain_reshape": "the heads are split by a plain reshape to (B, h, N, d_k), without the "
                     "transpose, so each 'head' mixes features of several tokens (section 2)",
    "scale_by_d_model": "the scores are divided by √d_model; each head's dot products have d_k "
                        "terms, so the scale is √d_k",
    "plain_merge": "the heads are merged by a plain reshape of (B, h, N, d_k) to "
                   "(B, N, d_model), without first transposing back to (B, N, h, d_k), so each "
                   "token's row gathers pieces of other tokens (section 2's merge)",
    "over_queries": "the softmax runs over the queries: Q Kᵀ has one row per query, and the "
                        "softmax must run along each row (over the keys)",
}


def _named_mistakes(func: Callable) -> Callable:
    """``func`` itself; an output that equals a known mistake's output is told which mistake."""
    @wraps_answer(func)
    def wrapper(x, w_q, w_k, w_v, w_o, n_heads):
        got = func(x, w_q, w_k, w_v, w_o, n_heads)
        right = _mha(x, w_q, w_k, w_v, w_o, n_heads)
        if isinstance(got, torch.Tensor) and got.shape == right.shape and not torch.allclose(
                got, right, rtol=1e-9, atol=1e-12):
            found = [why for flag, why in _MISTAKES.items()
                     if torch.allclose(got, _mha(x, w_q, w_k, w_v, w_o, n_heads, **{flag: True}),
                                       rtol=1e-9, atol=1e-12)]
            both = _mha(x, w_q, w_k, w_v, w_o, n_heads, plain_reshape=True,
                        scale_by_d_model=True)
            if torch.allclose(got, both, rtol=1e-9, atol=1e-12):
                found = [_MISTAKES["plain_reshape"], _MISTAKES["scale_by_d_model"]]
            if found:
                raise RuleBroken("; and ".join(found))
        return got
    return wrapper


def compare_with_heads_loop(func: Callable, heads: tuple[int, ...] = (1, 2)) -> None:
    """Print, for each number of heads in ``heads``, whether ``func(x, w_q, w_k, w_v, w_o,
    n_heads)`` equals the per-head computation of section 1 on random float64 inputs
    (B = 2, N = 5, d_model = 8)."""
    x = randn(2, 5, 8, seed=70)
    w_q, w_k, w_v, w_o = (randn(8, 8, seed=71 + i, scale=8**-0.5) for i in range(4))
    for n_heads in heads:
        same = torch.allclose(func(x, w_q, w_k, w_v, w_o, n_heads),
                              _mha(x, w_q, w_k, w_v, w_o, n_heads))
        print(f"n_heads = {n_heads}: equal to the per-head computation: {same}")


_LIBRARY = {
    "split_heads": "attention.split_heads",
    "merge_heads": "attention.merge_heads",
    "softmax_attention": "attention.softmax_attention",
    "scaled_dot_product_attention": "F.scaled_dot_product_attention",
    "compare_with_heads_loop": "nb11.compare_with_heads_loop",
    "multi_head_attention_forward": "F.multi_head_attention_forward",
    "MultiheadAttention": "nn.MultiheadAttention",
}
_LIBRARY_RULE = ("your code uses {name}, which does a step the exercise asks you to write: split "
                 "the heads with reshape and transpose, compute each head's attention with its "
                 "own scale, and merge the heads back, yourself")


def _writes_own_heads(func: Callable, run: Callable) -> Callable:
    """``run``, refused with :class:`RuleBroken` when ``func``'s code names, aliases or calls one
    of the course's head or attention functions or PyTorch's multi-head attention (a helper of
    that name the learner wrote is theirs)."""
    owners = [(attention, "split_heads"), (attention, "merge_heads"),
              (attention, "softmax_attention"), (F, "scaled_dot_product_attention"),
              (F, "multi_head_attention_forward"), (torch.nn, "MultiheadAttention")]
    return refusing_library(func, run, _LIBRARY, _LIBRARY_RULE, owners)


@exercise("debug")
def check_multi_head_attention(func: Callable) -> CheckResult:
    """``func(x, w_q, w_k, w_v, w_o, n_heads)``: multi-head self-attention without biases,
    ``concat(head_1, …, head_h) W^O`` with ``head_i = softmax(Q_i K_iᵀ / √d_k) V_i`` and
    ``Q = x W^Q`` split into heads; x (B, N, d_model), every W (d_model, d_model). Code that names
    the course's ``split_heads``, ``merge_heads`` or ``softmax_attention`` (or
    ``F.scaled_dot_product_attention``, ``F.multi_head_attention_forward``,
    ``nn.MultiheadAttention``) is refused, under any name."""
    def weights(d: int, seed: int) -> tuple[torch.Tensor, ...]:
        return tuple(randn(d, d, seed=seed + i, scale=d**-0.5) for i in range(4))

    cases = [
        Case((randn(1, 3, 4, seed=20), *weights(4, 21), 1), "one head: plain attention"),
        Case((randn(2, 5, 8, seed=30), *weights(8, 31), 2), "two heads, d_k = 4"),
        Case((randn(2, 4, 12, seed=40), *weights(12, 41), 3), "three heads, d_k = 4"),
        Case((randn(1, 6, 8, seed=50), *weights(8, 51), 8), "eight heads of d_k = 1"),
    ]
    return check_function(_writes_own_heads(func, _named_mistakes(func)), cases=cases,
                          reference=_mha,
                          name="multi_head_attention", rtol=1e-9, atol=1e-12)


@exercise("predict")
def check_heads_match_projections(answer: Any) -> CheckResult:
    """The N at which Q_i K_iᵀ and A_i V_i over all heads (2 N² d_model multiply-adds) cost as
    much as the four projections (4 N d_model²), d_model = 512, h = 8: N = 2 d_model = 1024."""
    d_model, h = 512, 8
    d_k = d_model // h
    expected = 2 * d_model
    label = "N at which the heads cost as much as the projections, d_model = 512, h = 8"
    explanation = ("the four projections are (N, 512) by (512, 512) products, 4 · N · 512² "
                   "multiply-adds; each head's Q_i K_iᵀ takes N · d_k · N and A_i V_i N · N · d_v, "
                   "so all heads take 2 · h · N² · d_k = 2 · N² · 512. They are equal at "
                   "N = 2 · 512 = 1024, whatever h is (h = 16 gives the same): longer sentences "
                   "spend more on the heads than on the projections")
    mistakes = {
        4 * d_model: "where Q_i K_iᵀ alone costs as much as the projections; A_i V_i costs as "
                     "much again",
        3 * d_model // 2: "the crossing with three projections; the concatenated heads times W^O "
                          "is a fourth",
        2 * d_model * h: "the crossing for one head's products; the question sums over all "
                         "h = 8 heads",
        2 * d_model // h: "the crossing with each head's dot products d_model long; they have "
                          "d_k = d_model / h = 64 terms",
        6 * d_model: "the crossing with Q_i K_iᵀ alone and three projections; A_i V_i and W^O "
                     "both count",
    }
    assert d_k * h == d_model
    hint = ("write both counts as formulas in N: four (N, d_model) by (d_model, d_model) "
            "products, and h heads of Q_i K_iᵀ and A_i V_i; then set them equal")
    return check_number(answer, expected, name="heads_match_projections", label=label,
                        explanation=explanation, rtol=0.02, hint=hint, mistakes=mistakes)


def _attention_parameters(d_model: int, n_heads: int, d_head: int, bias: bool = True) -> int:
    width = n_heads * d_head  # all heads side by side
    return 4 * d_model * width + (3 * width + d_model if bias else 0)


@exercise("extend")
def check_attention_parameters(func: Callable) -> CheckResult:
    """``func(d_model, n_heads, d_head, bias=True)``: the parameters of multi-head attention whose
    heads have a width d_head chosen freely: W^Q, W^K, W^V (d_model, h·d_head), W^O
    (h·d_head, d_model) and, if ``bias``, a bias the length of each one's output."""
    cases = [
        Case((8, 2, 4), "d_head = d_model / h: section 5's 4·64 + 4·8 = 288", expected=288),
        Case((1024, 128, 128), "T5-11B: h·d_head = 16,384 > d_model, no biases",
             kwargs={"bias": False}, expected=67_108_864),
        Case((512, 16, 64), "16 heads of 64 on d_model = 512: about twice the base model's"),
        Case((768, 4, 32), "h·d_head = 128 < d_model = 768"),
        Case((768, 4, 32), "the same without biases", kwargs={"bias": False}),
        Case((6, 1, 1), "one head of width 1"),
    ]
    return check_function(_named_count_mistakes(func), cases=cases,
                          reference=_attention_parameters, name="attention_parameters", rtol=0,
                          atol=0)


def _count_with_biases(d_model: int, n_heads: int, d_head: int, bias: bool,
                       in_bias: int, out_bias: int) -> int:
    width = n_heads * d_head
    return 4 * d_model * width + (3 * in_bias + out_bias if bias else 0)


def _named_count_mistakes(func: Callable) -> Callable:
    """``func``, with a wrong count that matches a named mistake about the biases explained."""

    @wraps_answer(func)
    def counted(d_model: int, n_heads: int, d_head: int, bias: bool = True) -> object:
        got = func(d_model, n_heads, d_head, bias=bias)
        width = n_heads * d_head
        right = _attention_parameters(d_model, n_heads, d_head, bias)
        if not bias or width == d_model or got == right:
            return got
        mistakes = {
            _count_with_biases(d_model, n_heads, d_head, bias, width, width):
                f"the weights are right, but W^O's bias was counted with h·d_head = {width} "
                f"entries: W^O's output has d_model = {d_model} features, so its bias has "
                f"{d_model}",
            _count_with_biases(d_model, n_heads, d_head, bias, d_model, d_model):
                f"the weights are right, but the biases of W^Q, W^K and W^V were counted with "
                f"d_model = {d_model} entries each: each is as long as its projection's output, "
                f"h·d_head = {width}",
            _count_with_biases(d_model, n_heads, d_head, bias, d_model, width):
                "the weights are right, but the bias lengths are swapped: W^Q, W^K and W^V "
                f"output h·d_head = {width} features, W^O outputs d_model = {d_model}",
        }
        if isinstance(got, (int, np.integer)) and int(got) in mistakes:
            raise RuleBroken(mistakes[int(got)])
        return got

    return counted
