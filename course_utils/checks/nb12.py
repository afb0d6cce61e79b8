"""Checkers for notebook 12 (feed-forward, residual and layer norm)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from course_utils import norms
from course_utils.checks import (
    Case,
    CaseResult,
    CheckResult,
    RuleBroken,
    Status,
    check_function,
    check_number,
    exercise,
    randn,
    wraps_answer,
)


def _layer_norm(x, gamma, beta, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)


def _layer_norm_variant(x, gamma, beta, eps=1e-5, *, eps_place="inside", correction=0, over=-1):
    dims = tuple(range(x.ndim)) if over == "all" else (over,)
    mu = x.mean(dims, keepdim=True)
    count = math.prod(x.shape[i] for i in dims)
    var = ((x - mu) ** 2).sum(dims, keepdim=True) / (count - correction)
    if eps_place == "inside":
        scale = torch.sqrt(var + eps)
    elif eps_place == "outside":
        scale = torch.sqrt(var) + eps
    else:  # forgotten
        scale = torch.sqrt(var)
    return gamma * (x - mu) / scale + beta


_LN_MISTAKES = {
    (("eps_place", "none"),): "ε is missing: the formula divides by √(σ² + ε), not by σ",
    (("eps_place", "outside"),): "ε is outside the square root: the formula divides by "
                                 "√(σ² + ε), not by √σ² + ε",
    (("correction", 1),): "the variance divides by d_model - 1; LayerNorm's divides by d_model "
                          "(the Convention box of section 4)",
    (("over", "all"),): "μ and σ² are taken over the whole tensor; LayerNorm takes one μ and one "
                        "σ² per token, over its own features (dim=-1, keepdim=True)",
    (("over", 0),): "μ and σ² are taken over dim 0, across the batch (that is BatchNorm's "
                    "direction); LayerNorm takes them per token, over dim=-1",
}


_LIBRARY_RULE = ("it calls {name}, a ready-made {kind}: the exercise is to write the formula "
                 "yourself, with a mean, a variance and a square root, without PyTorch's or the "
                 "course's normalization layers")
_LN = "layer normalization"
_GROUP = "normalization (one group of d_model features is a layer normalization)"
_INSTANCE = "normalization (an instance of d_model features is a layer normalization)"
_BATCH = "normalization (over a token's d_model features it is a layer normalization)"
_RMS = "normalization (of a centred x it is a layer normalization)"

# (owner, attribute, the name a learner wrote, what it is): refused while the answer runs; a
# layer's ``forward`` is refused on its class, so that every instance and alias is caught
_READY_MADE: tuple[tuple[Any, str, str, str], ...] = (
    (F, "layer_norm", "F.layer_norm", _LN),
    (torch, "layer_norm", "torch.layer_norm", _LN),
    (torch, "native_layer_norm", "torch.native_layer_norm", _LN),
    (torch.nn.LayerNorm, "forward", "nn.LayerNorm", _LN),
    (norms.LayerNorm, "forward", "the course's norms.LayerNorm", _LN),
    (F, "group_norm", "F.group_norm", _GROUP),
    (torch, "group_norm", "torch.group_norm", _GROUP),
    (torch.nn.GroupNorm, "forward", "nn.GroupNorm", _GROUP),
    (F, "instance_norm", "F.instance_norm", _INSTANCE),
    (torch, "instance_norm", "torch.instance_norm", _INSTANCE),
    (F, "batch_norm", "F.batch_norm", _BATCH),
    (torch, "batch_norm", "torch.batch_norm", _BATCH),
    (F, "rms_norm", "F.rms_norm", _RMS),
    (torch, "rms_norm", "torch.rms_norm", _RMS),
    (torch.nn.RMSNorm, "forward", "nn.RMSNorm", _RMS),
    (norms.RMSNorm, "forward", "the course's norms.RMSNorm", _RMS),
)


class _NormFunctionsRefused(TorchFunctionMode):
    """Below every Python name: a normalization function refused however it is reached
    (``torch.ops.aten.layer_norm``, a ``functools.partial`` made beforehand, the native group
    norm), also where it would break down into ordinary operations (an RMS norm on a CPU)."""

    _NAMES = frozenset({"layer_norm", "native_layer_norm", "rms_norm", "group_norm",
                        "native_group_norm", "batch_norm", "native_batch_norm", "instance_norm"})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        packet = getattr(func, "overloadpacket", None)
        name = str(getattr(packet if packet is not None else func, "__name__", ""))
        if name.split(".")[-1] in self._NAMES:
            raise RuleBroken(_LIBRARY_RULE.format(name=f"PyTorch's {name.split('.')[-1]}",
                                                  kind="normalization"))
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def _library_layer_norm_refused() -> Iterator[None]:
    """Every function and layer ``forward`` of ``_READY_MADE`` (PyTorch's and the course's layer
    norms, and the group, instance, batch and RMS norms that can do their work) raises
    :class:`RuleBroken` naming what was called."""
    def refuse(name: str, kind: str) -> Callable:
        def refused(*args, **kwargs):
            raise RuleBroken(_LIBRARY_RULE.format(name=name, kind=kind))
        return refused

    # vars(): what the owner itself holds, so that exactly that is put back
    saved = [vars(owner).get(attr, getattr(owner, attr)) for owner, attr, _, _ in _READY_MADE]
    try:
        for owner, attr, name, kind in _READY_MADE:
            setattr(owner, attr, refuse(name, kind))
        with _NormFunctionsRefused():
            yield
    finally:
        for (owner, attr, _, _), original in zip(_READY_MADE, saved, strict=True):
            setattr(owner, attr, original)


def _named_ln_mistakes(func: Callable) -> Callable:
    """``func`` with the ready-made layer norms refused while it runs; an output that equals a
    known mistake's output is told which mistake. An alias bound before the check
    (``Norm = norms.LayerNorm``, ``from torch.nn.functional import group_norm``) is caught while
    it runs: a layer's ``forward`` is refused on its class, and every function below its name."""

    @wraps_answer(func)
    def wrapper(x, gamma, beta, eps=1e-5):
        with _library_layer_norm_refused():
            got = func(x, gamma, beta, eps=eps)
        right = _layer_norm(x, gamma, beta, eps)
        if isinstance(got, torch.Tensor) and got.shape == right.shape and not torch.allclose(
                got, right, rtol=1e-9, atol=1e-12):
            for options, why in _LN_MISTAKES.items():
                with torch.no_grad():
                    wrong = _layer_norm_variant(x, gamma, beta, eps, **dict(options))
                same = torch.allclose(got, wrong, rtol=1e-9, atol=1e-12, equal_nan=True)
                if same:
                    raise RuleBroken(why)
        return got
    return wrapper


@exercise("practice")
def check_layer_norm(func: Callable) -> CheckResult:
    """``func(x, gamma, beta, eps=1e-5)``: ``γ (x − μ) / √(σ² + ε) + β`` over the last
    dimension, with the biased variance σ² (divide by d_model, not d_model − 1). A rejection
    names a forgotten ε, an ε outside the square root and the d − 1 variance. The rule: no
    nn.LayerNorm, F.layer_norm, torch.native_layer_norm or the course's norms.LayerNorm, nor the
    group, instance, batch or RMS norms that can do their work (refused while ``func`` runs, under
    any name)."""
    ones, zeros = torch.ones(4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    cases = [
        Case((torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64), ones, zeros),
             "[1, 2, 3, 4]: mean 2.5, variance 1.25"),
        Case((randn(3, 5, 6, seed=4, scale=10.0, shift=-3.0), randn(6, seed=5),
              randn(6, seed=6)), "a batch (3, 5, 6) with γ and β"),
        Case((randn(2, 4, seed=8, scale=0.01), ones, zeros),
             "a token with tiny features (σ² about 1e-4, so ε counts)"),
        Case((torch.full((2, 4), 7.0, dtype=torch.float64), ones, zeros + 0.5),
             "a constant token: variance 0, output β (ε avoids 0/0)"),
        Case((randn(4, 4, seed=7), ones, zeros), "eps = 0.1 matters", kwargs={"eps": 0.1}),
    ]
    return check_function(_named_ln_mistakes(func), cases=cases, reference=_layer_norm,
                          name="layer_norm", rtol=1e-9, atol=1e-12)


@exercise("predict")
def check_llama_d_ff(answer: Any) -> CheckResult:
    """LLaMA-7B's d_ff: the SwiGLU width whose three (d_model, d_ff) matrices hold the weights of
    two (d_model, 4 d_model) ones, (8/3) · 4096 = 10,922.7, rounded up to a multiple of 256 as
    Meta's llama/model.py does: 11,008, exactly, as an integer (a float such as 11008.0 is
    refused: the exercise asks for an integer)."""
    d_model, multiple = 4096, 256
    same_count = 2 * 4 * d_model / 3
    expected = multiple * math.ceil(int(same_count) / multiple)
    label = "LLaMA-7B's d_ff, d_model = 4096"
    explanation = ("3 · d_model · d_ff = 2 · d_model · 4 d_model gives d_ff = (8/3) d_model = "
                   "10,922.7; LLaMA's code (FeedForward in Meta's llama/model.py: "
                   "int(2 * 4 * dim / 3), then up to a multiple of multiple_of = 256) makes it "
                   "43 · 256 = 11,008. Its three matrices hold 3 · 4096 · 11008 = 135,266,304 "
                   "weights, 0.8% more than the 134,217,728 of the two-matrix network")
    unrounded = "that is (8/3) d_model itself; LLaMA rounds it up to the next multiple of 256"
    mistakes = {
        same_count: unrounded, float(int(same_count)): unrounded,
        float(int(same_count) + 1): unrounded,
        multiple * math.floor(same_count / multiple): "that multiple of 256 is below "
                                                      "(8/3) d_model: LLaMA rounds up",
        4 * d_model: "that is the paper's d_ff = 4 d_model; with three matrices instead of two "
                     "it holds 1.5 times the weights",
        6 * d_model: "the equation is upside down: three matrices of width d_ff must hold what "
                     "two of width 4 d_model hold, so d_ff is smaller than 4 d_model",
    }
    hint = ("count the weights of both networks as products of d_model and d_ff, set them equal, "
            "then round as the exercise says")
    if isinstance(answer, (float, np.floating)) and float(answer).is_integer():
        message = (f"{answer!r} is a float: the exercise asks for an integer (d_ff counts columns "
                   "of a matrix), written without a decimal point")
        print(f"  ✗ {label}: {message}")
        return CheckResult("llama_d_ff", Status.FAILED, [CaseResult(label, False, message)])
    return check_number(answer, expected, name="llama_d_ff", label=label,
                        explanation=explanation, rtol=0.0, atol=0.0, hint=hint,
                        mistakes=mistakes)


def _pre_ln_block(x, gamma, beta, w1, b1, w2, b2, *, axis=-1, residual="x", post=False,
                  normalize=True, correction=0, eps=1e-5, activation="relu"):
    def norm(t):
        if not normalize:
            return t
        mu = t.mean(axis, keepdim=True)
        var = ((t - mu) ** 2).sum(axis, keepdim=True) / (t.shape[axis] - correction)
        return gamma * (t - mu) / torch.sqrt(var + eps) + beta

    def ffn(t):
        hidden = t @ w1 + b1
        return (F.gelu(hidden) if activation == "gelu" else F.relu(hidden)) @ w2 + b2

    if post:
        return norm(x + ffn(x))
    h = norm(x)
    return (h if residual == "normalized" else x) + ffn(h)


_BLOCK_MISTAKES = {
    (("axis", -2),): "LayerNorm runs over the tokens (dim=-2): each token must be normalized "
                     "over its own d_model features (dim=-1), or it depends on the other tokens",
    (("residual", "normalized"),): "the residual adds the normalized x; pre-LN adds the block's "
                                   "input x itself, so that zero weights give the identity",
    (("axis", -2), ("residual", "normalized")): "two mistakes: LayerNorm runs over the tokens "
                                                "(dim=-2), and the residual adds the normalized x "
                                                "instead of x",
    (("post", True),): "this is post-LN, LN(x + FFN(x)); pre-LN is x + FFN(LN(x))",
    (("normalize", False),): "there is no LayerNorm: this is x + FFN(x); pre-LN feeds the "
                             "feed-forward network LN(x), the normalized x",
    (("correction", 1),): "the variance divides by d_model - 1 (the unbiased one, torch.var's "
                          "default); LayerNorm's divides by d_model: correction=0, or the mean of "
                          "the squared deviations (section 4's Convention box)",
    (("eps", 1e-12),): "ε is too small (1e-12, or none at all): the exercise's LayerNorm divides "
                       "by √(σ² + ε) with ε = 1e-5",
    (("eps", 1e-6),): "ε is 1e-6 (the default of RMSNorm, notebook 15); the exercise's "
                      "LayerNorm divides by √(σ² + ε) with ε = 1e-5",
    (("activation", "gelu"),): "the feed-forward network applies GELU; the exercise's applies "
                               "ReLU, max(0, ·) (torch.relu)",
}
# both give LN(x) when the feed-forward weights are zero: then the message names both
_POST_OR_NORMALIZED = ("the output is LN(x), which both post-LN, LN(x + FFN(x)), and a residual "
                       "that adds the normalized x give when the weights are zero; pre-LN is "
                       "x + FFN(LN(x)), which gives x back")


def _named_block_mistakes(func: Callable) -> Callable:
    @wraps_answer(func)
    def wrapper(*args):
        got = func(*args)
        right = _pre_ln_block(*args)
        if isinstance(got, torch.Tensor) and got.shape == right.shape and not torch.allclose(
                got, right, rtol=1e-9, atol=1e-12):
            matched = [options for options in _BLOCK_MISTAKES
                       if torch.allclose(got, _pre_ln_block(*args, **dict(options)), rtol=1e-9,
                                         atol=1e-12)]
            if {(("post", True),), (("residual", "normalized"),)} <= set(matched):
                raise RuleBroken(_POST_OR_NORMALIZED)
            if matched:
                raise RuleBroken(_BLOCK_MISTAKES[matched[0]])
        return got
    return wrapper


@exercise("debug")
def check_pre_ln_block(func: Callable) -> CheckResult:
    """``func(x, gamma, beta, w1, b1, w2, b2)``: the pre-LN feed-forward block
    ``x + FFN(LN(x))`` for x (B, N, d), LayerNorm over the last dimension with ε = 1e-5."""
    def params(d: int, d_ff: int, seed: int, zero: bool = False):
        scale = 0.0 if zero else 1.0
        return (randn(d, seed=seed, shift=1.0, scale=0.3), randn(d, seed=seed + 1, scale=0.3),
                randn(d, d_ff, seed=seed + 2, scale=scale * d**-0.5),
                randn(d_ff, seed=seed + 3, scale=scale * 0.1),
                randn(d_ff, d, seed=seed + 4, scale=scale * d_ff**-0.5),
                randn(d, seed=seed + 5, scale=scale * 0.1))

    cases = [
        Case((randn(1, 3, 4, seed=60, scale=2.0, shift=1.0), *params(4, 8, 61, zero=True)),
             "zero weights: the block must be the identity"),
        Case((randn(2, 5, 8, seed=70, scale=3.0), *params(8, 32, 71)), "(2, 5, 8), d_ff = 32"),
        Case((randn(1, 1, 6, seed=80), *params(6, 12, 81)), "one token"),
    ]
    return check_function(_named_block_mistakes(func), cases=cases, reference=_pre_ln_block,
                          name="pre_ln_block", rtol=1e-9, atol=1e-12)
