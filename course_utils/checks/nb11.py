"""Checkers for notebook 11 (multi-head attention)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from course_utils.checks import Case, CheckResult, check_function, check_number, exercise, randn


def _mha(x, w_q, w_k, w_v, w_o, n_heads, split=True, by_d_model=False, dim=-1, merge=True,
         out="W", transposed=False):
    """``concat(head_1, …, head_h) W^O``, ``head_i = softmax(Q_i K_iᵀ / √d_k) V_i``; or a mistake:
    a plain reshape to split or to merge the heads, √d_model, the softmax over queries (dim -2),
    W^O transposed or left out (``out``), all four matrices used transposed."""
    if transposed:
        w_q, w_k, w_v, w_o = w_q.T, w_k.T, w_v.T, w_o.T
    (b, n, d_model), d_k = x.shape, x.shape[-1] // n_heads
    q, k, v = (t.reshape(b, n, n_heads, d_k).transpose(1, 2) if split else
               t.reshape(b, n_heads, n, d_k) for t in (x @ w_q, x @ w_k, x @ w_v))
    scale = (d_model if by_d_model else d_k) ** 0.5
    z = torch.softmax(q @ k.transpose(-2, -1) / scale, dim) @ v
    z = (z.transpose(1, 2) if merge else z).reshape(b, n, d_model)
    return {"W": z @ w_o, "Wᵀ": z @ w_o.T, "none": z}[out]


def compare_with_heads_loop(func: Callable, heads: tuple[int, ...] = (1, 2)) -> None:
    """Print, for each number of heads, whether ``func(x, w_q, w_k, w_v, w_o, n_heads)`` equals
    the per-head computation of section 1 on random float64 inputs (B = 2, N = 5, d_model = 8)."""
    x = randn(2, 5, 8, seed=70)
    w_q, w_k, w_v, w_o = (randn(8, 8, seed=71 + i, scale=8**-0.5) for i in range(4))
    for h in heads:
        same = torch.allclose(func(x, w_q, w_k, w_v, w_o, h), _mha(x, w_q, w_k, w_v, w_o, h))
        print(f"n_heads = {h}: equal to the per-head computation: {same}")


_SPLIT = "the heads are split by a plain reshape, without the transpose: each 'head' mixes tokens"
_SCALE = "the scores are divided by √d_model, but a head's dot products have d_k terms: use √d_k"
_SHORTCUTS = ("split_heads", "merge_heads", "softmax_attention", "scaled_dot_product_attention",
              "multi_head_attention_forward", "MultiheadAttention")


@exercise("debug")
def check_multi_head_attention(func: Callable) -> CheckResult:
    """``func(x, w_q, w_k, w_v, w_o, n_heads)``: h-head self-attention, x (B, N, d), W (d, d)."""
    shapes = [(1, 3, 4, 1, 20, "one head: plain attention"), (2, 5, 8, 2, 30, "two heads, d_k = 4"),
              (2, 4, 12, 3, 40, "three heads, d_k = 4"), (1, 6, 8, 8, 50, "eight heads of d_k = 1")]
    cases = [Case((randn(b, n, d, seed=s), *(randn(d, d, seed=s + i, scale=d**-0.5)
                                             for i in range(1, 5)), h), label)
             for b, n, d, h, s, label in shapes]
    mistakes = {
        f"still the bug: {_SPLIT}; and {_SCALE}": partial(_mha, split=False, by_d_model=True),
        _SPLIT: partial(_mha, split=False),
        _SCALE: partial(_mha, by_d_model=True),
        "the heads are merged by a plain reshape to (B, N, d_model), without first transposing "
        "back to (B, N, h, d_k): rows mix tokens": partial(_mha, merge=False),
        "the softmax runs over the queries: it must run along each row of Q Kᵀ, over the keys":
            partial(_mha, dim=-2),
        "the merged heads are multiplied by W^O transposed: the course computes x W, so it is "
        "merged @ w_o": partial(_mha, out="Wᵀ"),
        "W^O is missing: the merged heads must still be multiplied by w_o": partial(_mha,
                                                                                   out="none"),
        "all four matrices are used transposed (x @ w.T, as nn.Linear stores them); here the "
        "layer computes x @ w": partial(_mha, transposed=True),
    }
    return check_function(func, cases=cases, reference=_mha, name="multi_head_attention",
                          rtol=1e-9, atol=1e-12, mistakes=mistakes, shortcuts=_SHORTCUTS)


@exercise("predict")
def check_heads_match_projections(answer: object, *, show_answer: bool = False) -> CheckResult:
    """N where all heads' Q_i K_iᵀ, A_i V_i (2 N² d_model) cost the projections' 4 N d_model²."""
    explanation = ("the projections take 4 · N · 512² multiply-adds; each head's Q_i K_iᵀ and "
                   "A_i V_i take N² · d_k each, all heads 2 · h · N² · d_k = 2 · N² · 512. Equal "
                   "at N = 2 · 512 = 1024, whatever h is: longer sentences spend more on the heads")
    mistakes: dict[float, str] = {
        2048: "where Q_i K_iᵀ alone costs as much as the projections; A_i V_i costs as much again",
        768: "the crossing with three projections; the concatenated heads times W^O is a fourth",
        8192: "the crossing for one head's products; the question sums over all h = 8 heads",
        128: "the crossing with each head's dot products d_model long; they have d_k = 64 terms",
        3072: "the crossing with Q_i K_iᵀ alone and three projections; A_i V_i and W^O count too",
    }
    hint = ("write both counts as formulas in N: four (N, d_model) by (d_model, d_model) "
            "products, and h heads of Q_i K_iᵀ and A_i V_i; then set them equal")
    return check_number(answer, 1024, name="heads_match_projections", rtol=0.02, hint=hint,
                        label="N at which the heads cost as much as the projections",
                        mistakes=mistakes, explanation=explanation, show_answer=show_answer)


def _parameters(d_model, n_heads, d_head, bias=True, qkv_bias=0, out_bias=0, out_rows=0) -> int:
    """4·d·h·d_head weights, biases of h·d_head (W^Q, W^K, W^V) and d (W^O), or as given;
    ``out_rows``: the rows of W^O, h·d_head unless given."""
    width = n_heads * d_head
    return (3 * d_model * width + (out_rows or width) * d_model
            + bias * (3 * (qkv_bias or width) + (out_bias or d_model)))


@exercise("extend")
def check_attention_parameters(func: Callable) -> CheckResult:
    """``func(d_model, n_heads, d_head, bias=True)``: W^Q, W^K, W^V, W^O (and biases), counted."""
    table = [(8, 2, 4, True, "d_head = d_model / h: section 5's 4·64 + 4·8 = 288"),
             (1024, 128, 128, False, "T5-11B: h·d_head = 16,384 > d_model, no biases"),
             (512, 16, 64, True, "16 heads of 64 on d_model = 512: about twice the base model's"),
             (768, 4, 32, True, "h·d_head = 128 < d_model = 768"),
             (768, 4, 32, False, "the same without biases"), (6, 1, 1, True, "one head of width 1")]
    cases = [Case(c[:3], c[4], kwargs={} if c[3] else {"bias": False}) for c in table]
    mistakes = {
        "that is section 5's 4·d_model² + 4·d_model, which holds only when h·d_head = d_model: "
        "here each matrix has h·d_head columns (or rows)":
            lambda d, h, w, bias=True: 4 * d * d + (4 * d if bias else 0),
        "W^O was counted as one head's (d_head, d_model) matrix: it takes all h heads side by "
        "side, h·d_head rows": lambda d, h, w, bias=True: _parameters(d, h, w, bias, out_rows=w),
        "W^O was counted as (d_model, d_model): it takes the h·d_head features of the heads "
        "side by side": lambda d, h, w, bias=True: _parameters(d, h, w, bias, out_rows=d),
        "that counts one head: the h heads sit side by side, h·d_head columns in all":
            lambda d, h, w, bias=True: _parameters(d, 1, w, bias)}
    mistakes |= {"the weights are right, but " + why: mistake for why, mistake in {
        "W^O's bias was counted with h·d_head entries: W^O outputs d_model features":
            lambda d, h, w, bias=True: _parameters(d, h, w, bias, out_bias=h * w),
        "the biases of W^Q, W^K and W^V were counted with d_model entries each: each is as long "
        "as its output, h·d_head": lambda d, h, w, bias=True: _parameters(d, h, w, bias, d),
        "the bias lengths are swapped: W^Q, W^K and W^V output h·d_head features, W^O d_model":
            lambda d, h, w, bias=True: _parameters(d, h, w, bias, d, h * w)}.items()}
    return check_function(func, cases=cases, reference=_parameters, name="attention_parameters",
                          rtol=0, atol=0, mistakes=mistakes)
