"""Checkers for notebook 11 (multi-head attention)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from course_utils import attention
from course_utils.checks import Case, CheckResult, check_function, randn


def _multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads):
    q = attention.split_heads(x @ w_q, n_heads)
    k = attention.split_heads(x @ w_k, n_heads)
    v = attention.split_heads(x @ w_v, n_heads)
    z, _ = attention.scaled_dot_product_attention(q, k, v)
    return attention.merge_heads(z) @ w_o


def check_split_heads(func: Callable) -> CheckResult:
    """``func(x, n_heads)``: (B, N, d_model) -> (B, h, N, d_k), head i holding features
    ``[i·d_k, (i+1)·d_k)``; ValueError when d_model is not divisible by n_heads."""
    cases = [
        Case((torch.arange(12.0).reshape(1, 2, 6), 2), "arange: (1, 2, 6) into 2 heads"),
        Case((randn(2, 5, 8, seed=1), 4), "(2, 5, 8) into 4 heads of d_k = 2"),
        Case((randn(3, 1, 6, seed=2), 1), "one head: only a new axis"),
        Case((randn(2, 3, 6, seed=3), 6), "six heads of d_k = 1"),
        Case((randn(2, 3, 10, seed=4), 4), "10 is not divisible by 4", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=attention.split_heads, name="split_heads")


def check_merge_heads(func: Callable) -> CheckResult:
    """``func(x)``: (B, h, N, d_k) -> (B, N, h·d_k), the heads concatenated along features."""
    cases = [
        Case((torch.arange(12.0).reshape(1, 2, 2, 3),), "arange: 2 heads, 2 tokens, d_k = 3"),
        Case((randn(2, 4, 5, 2, seed=5),), "(2, 4, 5, 2) -> (2, 5, 8)"),
        Case((randn(1, 1, 3, 4, seed=6),), "one head"),
        Case((randn(3, 3, 1, 2, seed=7),), "one token"),
    ]
    return check_function(func, cases=cases, reference=attention.merge_heads, name="merge_heads")


def check_multi_head_attention(func: Callable) -> CheckResult:
    """``func(x, w_q, w_k, w_v, w_o, n_heads)``: multi-head self-attention without biases,
    ``concat(head_1, …, head_h) W^O`` with ``head_i = softmax(Q_i K_iᵀ / √d_k) V_i`` and
    ``Q = x W^Q`` split into heads; x (B, N, d_model), every W (d_model, d_model)."""
    def weights(d: int, seed: int) -> tuple[torch.Tensor, ...]:
        return tuple(randn(d, d, seed=seed + i, scale=d**-0.5) for i in range(4))

    cases = [
        Case((randn(1, 3, 4, seed=20), *weights(4, 21), 1), "one head: plain attention"),
        Case((randn(2, 5, 8, seed=30), *weights(8, 31), 2), "two heads, d_k = 4"),
        Case((randn(2, 4, 12, seed=40), *weights(12, 41), 3), "three heads, d_k = 4"),
        Case((randn(1, 6, 8, seed=50), *weights(8, 51), 8), "eight heads of d_k = 1"),
    ]
    return check_function(func, cases=cases, reference=_multi_head_attention,
                          name="multi_head_attention", rtol=1e-9, atol=1e-12)


def _attention_parameters(d_model: int, n_heads: int, d_head: int, bias: bool = True) -> int:
    width = n_heads * d_head  # all heads side by side
    return 4 * d_model * width + (3 * width + d_model if bias else 0)


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
    return check_function(func, cases=cases, reference=_attention_parameters,
                          name="attention_parameters", rtol=0, atol=0)
