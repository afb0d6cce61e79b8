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
    cross_mask = cross_mask & attention.causal_mask(t, s) if causal_cross else cross_mask
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


@exercise("predict")
def check_big_model_embedding_share(answer: object, *, show_answer: bool = False) -> CheckResult:
    """The shared 37,000 × 1024 embedding's share of the big model (d_model 1024, d_ff 4096,
    6 + 6 layers), in percent, within 0.2 points: 37.89 M of 214.25 M, 17.7%."""
    def millions(attentions: int = 2, embeddings: int = 1) -> float:  # section 6's formula
        attn, ffn, norm = 4 * 1024**2 + 4 * 1024, 2 * 1024 * 4096 + 4096 + 1024, 2 * 1024
        return (6 * (attn + ffn + 2 * norm + attentions * attn + ffn + 3 * norm)
                + embeddings * 37_000 * 1024) / 1e6
    share = 100 * 37.888 / millions()
    mistakes = {100 * 18.944 / 63.082496: "that is the base model's share (18.94 of 63.08 M)",
                share / 100: "that is a fraction; the answer is asked in percent",
                100 * 37.888 / millions(attentions=1): "a decoder layer has two attentions",
                300 * 37.888 / millions(embeddings=3): "the vocabulary is shared: one V x d in all",
                100 * 37.888 / millions(embeddings=0): "that divides by the layers alone"}
    explanation = ("37.89 M of 214.25 M: the encoder layers hold 75.58 M, the decoder layers (two "
                   "attentions each) 100.78 M. Doubling d doubles V · d but about quadruples the "
                   "layers (d², d · d_ff), so the share falls from 30.0%; the heads add nothing.")
    hint = "evaluate section 6's three parts for the big model, divide the embedding by their sum"
    return check_number(answer, share, name="big_model_embedding_share", label="the embedding's "
                        "share of the big model, in percent", explanation=explanation, hint=hint,
                        mistakes=mistakes, rtol=0.0, atol=0.2, show_answer=show_answer)


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
        result.cases.append(CaseResult("to rounding", False, "close, but not to rounding: a "
                                       "finite difference is not accurate enough"))
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
