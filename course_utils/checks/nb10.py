"""Checkers for notebook 10 (scaled dot-product attention)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from course_utils import attention
from course_utils.checks import Case, CheckResult, check_function, randn


def _attention_weights(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return attention.scaled_dot_product_attention(q, k, k)[1]  # the weights do not depend on v


def _masked_attention(q, k, v, mask) -> torch.Tensor:
    return attention.scaled_dot_product_attention(q, k, v, mask=mask)[0]


def check_attention_weights(func: Callable) -> CheckResult:
    """``func(q, k)``: ``softmax(q kᵀ / √d_k)`` over the keys (last dimension), for tensors of
    shape (..., Lq, d_k) and (..., Lk, d_k); ValueError when the d_k differ."""
    cases = [
        Case((torch.tensor([[1.0, 0.0]], dtype=torch.float64),
              torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)),
             "one query, two keys: softmax([1, 0] / √2)"),
        Case((randn(4, 16, seed=1), randn(4, 16, seed=2)), "square (4, 16) and (4, 16)"),
        Case((randn(3, 8, seed=3), randn(5, 8, seed=4)), "Lq = 3 queries, Lk = 5 keys"),
        Case((randn(2, 3, 4, seed=5), randn(2, 6, 4, seed=6)), "a batch of 2"),
        Case((randn(3, 4, seed=7), randn(3, 5, seed=8)), "d_k 4 against 5", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_attention_weights,
                          name="attention_weights", rtol=1e-9, atol=1e-12)


def check_causal_mask(func: Callable) -> CheckResult:
    """``func(lq, lk)``: boolean (lq, lk), True = attend, bottom-right: key j visible to query i
    when ``j <= i + lk - lq``."""
    cases = [
        Case((4, 4), "square: the lower triangle"),
        Case((1, 1), "one token sees itself"),
        Case((2, 5), "2 new queries after 3 cached keys: the last query sees all 5"),
        Case((1, 6), "one new query (generation step) sees every key"),
        Case((5, 3), "more queries than keys: the first two rows see nothing"),
    ]
    return check_function(func, cases=cases, reference=attention.causal_mask,
                          name="causal_mask")


def check_masked_attention(func: Callable) -> CheckResult:
    """``func(q, k, v, mask)``: the attention output (Lq, d_v) with a boolean mask (True =
    attend); a query row with no visible key must give a row of zeros."""
    q, k, v = randn(4, 3, seed=10), randn(5, 3, seed=11), randn(5, 2, seed=12)
    all_true = torch.ones(4, 5, dtype=torch.bool)
    padding = all_true.clone()
    padding[:, 3:] = False
    fully_masked = padding.clone()
    fully_masked[2] = False
    cases = [
        Case((q, k, v, all_true), "nothing masked"),
        Case((q, k, v, padding), "the last two keys are padding"),
        Case((q, k, v, attention.causal_mask(4, 5)), "causal (bottom-right)"),
        Case((q, k, v, fully_masked), "query 2 sees no key: its output row must be 0"),
    ]
    return check_function(func, cases=cases, reference=_masked_attention,
                          name="masked_attention", rtol=1e-9, atol=1e-12)
