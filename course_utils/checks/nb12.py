"""Checkers for notebook 12 (feed-forward, residual and layer norm)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F

from course_utils.checks import Case, CheckResult, check_function, check_number, exercise, randn


def _norm(x, gamma, beta, eps=1e-5, *, dims=(-1,), correction=0, eps_at="in"):
    mu, var = x.mean(dims, keepdim=True), x.var(dims, keepdim=True, correction=correction)
    root = torch.sqrt(var + eps * (eps_at == "in")) + eps * (eps_at == "out")
    return gamma * (x - mu) / root + beta


_LIBRARY_NORMS = ("batch_norm", "BatchNorm1d", "native_batch_norm", "layer_norm", "LayerNorm",
                  "native_layer_norm", "group_norm", "GroupNorm",
                  "instance_norm", "rms_norm", "RMSNorm")
_PER_FEATURE = ("; BatchNorm takes one μ and one σ² per feature, over all B·N tokens of the batch "
                "(dims 0 and 1)")
_BN_MISTAKES: dict[str, Callable] = {
    "that is LayerNorm: μ and σ² over each token's own features (dim -1)" + _PER_FEATURE:
        partial(_norm, dims=(-1,)),
    "μ and σ² are taken over the batch only (dim 0), one pair per position and feature"
    + _PER_FEATURE: partial(_norm, dims=(0,)),
    "μ and σ² are taken over each sentence's positions only (dim 1)" + _PER_FEATURE:
        partial(_norm, dims=(1,)),
    "μ and σ² are taken over the whole tensor, one pair for all features" + _PER_FEATURE:
        partial(_norm, dims=None),
    "the variance divides by B·N - 1 (torch.var's default); BatchNorm normalizes with the one "
    "that divides by B·N (correction=0)": partial(_norm, dims=(0, 1), correction=1),
    "ε is outside the square root: √(σ² + ε), not √σ² + ε": partial(_norm, dims=(0, 1),
                                                                   eps_at="out"),
    "ε is missing: the formula divides by √(σ² + ε), not by σ": partial(_norm, dims=(0, 1),
                                                                       eps_at="none"),
    "γ and β are ignored: the output is γ x̂ + β":
        lambda x, g, b, eps=1e-5: _norm(x, 1, 0, eps, dims=(0, 1)),
    "it ignores the eps argument (ε is always 1e-5)":
        lambda x, g, b, eps=1e-5: _norm(x, g, b, dims=(0, 1)),
    "that is evaluation mode: a fresh BatchNorm1d in .eval() divides by its running averages "
    "(0 and 1 at the start), not by the batch's μ and σ²":
        lambda x, g, b, eps=1e-5: g * x / math.sqrt(1 + eps) + b}


@exercise("extend")
def check_batch_norm(func: Callable) -> CheckResult:
    """``func(x, gamma, beta, eps=1e-5)`` for x (B, N, d): training-mode BatchNorm, ``γ (x − μ) /
    √(σ² + ε) + β`` with one μ and one biased σ² per feature, over dims 0 and 1, as
    ``nn.BatchNorm1d`` on ``x.transpose(1, 2)``. A library norm passes with a note."""
    sizes = torch.tensor([0.01, 1.0, 100.0], dtype=torch.float64)  # features of unequal sizes
    constant = randn(2, 3, 4, seed=9)
    constant[..., 1] = 7.0
    ones, zeros = torch.ones(4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    cases = [Case((randn(3, 5, 6, seed=4, scale=10.0, shift=-3.0), randn(6, seed=5),
                   randn(6, seed=6)), "a batch (3, 5, 6) with γ and β"),
             Case((randn(4, 2, 3, seed=10) * sizes + sizes, torch.ones(3, dtype=torch.float64),
                   torch.zeros(3, dtype=torch.float64)),
                  "B = 4, N = 2, three features of sizes 0.01, 1 and 100"),
             Case((randn(1, 5, 4, seed=11), ones, zeros), "one sentence: its 5 tokens"),
             Case((constant, ones, zeros + 0.5),
                  "feature 1 is 7 in every token: variance 0, output β (ε avoids 0/0)"),
             Case((randn(3, 2, 4, seed=12, scale=0.3), ones, zeros), "eps = 0.1 matters",
                  kwargs={"eps": 0.1})]
    return check_function(func, cases=cases, reference=partial(_norm, dims=(0, 1)),
                          name="batch_norm", rtol=1e-9, atol=1e-12, mistakes=_BN_MISTAKES,
                          shortcuts=_LIBRARY_NORMS)


@exercise("predict")
def check_llama_d_ff(answer: Any, *, show_answer: bool = False) -> CheckResult:
    """LLaMA-7B's d_ff: three (d_model, d_ff) matrices hold what two (d_model, 4 d_model) hold,
    (8/3) · 4096 = 10,922.7, rounded up to a multiple of 256 (Meta's llama/model.py), exactly."""
    same_count, unrounded = 8 * 4096 / 3, "that is (8/3) d_model itself; LLaMA rounds it up"
    mistakes = {same_count: unrounded, 10922: unrounded, 10923: unrounded,
                42 * 256: "that multiple of 256 is below (8/3) d_model: LLaMA rounds up",
                4 * 4096: "that is the paper's d_ff = 4 d_model; three matrices that wide hold 1.5 "
                          "times the weights",
                6 * 4096: "the equation is upside down: three matrices of width d_ff hold what two "
                          "of width 4 d_model hold, so d_ff is below 4 d_model"}
    explanation = ("3 d_model d_ff = 2 d_model · 4 d_model gives d_ff = (8/3) d_model = 10,922.7; "
                   "LLaMA's FeedForward rounds it up to a multiple of 256: 43 · 256 = 11,008, "
                   "135,266,304 weights, 0.8% more than the two-matrix network's 134,217,728")
    hint = "count both networks' weights as products of d_model and d_ff, set them equal, round"
    return check_number(answer, 256 * math.ceil(same_count / 256), name="llama_d_ff",
                        label="LLaMA-7B's d_ff, d_model = 4096", explanation=explanation,
                        hint=hint, mistakes=mistakes, rtol=0.0, atol=0.0, show_answer=show_answer)


def _block(x, gamma, beta, w1, b1, w2, b2, *, dim=-1, add="x", post=False, norm=True,
           correction=0, eps=1e-5, act=F.relu):
    """``x + FFN(LN(x))``, ``FFN(h) = act(h W1 + b1) W2 + b2`` (or a slip of the options)."""
    if post:
        return _norm(x + act(x @ w1 + b1) @ w2 + b2, gamma, beta, eps)
    h = _norm(x, gamma, beta, eps, dims=(dim,), correction=correction) if norm else x
    return (h if add == "normalized" else x) + act(h @ w1 + b1) @ w2 + b2


_EPS = "the exercise's LayerNorm divides by √(σ² + ε) with ε = 1e-5"
_BLOCK_MISTAKES: dict[str, Callable] = {
    "still the bug: these are the given block's numbers, with both symptoms (zero weights do not "
    "give x back, and one token moves the others)": partial(_block, dim=-2, add="normalized"),
    "the output is LN(x), which both post-LN, LN(x + FFN(x)), and a residual that adds the "
    "normalized x give when the weights are zero; pre-LN is x + FFN(LN(x)), which gives x back":
        lambda x, gamma, beta, *weights: _norm(x, gamma, beta),
    "LayerNorm runs over the tokens (dim=-2): each token must be normalized over its own d_model "
    "features (dim=-1), or it depends on the other tokens": partial(_block, dim=-2),
    "the residual adds the normalized x; pre-LN adds the block's input x itself, so that zero "
    "weights give the identity": partial(_block, add="normalized"),
    "this is post-LN, LN(x + FFN(x)); pre-LN is x + FFN(LN(x))": partial(_block, post=True),
    "there is no LayerNorm: this is x + FFN(x), not x + FFN(LN(x))": partial(_block, norm=False),
    "the variance divides by d_model - 1 (the unbiased one, torch.var's default); LayerNorm's "
    "divides by d_model (correction=0, section 4's Convention box)": partial(_block, correction=1),
    "ε is too small (1e-12, or none at all): " + _EPS: partial(_block, eps=1e-12),
    "ε is 1e-6 (the default of RMSNorm, notebook 15); " + _EPS: partial(_block, eps=1e-6),
    "the FFN applies GELU; the exercise's applies ReLU (torch.relu)": partial(_block, act=F.gelu)}


@exercise("debug")
def check_pre_ln_block(func: Callable) -> CheckResult:
    """``func(x, gamma, beta, w1, b1, w2, b2)``: the pre-LN feed-forward block ``x + FFN(LN(x))``
    for x (B, N, d), LayerNorm over the last dimension with ε = 1e-5."""
    def case(shape: tuple[int, ...], d_ff: int, seed: int, label: str, scale: float = 1.0):
        d = shape[-1]
        sizes = [((d, d_ff), d**-0.5), ((d_ff,), 0.1), ((d_ff, d), d_ff**-0.5), ((d,), 0.1)]
        weights = [randn(*n, seed=seed + 3 + k, scale=scale * s) for k, (n, s) in enumerate(sizes)]
        return Case((randn(*shape, seed=seed, scale=2.0, shift=1.0), randn(d, seed=seed + 1,
                     shift=1.0, scale=0.3), randn(d, seed=seed + 2, scale=0.3), *weights), label)

    cases = [case((1, 3, 4), 8, 60, "zero weights: the block must be the identity", scale=0.0),
             case((2, 5, 8), 32, 70, "(2, 5, 8), d_ff = 32"), case((1, 1, 6), 12, 80, "one token")]
    return check_function(func, cases=cases, reference=_block, name="pre_ln_block", rtol=1e-9,
                          atol=1e-12, mistakes=_BLOCK_MISTAKES)
