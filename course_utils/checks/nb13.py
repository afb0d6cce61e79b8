"""Checkers for notebook 13's exercises (decoder masks, cross-attention, SwiGLU width, FLOPs)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from course_utils import attention
from course_utils.checks import Case, CheckResult, check_function


def _decoder_masks(tgt_mask: torch.Tensor, src_mask: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    (b, t), s = tgt_mask.shape, src_mask.shape[1]
    self_mask = attention.causal_mask(t, t) & tgt_mask[:, None, :]
    return self_mask, src_mask[:, None, :].expand(b, t, s)


def _lengths(lengths: list[int], longest: int) -> torch.Tensor:
    return attention.padding_mask(lengths, longest)


def check_decoder_masks(func: Callable[..., tuple[torch.Tensor, torch.Tensor]]) -> CheckResult:
    """``func(tgt_mask, src_mask)``: padding masks (B, T) and (B, S), True = real token, to the
    boolean masks (True = may attend) of the decoder's self-attention, causal and without padded
    keys, (B, T, T), and of its cross-attention, without padded source keys, (B, T, S)."""
    cases = [
        Case((_lengths([3, 2], 3), _lengths([3, 5], 5)),
             "T = 3, S = 5, padding in the second target and the first source"),
        Case((_lengths([4, 4], 4), _lengths([4, 4], 4)),
             "T = S = 4, no padding: cross-attention is still not causal"),
        Case((_lengths([4, 2, 3], 4), _lengths([4, 1, 4], 4)), "T = S = 4, three sentences"),
        Case((_lengths([1], 1), _lengths([3], 6)), "T = 1: one target position"),
        Case((_lengths([5, 3], 5), _lengths([2, 1], 2)), "T = 5 > S = 2"),
    ]
    return check_function(func, cases=cases, reference=_decoder_masks, name="decoder_masks",
                          names=("self_mask", "cross_mask"), exact_dtype=True)


def _cross_attention(x, memory, w_q, w_k, w_v):
    if x.shape[-1] != memory.shape[-1]:
        raise ValueError("x and memory must have the same number of features")
    q, k, v = (torch.from_numpy(a) for a in (x @ w_q, memory @ w_k, memory @ w_v))
    return attention.scaled_dot_product_attention(q, k, v)[0].numpy()


def check_cross_attention(func: Callable[..., np.ndarray]) -> CheckResult:
    """``func(x, memory, w_q, w_k, w_v)``: one head, Q from x, K and V from memory."""
    rng = np.random.default_rng(13)
    d, d_k, d_v = 6, 4, 3

    def weights():
        return (rng.normal(size=(d, d_k)), rng.normal(size=(d, d_k)), rng.normal(size=(d, d_v)))

    cases = [
        Case((rng.normal(size=(3, d)), rng.normal(size=(5, d)), *weights()), "T = 3, S = 5"),
        Case((rng.normal(size=(4, d)), rng.normal(size=(4, d)), *weights()),
             "T = S = 4, memory differs from x"),
        Case((rng.normal(size=(1, d)), rng.normal(size=(2, d)), *weights()), "T = 1"),
        Case((30 * rng.normal(size=(2, d)), 30 * rng.normal(size=(3, d)), *weights()),
             "large scores: the softmax must not overflow"),
        Case((rng.normal(size=(2, d)), rng.normal(size=(3, d + 1)), *weights()),
             "feature sizes of x and memory differ", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_cross_attention, name="cross_attention")


def _swiglu_ffn(d_model: int, d_ff: int, multiple_of: int) -> tuple[int, int]:
    width = 2 * d_ff // 3  # the largest w with 3·d·w <= 2·d·d_ff
    width = -(-width // multiple_of) * multiple_of  # rounded up to a multiple
    return width, 3 * d_model * width


def check_swiglu_ffn(func: Callable[[int, int, int], tuple[int, int]]) -> CheckResult:
    """``func(d_model, d_ff, multiple_of)`` = ``(width, parameters)``: the width of the bias-free
    SwiGLU FFN with the most weights not above a bias-free ReLU FFN of width d_ff, ⌊2·d_ff/3⌋,
    rounded up to a multiple of ``multiple_of``, and its 3·d_model·width weights."""
    cases = [
        Case((4096, 16_384, 256), "LLaMA-7B: d_ff = 11,008", expected=(11_008, 135_266_304)),
        Case((5120, 20_480, 256), "LLaMA-13B"),
        Case((8192, 32_768, 256), "LLaMA-65B"),
        Case((512, 2048, 1), "the base model's FFN, no rounding: 2/3 of 2048 is not whole"),
        Case((768, 3072, 256), "2/3 of 3072 = 2048 is a multiple of 256 already"),
        Case((64, 96, 1), "d_ff = 1.5·d_model"),
        Case((8, 32, 64), "a multiple larger than the width itself"),
    ]
    return check_function(func, cases=cases, reference=_swiglu_ffn, name="swiglu_ffn",
                          names=("width", "parameters"), rtol=0, atol=0)


def _decoder_layer_flops(t: int, s: int, d: int, d_ff: int) -> int:
    self_attention = 8 * t * d * d + 4 * t * t * d
    cross_attention = 4 * t * d * d + 4 * s * d * d + 4 * t * s * d
    return self_attention + cross_attention + 4 * t * d * d_ff


def check_decoder_layer_flops(func: Callable[[int, int, int, int], int]) -> CheckResult:
    """``func(t, s, d, d_ff)``: the FLOPs of the matrix products of one decoder layer (batch 1,
    2·m·k·n per product), 12·T·d² + 4·S·d² + 4·T²·d + 4·T·S·d + 4·T·d·d_ff, a Python int."""
    cases = [
        Case((4, 6, 8, 32), "T = 4, S = 6, d = 8, d_ff = 32: 9,984", expected=9984),
        Case((32, 32, 512, 2048), "T = S = 32, the base model's widths"),
        Case((20, 35, 512, 2048), "T = 20 != S = 35: keys and values come from the source"),
        Case((1, 100, 64, 256), "T = 1: one target position reading a long source"),
        Case((4096, 4096, 512, 2048), "T = S = 4096: the T² and T·S terms take over"),
    ]
    return check_function(func, cases=cases, reference=_decoder_layer_flops,
                          name="decoder_layer_flops", rtol=0, atol=0)
