"""Checkers for notebook 13's exercises (the decoder's masks, the big model's size, the RNN's
Jacobian, a decoder layer's FLOPs)."""

from __future__ import annotations

import contextlib
import inspect
import numbers
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from course_utils import attention
from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    names_used,
    wraps_answer,
)


def _decoder_masks(tgt_mask: torch.Tensor, src_mask: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    (b, t), s = tgt_mask.shape, src_mask.shape[1]
    self_mask = attention.causal_mask(t, t) & tgt_mask[:, None, :]
    return self_mask, src_mask[:, None, :].expand(b, t, s)


def _lengths(lengths: list[int], longest: int) -> torch.Tensor:
    return attention.padding_mask(lengths, longest)


def _mask_problem(got: Any, tgt_mask: torch.Tensor, src_mask: torch.Tensor) -> str | None:
    """Name the leak in a pair of masks of the right shapes, or None (then values decide)."""
    if not (isinstance(got, tuple) and len(got) == 2):
        return None
    self_mask, cross_mask = got
    (b, t), s = tgt_mask.shape, src_mask.shape[1]
    if isinstance(self_mask, torch.Tensor) and self_mask.dtype == torch.bool \
            and self_mask.shape == (b, t, t):
        future = self_mask & ~attention.causal_mask(t, t)
        if future.any():
            i, j = (int(k) for k in future.nonzero()[0][1:])
            return (f"self_mask lets query {i} read key {j} > {i}: the decoder sees a target "
                    "token it has to predict (look at the diagonal the triangle starts from)")
        padded = self_mask & ~tgt_mask[:, None, :]
        if padded.any():
            n, i, j = (int(k) for k in padded.nonzero()[0])
            return (f"self_mask lets query {i} of sentence {n} read key {j}, a padded target "
                    "token: padding must be masked along the key axis (the last one)")
        blanked = (attention.causal_mask(t, t) & tgt_mask[:, None, :] & ~self_mask
                   & ~tgt_mask[:, :, None])
        if blanked.any():
            n, i, _ = (int(k) for k in blanked.nonzero()[0])
            return (f"self_mask blanks the whole row of query {i} of sentence {n}, a padded "
                    "target position: only keys are masked (the last axis); every query keeps "
                    "its row")
    if isinstance(cross_mask, torch.Tensor) and cross_mask.dtype == torch.bool \
            and cross_mask.shape == (b, t, s):
        padded = cross_mask & ~src_mask[:, None, :]
        if padded.any():
            n, i, j = (int(k) for k in padded.nonzero()[0])
            return (f"cross_mask lets target position {i} of sentence {n} read source key {j}, "
                    "a padded source token")
    return None


@exercise("debug")
def check_decoder_masks(func: Callable[..., tuple[torch.Tensor, torch.Tensor]]) -> CheckResult:
    """``func(tgt_mask, src_mask)``: padding masks (B, N_tgt) and (B, N_src), True = real token,
    to the boolean masks (True = may attend) of the decoder's self-attention, causal and without
    padded keys, (B, N_tgt, N_tgt), and of its cross-attention, without padded source keys,
    (B, N_tgt, N_src). A mask that lets a query read the future or a padded key is named as such."""

    @wraps_answer(func)
    def watched(tgt_mask: torch.Tensor, src_mask: torch.Tensor) -> Any:
        got = func(tgt_mask.clone(), src_mask.clone())
        problem = _mask_problem(got, tgt_mask, src_mask)
        if problem:
            raise RuleBroken(problem)
        return got

    cases = [
        Case((_lengths([3, 2], 3), _lengths([3, 5], 5)),
             "N_tgt = 3, N_src = 5, padding in the second target and the first source"),
        Case((_lengths([4, 4], 4), _lengths([4, 4], 4)),
             "N_tgt = N_src = 4, no padding: cross-attention is still not causal"),
        Case((_lengths([4, 2, 3], 4), _lengths([4, 1, 4], 4)),
             "N_tgt = N_src = 4, three sentences"),
        Case((_lengths([1], 1), _lengths([3], 6)), "N_tgt = 1: one target position"),
        Case((_lengths([5, 3], 5), _lengths([2, 1], 2)), "N_tgt = 5 > N_src = 2"),
    ]
    return check_function(watched, cases=cases, reference=_decoder_masks, name="decoder_masks",
                          names=("self_mask", "cross_mask"), exact_dtype=True)


def _big_model_millions(attentions: int = 2, embeddings: int = 1) -> float:
    d, d_ff, n_layers, vocab = 1024, 4096, 6, 37_000
    attn, ffn, norm = 4 * d * d + 4 * d, 2 * d * d_ff + d_ff + d, 2 * d
    return (n_layers * (attn + ffn + 2 * norm) + n_layers * (attentions * attn + ffn + 3 * norm)
            + embeddings * vocab * d) / 1e6


@exercise("predict")
def check_big_model_embedding_share(answer: Any) -> CheckResult:
    """``answer``: the share of the paper's big model (d_model 1024, 16 heads, d_ff 4096, 6 + 6
    layers, one shared 37,000 × 1024 embedding) held by the shared embedding, in percent, within
    0.2 percentage points: 37.89 M of 214.25 M, 17.7%."""
    share = 100 * 37_000 * 1024 / (1e6 * _big_model_millions())
    base_share = 100 * 37_000 * 512 / 63_082_496
    explanation = (
        "The embedding is V · d = 37,000 · 1024 = 37.89 M. The layers, from section 6's formula "
        "with d = 1024, d_ff = 4096: an attention sublayer 4·1024² + 4·1024 = 4,198,400, a "
        "feed-forward network 8,393,728, a LayerNorm 2,048; six encoder layers 75.58 M, six "
        "decoder layers (two attentions each) 100.78 M. Total 214.25 M, of which the embedding "
        "is 17.7%. In the base model it is 18.94 of 63.08 M, 30.0%: doubling d doubles the "
        "embedding (V · d) but roughly quadruples the layers (the d² and d · d_ff terms), so its "
        "share falls. The 16 heads change nothing (they split d_model)."
    )
    mistakes = {
        base_share: "that is the base model's share (18.94 of 63.08 M); the big one has "
                    "d = 1024, d_ff = 4096, and its layers grow faster than its embedding",
        share / 100: "that is a fraction; the answer is asked in percent",
        100 * 37.888 / _big_model_millions(attentions=1): "a decoder layer has two attention "
                                                          "sublayers, self-attention and "
                                                          "cross-attention",
        100 * 3 * 37.888 / _big_model_millions(embeddings=3): "the vocabulary is shared: one "
                                                              "V x d matrix serves both "
                                                              "embeddings and the output "
                                                              "projection",
        100 * 37.888 / (_big_model_millions() - 37.888): "that divides by the layers alone; the "
                                                          "share is of the whole model, "
                                                          "embedding included",
    }
    hint = ("evaluate section 6's three parts (the encoder layers, the decoder layers, the shared "
            "embedding) with the big model's numbers, then divide the embedding by their sum")
    return check_number(answer, share, name="big_model_embedding_share",
                        label="the embedding's share of the big model, in percent",
                        explanation=explanation, rtol=0.0, atol=0.2, hint=hint,
                        mistakes=mistakes)


def _rnn_jacobian(s0: np.ndarray, xs: np.ndarray, w_h: np.ndarray, w_x: np.ndarray
                  ) -> np.ndarray:
    """Autograd's ∂s_N/∂s_0, laid out as the row convention's J[i, j] = ∂s_N[j]/∂s_0[i]."""
    w_h_t, w_x_t, xs_t = (torch.from_numpy(np.asarray(a, dtype=np.float64))
                          for a in (w_h, w_x, xs))

    def run(s: torch.Tensor) -> torch.Tensor:
        for x_t in xs_t:
            s = torch.tanh(s @ w_h_t + x_t @ w_x_t)
        return s

    start = torch.from_numpy(np.asarray(s0, dtype=np.float64))
    if len(xs_t) == 0:
        return np.eye(len(start))
    return torch.autograd.functional.jacobian(run, start).numpy().T


def _rnn_jacobian_variant(s0: np.ndarray, xs: np.ndarray, w_h: np.ndarray, w_x: np.ndarray,
                          slope_at: str = "output", order: str = "forward",
                          scaled: str = "columns") -> np.ndarray:
    """The chain-rule product with a learner's slip: the tanh slope taken at the previous state
    or at the pre-activation, or the factors multiplied in the reverse order."""
    s, factors = np.asarray(s0, dtype=np.float64), []
    for x_t in xs:
        pre = s @ w_h + x_t @ w_x
        new = np.tanh(pre)
        at = {"output": new, "previous": s, "pre-activation": pre}[slope_at]
        slope = (1 - at**2)[None, :] if scaled == "columns" else (1 - at**2)[:, None]
        factors.append(w_h * slope)
        s = new
    jac = np.eye(len(s0))
    for factor in factors if order == "forward" else factors[::-1]:
        jac = jac @ factor
    return jac


_JACOBIAN_SLIPS = (
    ({"order": "backward"}, "the one-step matrices are multiplied in the reverse order: rows "
     "travel left to right, δs_N = δs_0 J_1 J_2 ⋯ J_N, so the first step's matrix stands leftmost"),
    ({"slope_at": "previous"}, "the tanh slope of step t is taken at the previous state s_{t−1}; "
     "it belongs to the step's own output: tanh'(a_t) = 1 − s_t²"),
    ({"scaled": "rows"}, "the slopes scale the rows of W_s, diag(c) W_s (c[:, None]); the step "
     "scales the entries of the row δs_{t−1} W_s, that is the columns of W_s"),
    ({"slope_at": "pre-activation"}, "the tanh slope is 1 − a² of the pre-activation a; it is "
     "1 − tanh(a)² = 1 − s_t², written with the step's output"),
)


@contextlib.contextmanager
def _autograd_refused(name: str) -> Iterator[None]:
    """Within the block, autograd's entry points raise RuleBroken naming ``name``, and so does
    ``np.tanh`` given a complex argument (a complex-step derivative)."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuleBroken(f"{name} must apply the chain rule itself, in NumPy: autograd computes "
                         "the very matrix it is compared with, so it is switched off here")

    import torch.func

    patched = [(torch.autograd, "grad"), (torch.autograd, "backward"), (torch.Tensor, "backward"),
               (torch.autograd.functional, "jacobian"), (torch.autograd.functional, "vjp"),
               (torch.autograd.functional, "jvp")]
    patched += [(torch.func, attr) for attr in ("jacrev", "jacfwd", "vjp", "jvp", "grad")]
    saved = [(owner, attr, getattr(owner, attr)) for owner, attr in patched]
    def real_tanh(x: Any, *args: Any, **kwargs: Any) -> Any:
        if np.iscomplexobj(x):
            raise RuleBroken(f"{name} gave np.tanh a complex argument: a complex-step estimate, "
                             "Im f(s_0 + i h e_i) / h, is a measurement, not the chain rule by "
                             "hand, and it is refused too")
        return tanh(x, *args, **kwargs)

    tanh = np.tanh
    try:
        for owner, attr, _ in saved:
            setattr(owner, attr, refuse)
        np.tanh = real_tanh  # type: ignore[assignment]  # np.tanh is typed as a ufunc
        yield
    finally:
        np.tanh = tanh
        for owner, attr, original in saved:
            setattr(owner, attr, original)


_RTOL, _ATOL = 1e-11, 1e-13  # float64 chain rule: rounding only; a finite difference is ~1e-10


@exercise("derive")
def check_rnn_jacobian(func: Callable[..., np.ndarray]) -> CheckResult:
    """``func(s0, xs, w_s, w_x)``: for s_t = tanh(s_{t−1} W_s + x_t W_x), the (d, d) matrix J with
    δs_N = δs_0 J, J[i, j] = ∂s_N[j]/∂s_0[i], by the chain rule: autograd is refused while
    ``func`` runs, and the tolerance (rtol 1e-11, atol 1e-13) is too tight for a finite
    difference; a complex-step estimate (np.tanh of a complex argument) is refused. Compared with
    autograd; the transpose (the column convention's Jacobian), the
    reverse order of the factors and a slope taken at the wrong number are named as such."""
    rng = np.random.default_rng(13)

    def case(d: int, m: int, n: int, scale: float = 1.0) -> tuple[np.ndarray, ...]:
        return (0.5 * rng.normal(size=d), rng.normal(size=(n, m)),
                scale * rng.normal(size=(d, d)) / np.sqrt(d), rng.normal(size=(m, d)) / np.sqrt(m))

    @wraps_answer(func)
    def watched(s0: np.ndarray, xs: np.ndarray, w_h: np.ndarray, w_x: np.ndarray) -> Any:
        want = _rnn_jacobian(s0, xs, w_h, w_x)
        with _autograd_refused(func.__name__):
            got = func(s0.copy(), xs.copy(), w_h.copy(), w_x.copy())
        have = np.asarray(got) if isinstance(got, np.ndarray) else None
        if have is None or have.shape != want.shape or np.allclose(have, want, rtol=_RTOL,
                                                                   atol=_ATOL):
            return got
        if np.allclose(have, want, rtol=1e-4, atol=1e-7):
            raise RuleBroken("close, but not to rounding: the chain rule by hand gives J to about "
                             "1e-15, and an estimate such as a finite difference "
                             "(s_N(s_0 + h e_i) − s_N(s_0 − h e_i)) / 2h is not accurate enough")
        if np.allclose(have.T, want, rtol=1e-6, atol=1e-9):
            raise RuleBroken("this is the transpose: the course's rows need J[i, j] = "
                             "∂s_N[j]/∂s_0[i], so that δs_N = δs_0 J (row vector on the left)")
        for slip, message in _JACOBIAN_SLIPS:
            if np.allclose(have, _rnn_jacobian_variant(s0, xs, w_h, w_x, **slip),
                           rtol=1e-6, atol=1e-9):
                raise RuleBroken(message)
        return got

    cases = [
        Case(case(3, 3, 1), "one step, d = 3"),
        Case(case(4, 4, 5), "five steps, d = 4"),
        Case(case(4, 2, 6), "inputs of size 2, state of size 4: W_x is (2, 4)"),
        Case(case(5, 5, 8, scale=3.0), "a large W_s: tanh saturates"),
        Case((np.zeros(3), np.zeros((0, 3)), np.eye(3), np.eye(3)),
             "no steps at all: s_N = s_0, the identity"),
    ]
    return check_function(watched, cases=cases, reference=_rnn_jacobian, name="rnn_jacobian",
                          rtol=_RTOL, atol=_ATOL)


def _decoder_layer_flops(t: int, s: int, d: int, d_ff: int) -> int:
    self_attention = 8 * t * d * d + 4 * t * t * d
    cross_attention = 4 * t * d * d + 4 * s * d * d + 4 * t * s * d
    return self_attention + cross_attention + 4 * t * d * d_ff


def _decoder_layer_flop_slips(t: int, s: int, d: int, d_ff: int) -> list[tuple[int, str]]:
    right = _decoder_layer_flops(t, s, d, d_ff)
    return [
        (right - 2 * t * d * d, "cross-attention's output projection W^O is missing"),
        (right - 2 * t * t * d, "the causal mask saves nothing: the masked scores are computed "
         "all the same, so self-attention's two N_tgt x N_tgt products count in full"),
        (right - 4 * (s - t) * d * d, "cross-attention's K and V are projected from the "
         "N_src source rows of M, not from the N_tgt target rows"),
        (right + 2 * (s - t) * d * d, "cross-attention's Q is projected from the N_tgt target "
         "rows (the decoder's own stream), not from the N_src source rows"),
        (right - 4 * (s - t) * d * d - 4 * t * (s - t) * d, "cross-attention reads the N_src "
         "source positions: its K and V have N_src rows, and its score matrix is N_tgt x N_src, "
         "not N_tgt x N_tgt"),
    ]


_FLOP_COUNTER_RULE = ("it uses FlopCounterMode, which counts the FLOPs for you: the answer is a "
                      "formula; FlopCounterMode is for checking yourself and is refused while "
                      "your function runs")


@contextlib.contextmanager
def _flop_counter_refused() -> Iterator[None]:
    """Within the block, entering a ``FlopCounterMode`` raises RuleBroken."""
    from torch.utils.flop_counter import FlopCounterMode

    def refuse(self: Any) -> Any:
        raise RuleBroken(_FLOP_COUNTER_RULE)

    saved = FlopCounterMode.__enter__
    FlopCounterMode.__enter__ = refuse  # type: ignore[method-assign]
    try:
        yield
    finally:
        FlopCounterMode.__enter__ = saved  # type: ignore[method-assign]


@exercise("extend")
def check_decoder_layer_flops(func: Callable[[int, int, int, int], int]) -> CheckResult:
    """``func(n_tgt, n_src, d, d_ff)``: the FLOPs of the matrix products of one decoder layer
    (batch 1, 2·m·k·n per product), 12·N_tgt·d² + 4·N_src·d² + 4·N_tgt²·d + 4·N_tgt·N_src·d
    + 4·N_tgt·d·d_ff, a Python int, as a formula: FlopCounterMode is refused while ``func``
    runs."""
    cases = [
        Case((4, 6, 8, 32), "N_tgt = 4, N_src = 6, d = 8, d_ff = 32: 9,984", expected=9984),
        Case((32, 32, 512, 2048), "N_tgt = N_src = 32, the base model's widths"),
        Case((20, 35, 512, 2048),
             "N_tgt = 20 != N_src = 35: keys and values come from the source"),
        Case((1, 100, 64, 256), "N_tgt = 1: one target position reading a long source"),
        Case((4096, 4096, 512, 2048),
             "N_tgt = N_src = 4096: the N_tgt² and N_tgt·N_src terms take over"),
    ]

    scope = getattr(inspect.unwrap(func), "__globals__", {})
    counts = "FlopCounterMode" in names_used(func) and not inspect.isfunction(
        scope.get("FlopCounterMode"))

    @wraps_answer(func)
    def watched(t: int, s: int, d: int, d_ff: int) -> Any:
        if counts:
            raise RuleBroken(_FLOP_COUNTER_RULE)
        with _flop_counter_refused():
            got = func(t, s, d, d_ff)
        if isinstance(got, numbers.Real) and got != _decoder_layer_flops(t, s, d, d_ff):
            named = [message for slip, message in _decoder_layer_flop_slips(t, s, d, d_ff)
                     if got == slip]
            if len(named) == 1:  # two slips can give the same number: then values decide
                raise RuleBroken(named[0])
        if isinstance(got, numbers.Integral) and type(got) is not int:  # compare names a float
            raise RuleBroken(f"its result has type {type(got).__name__}, and the exercise asks "
                             "for a Python int (int(...) converts a NumPy integer)")
        return got

    return check_function(watched, cases=cases, reference=_decoder_layer_flops,
                          name="decoder_layer_flops", rtol=0, atol=0)
