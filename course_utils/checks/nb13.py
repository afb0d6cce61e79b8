"""Checkers for notebook 13 (decoder masks, the big model's size, an RNN's Jacobian, FLOPs)."""

from collections.abc import Callable
from functools import partial, reduce

import numpy as np
import torch

from course_utils import attention
from course_utils.checks import Case, CheckResult, check_function, check_number, exercise
from course_utils.checks.results import CaseResult


def _masks(tgt_mask, src_mask, *, tri="tril", diagonal=0, keys=True, rows=False, src_keys=True,
           causal_cross=False, invert=False):  # the options make a learner's slips
    (b, t), s = tgt_mask.shape, src_mask.shape[1]
    pad = (tgt_mask[:, None, :] if keys else True) & (tgt_mask[:, :, None] if rows else True)
    self_mask = (getattr(torch.ones(t, t, dtype=torch.bool), tri)(diagonal) & pad).expand(b, t, t)
    cross_mask = (src_mask if src_keys else torch.ones_like(src_mask))[:, None, :].expand(b, t, s)
    if causal_cross:  # True: aligned bottom-right (the course's), "top-left": tril of (t, s)
        causal = (torch.ones(t, s, dtype=torch.bool).tril() if causal_cross == "top-left"
                  else attention.causal_mask(t, s))
        cross_mask = cross_mask & causal
    return (~self_mask, ~cross_mask) if invert else (self_mask, cross_mask)


_ROWS = "self_mask blanks the whole row of a padded query: only keys are masked (the last axis)"
_MASK_MISTAKES: dict[str, Callable] = {
    "self_mask lets query i read key i + 1, the token it has to predict (look at the diagonal "
    "the triangle starts from)": partial(_masks, diagonal=1),
    "self_mask lets query i read keys j > i (the upper triangle)": partial(_masks, tri="triu"),
    _ROWS: partial(_masks, keys=False, rows=True),
    _ROWS + "; every query keeps its row": partial(_masks, rows=True),
    "self_mask lets queries read padded target keys (the last axis)": partial(_masks, keys=False),
    "cross_mask lets target positions read padded source keys": partial(_masks, src_keys=False),
    "cross_mask is causal: every real source token may be read": partial(_masks, causal_cross=True),
    "cross_mask is causal (a lower triangle): every real source token may be read":
        partial(_masks, causal_cross="top-left"),
    "both masks are inverted: here True = may attend": partial(_masks, invert=True),
    "still the bug: these are the given function's masks, which let a query read the token it "
    "must predict": partial(_masks, diagonal=1, keys=False, rows=True)}


@exercise("debug")
def check_decoder_masks(func: Callable) -> CheckResult:
    """``func(tgt_mask, src_mask)``, (B, N_tgt), (B, N_src), True = real token: self-attention's
    mask (B, N_tgt, N_tgt), causal, and cross-attention's (B, N_tgt, N_src), no padded keys."""
    cases = [Case((attention.token_mask(tgt, n_tgt), attention.token_mask(src, n_src)), label)
             for tgt, n_tgt, src, n_src, label in [
        ([3, 2], 3, [3, 5], 5, "N_tgt = 3, N_src = 5, a padded target and a padded source"),
        ([4, 4], 4, [4, 4], 4, "N_tgt = N_src = 4, no padding: cross-attention is not causal"),
        ([4, 2, 3], 4, [4, 1, 4], 4, "N_tgt = N_src = 4, three sentences"),
        ([1], 1, [3], 6, "N_tgt = 1"), ([5, 3], 5, [2, 1], 2, "N_tgt = 5 > N_src = 2")]]
    return check_function(func, cases=cases, reference=_masks, mistakes=_MASK_MISTAKES,
                          names=("self_mask", "cross_mask"), exact_dtype=True, name="decoder_masks")


def _width_for_share(share: float = 0.1, *, d2: int = 168, d1: int = 192, vocab: int = 37_000,
                     embeddings: int = 1, of_layers: bool = False,
                     d_ff: int | None = None) -> float:
    """The d_model at which ``embeddings`` V x d matrices are ``share`` of section 6's total,
    d2·d² + d1·d + embeddings·V·d (6 + 6 layers, d_ff = 4d: 168 d² + 192 d); or a slip: the
    share of the layers alone, or d_ff fixed (the layers then hold about 72 d² + (24 d_ff + 144)
    d)."""
    if d_ff is not None:
        d2, d1 = 72, 24 * d_ff + 144
    e = embeddings * vocab
    return (e / share - (0 if of_layers else e) - d1) / d2


@exercise("predict")
def check_embedding_share_width(answer: object, *, show_answer: bool = False) -> CheckResult:
    """The d_model at which the shared 37,000 x d embedding is 10% of the parameters, with
    d_ff = 4 d_model and 6 + 6 layers: 168 d² + 192 d + V d, V / (168 d + 192 + V) = 0.1,
    d = (9 V - 192) / 168 = 1981.0, within 2%."""
    mistakes = {
        _width_for_share(d2=144, d1=168): "a decoder layer has two attentions: 16 d² per "
                                          "decoder layer, 12 d² per encoder layer",
        _width_for_share(d2=72, d1=132): "the feed-forward networks are missing: 8 d² of each "
                                         "layer's parameters (d_ff = 4d)",
        _width_for_share(d2=120, d1=192): "each feed-forward network has two d x d_ff matrices, "
                                          "8 d² with d_ff = 4d",
        _width_for_share(embeddings=3): "the vocabulary is shared: one V x d matrix in all",
        _width_for_share(of_layers=True): "that makes the embedding 10% of the layers alone; "
                                          "the total includes the embedding",
        _width_for_share(d_ff=2048): "that keeps d_ff = 2048; the question widens it with d, "
                                     "d_ff = 4 d_model",
        3 * 512: "the share does not fall like 1/d: the embedding is part of the total, "
                 "V / (168 d + 192 + V)"}
    explanation = ("with d_ff = 4d an encoder layer holds 12 d² + 13 d, a decoder layer (two "
                   "attentions) 16 d² + 19 d: 168 d² + 192 d in the 6 + 6 layers, and V d in the "
                   "embedding. The share V / (168 d + 192 + V) is 1/10 at 168 d = 9 V - 192, "
                   "d ≈ 1981 (without the d terms 1982: the d² terms decide). It is 30.0% at the "
                   "base model's d = 512 and 17.7% at the big model's d = 1024")
    hint = ("write section 6's total as a function of d alone (d_ff = 4d): a d² part, a d part "
            "and V d; divide V d by it and set the share to 1/10")
    return check_number(answer, _width_for_share(), name="embedding_share_width",
                        label="d_model at which the embedding is 10% of the parameters",
                        explanation=explanation, hint=hint, mistakes=mistakes, rtol=0.02,
                        show_answer=show_answer)


def _jacobian(s0, xs, w_s, w_x, *, at="output", scaled="columns", order=1, transpose=False):
    s, factors = np.asarray(s0, dtype=np.float64), []
    for x_t in xs:
        pre = s @ w_s + x_t @ w_x
        c = 1 - {"output": np.tanh(pre), "previous": s, "pre": pre, "none": 0 * s}[at] ** 2
        factors.append(w_s * (c[None, :] if scaled == "columns" else c[:, None]))
        s = np.tanh(pre)
    jac = reduce(np.matmul, factors[::order], np.eye(len(s0)))
    return jac.T if transpose else jac


_jac = partial(partial, _jacobian)  # _jac(at="pre"): the Jacobian with a learner's slip
_JACOBIAN_MISTAKES = {
    "this is the transpose: J[i, j] = ∂s_N[j]/∂s_0[i], δs_N = δs_0 J": _jac(transpose=True),
    "the one-step matrices are in the reverse order: δs_N = δs_0 J_1 J_2 ⋯ J_N": _jac(order=-1),
    "the tanh slope is taken at the previous state s_{t−1}; it is 1 − s_t²": _jac(at="previous"),
    "the tanh slope is 1 − a² of the pre-activation a; it is 1 − s_t²": _jac(at="pre"),
    "the slopes scale the rows of W_s (c[:, None]); they scale its columns": _jac(scaled="rows"),
    "the tanh slope is missing: that is W_s^N, N linear steps": _jac(at="none")}


@exercise("derive")
def check_rnn_jacobian(func: Callable) -> CheckResult:
    """``func(s0, xs, w_s, w_x)``: for s_t = tanh(s_{t−1} W_s + x_t W_x), J = J_1 ⋯ J_N with
    J_t = W_s diag(1 − s_t²), J[i, j] = ∂s_N[j]/∂s_0[i], (d, d), to rounding (rtol 1e-11)."""
    rng = np.random.default_rng(13)
    cases = [Case((0.5 * rng.normal(size=d), rng.normal(size=(n, m)), scale * rng.normal(
        size=(d, d)) / np.sqrt(d), rng.normal(size=(m, d)) / np.sqrt(m)), label)
        for d, m, n, scale, label in [
            (3, 3, 1, 1, "one step, d = 3"), (4, 4, 5, 1, "five steps, d = 4"),
            (4, 2, 6, 1, "inputs of size 2, state of size 4: W_x is (2, 4)"),
            (5, 5, 8, 3, "a large W_s: tanh saturates")]]
    cases.append(Case((np.zeros(3), np.zeros((0, 3)), np.eye(3), np.eye(3)), "no steps: identity"))
    check = partial(check_function, func, cases=cases, reference=_jacobian, name="rnn_jacobian")
    result = check(rtol=1e-11, atol=1e-13, mistakes=_JACOBIAN_MISTAKES,
                   shortcuts=("jacobian", "jacrev", "jacfwd", "backward", "grad", "vjp"))
    if result.cases and not result.passed and check(rtol=1e-4, atol=1e-7, verbose=False).passed:
        result.cases.append(CaseResult("to rounding", False, "close (within 1e-4), but not to "
                                       "rounding: an estimate such as a finite difference is not "
                                       "accurate enough; the chain rule gives J exactly"))
        print(f"  ✗ to rounding: {result.cases[-1].message}")
    return result


def _flops(t: int, s: int, d: int, d_ff: int) -> int:
    return 12 * t * d * d + 4 * s * d * d + 4 * t * t * d + 4 * t * s * d + 4 * t * d * d_ff


def _slip(less: Callable[[int, int, int], int], *, twin: bool = False) -> Callable:
    # None names nothing: the twins give the same count where N_tgt = 2 (N_src − N_tgt)
    return lambda t, s, d, f: None if twin and t == 2 * (s - t) else _flops(t, s, d, f) - less(
        t, s, d)


_FLOP_MISTAKES = {
    "cross-attention's W^O is missing": _slip(lambda t, s, d: 2 * t * d * d, twin=True),
    "cross-attention's W^O is missing, or its K and V are projected from the N_tgt target rows "
    "instead of the N_src source rows (here both slips give this count)":
        lambda t, s, d, f: _flops(t, s, d, f) - 2 * t * d * d if t == 2 * (s - t) else None,
    "cross-attention is missing: a decoder layer has masked self-attention, cross-attention and "
    "the feed-forward network": lambda t, s, d, f: _flops(t, s, d, f) - 4 * (t + s) * d * d
    - 4 * t * s * d,
    "the feed-forward network has two products, (N_tgt x d)(d x d_ff) and back":
        lambda t, s, d, f: _flops(t, s, d, f) - 2 * t * d * f,
    "that counts multiply-adds: section 7 counts a multiply and an add as 2 FLOPs":
        lambda t, s, d, f: _flops(t, s, d, f) // 2,
    "the causal mask saves nothing: the masked scores are computed all the same":
        _slip(lambda t, s, d: 2 * t * t * d),
    "cross-attention's K and V are projected from the N_src source rows of M, not the N_tgt "
    "target rows": _slip(lambda t, s, d: 4 * (s - t) * d * d, twin=True),
    "cross-attention's Q is projected from the N_tgt target rows, not the N_src source rows":
        _slip(lambda t, s, d: -2 * (s - t) * d * d),
    "cross-attention reads the N_src source positions: its K and V have N_src rows, and its "
    "score matrix is N_tgt x N_src": _slip(lambda t, s, d: 4 * (s - t) * (d + t) * d)}


@exercise("extend")
def check_decoder_layer_flops(func: Callable) -> CheckResult:
    """``func(n_tgt, n_src, d, d_ff)``: the FLOPs of one decoder layer's matrix products (batch 1,
    2·m·k·n each), 12·N_tgt·d² + 4·N_src·d² + 4·N_tgt²·d + 4·N_tgt·N_src·d + 4·N_tgt·d·d_ff."""
    cases = [Case((4, 6, 8, 32), "N_tgt = 4, N_src = 6, d = 8, d_ff = 32: 9,984", expected=9984)]
    cases += [Case(args, label) for args, label in [
        ((32, 32, 512, 2048), "N_tgt = N_src = 32"), ((1, 100, 64, 256), "N_tgt = 1, N_src = 100"),
        ((20, 35, 512, 2048), "N_tgt = 20 != N_src = 35: keys and values come from the source"),
        ((4096, 4096, 512, 2048), "N_tgt = N_src = 4096: the N_tgt² terms take over")]]
    return check_function(func, cases=cases, reference=_flops, name="decoder_layer_flops", rtol=0,
                          atol=0, mistakes=_FLOP_MISTAKES, shortcuts=("FlopCounterMode",))
