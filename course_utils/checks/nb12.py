"""Checkers for notebook 12 (feed-forward, residual and layer norm)."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from course_utils.checks import Case, CheckResult, check_function, randn


def _feed_forward(x, w1, b1, w2, b2):
    return F.relu(x @ w1 + b1) @ w2 + b2


def _layer_norm(x, gamma, beta, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)


def _swiglu(x, w_gate, w_up, w_down):
    return (F.silu(x @ w_gate) * (x @ w_up)) @ w_down


def check_feed_forward(func: Callable) -> CheckResult:
    """``func(x, w1, b1, w2, b2)``: ``max(0, x W₁ + b₁) W₂ + b₂`` for x (..., d_model),
    W₁ (d_model, d_ff), W₂ (d_ff, d_model)."""
    def params(d: int, d_ff: int, seed: int):
        return (randn(d, d_ff, seed=seed), randn(d_ff, seed=seed + 1),
                randn(d_ff, d, seed=seed + 2), randn(d, seed=seed + 3))

    cases = [
        Case((torch.tensor([[1.0, -1.0]], dtype=torch.float64),
              torch.tensor([[1.0, -1.0, 0.0], [0.0, 1.0, 2.0]], dtype=torch.float64),
              torch.tensor([0.0, 0.5, -1.0], dtype=torch.float64),
              torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64),
              torch.tensor([0.1, 0.2], dtype=torch.float64)), "by hand: hidden [1, -1.5, -3] -> "
             "ReLU [1, 0, 0]"),
        Case((randn(5, 4, seed=1), *params(4, 16, 10)), "5 tokens, d_model = 4, d_ff = 16"),
        Case((randn(2, 3, 8, seed=2), *params(8, 32, 20)), "a batch (2, 3, 8)"),
        Case((randn(6, seed=3), *params(6, 24, 30)), "a single token (6,)"),
    ]
    return check_function(func, cases=cases, reference=_feed_forward, name="feed_forward",
                          rtol=1e-9, atol=1e-12)


def check_layer_norm(func: Callable) -> CheckResult:
    """``func(x, gamma, beta, eps=1e-5)``: ``γ (x − μ) / √(σ² + ε) + β`` over the last
    dimension, with the biased variance σ² (divide by d_model, not d_model − 1)."""
    ones, zeros = torch.ones(4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    cases = [
        Case((torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64), ones, zeros),
             "[1, 2, 3, 4]: mean 2.5, variance 1.25"),
        Case((randn(3, 5, 6, seed=4, scale=10.0, shift=-3.0), randn(6, seed=5),
              randn(6, seed=6)), "a batch (3, 5, 6) with γ and β"),
        Case((torch.full((2, 4), 7.0, dtype=torch.float64), ones, zeros + 0.5),
             "a constant token: variance 0, output β (eps avoids 0/0)"),
        Case((randn(4, 4, seed=7), ones, zeros), "eps = 0.1 matters", kwargs={"eps": 0.1}),
    ]
    return check_function(func, cases=cases, reference=_layer_norm, name="layer_norm",
                          rtol=1e-9, atol=1e-12)


def check_swiglu(func: Callable) -> CheckResult:
    """``func(x, w_gate, w_up, w_down)``: ``(SiLU(x W_gate) ⊙ (x W_up)) W_down`` with
    ``SiLU(z) = z · sigmoid(z)``; no biases."""
    def weights(d: int, d_ff: int, seed: int):
        return (randn(d, d_ff, seed=seed), randn(d, d_ff, seed=seed + 1),
                randn(d_ff, d, seed=seed + 2))

    cases = [
        Case((torch.tensor([[1.0, 0.0]], dtype=torch.float64),
              torch.tensor([[2.0], [0.0]], dtype=torch.float64),
              torch.tensor([[3.0], [0.0]], dtype=torch.float64),
              torch.tensor([[1.0, -1.0]], dtype=torch.float64)), "by hand: SiLU(2)·3 = 5.2848"),
        Case((randn(5, 4, seed=8), *weights(4, 12, 40)), "5 tokens, d_model = 4, d_ff = 12"),
        Case((randn(2, 3, 6, seed=9), *weights(6, 16, 50)), "a batch (2, 3, 6)"),
    ]
    return check_function(func, cases=cases, reference=_swiglu, name="swiglu",
                          rtol=1e-9, atol=1e-12)
