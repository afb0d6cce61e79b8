"""Notebook 13's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import scipy.special
import torch
from checker_table import right, table_test, wrong
from torch.utils.flop_counter import FlopCounterMode

from course_utils import attention, layers
from course_utils.checks import nb13


def decoder_masks(tgt_mask, src_mask, key_padding="keys", upper=False, causal_cross=False,
                  expand=True):
    b, t = tgt_mask.shape
    s = src_mask.shape[1]
    i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
    causal = j >= i if upper else j <= i
    if key_padding == "keys":
        self_mask = causal & tgt_mask[:, None, :]
    elif key_padding == "queries":  # the padding mask laid along the rows instead
        self_mask = causal & tgt_mask[:, :, None]
    else:
        self_mask = causal.expand(b, t, t)
    cross_mask = src_mask[:, None, :]
    if causal_cross:
        cross_mask = cross_mask & attention.causal_mask(t, s)
    return self_mask, cross_mask.expand(b, t, s) if expand else cross_mask


def decoder_masks_by_loops(tgt_mask, src_mask):
    (b, t), s = tgt_mask.shape, src_mask.shape[1]
    self_mask = torch.zeros(b, t, t, dtype=torch.bool)
    cross_mask = torch.zeros(b, t, s, dtype=torch.bool)
    for n in range(b):
        for i in range(t):
            for j in range(t):
                self_mask[n, i, j] = j <= i and bool(tgt_mask[n, j])
            cross_mask[n, i] = src_mask[n]
    return self_mask, cross_mask


def cross_attention(x, memory, w_q, w_k, w_v, kv_from=None, scale=True, stable=True):
    if x.shape[-1] != memory.shape[-1]:
        raise ValueError(f"x has {x.shape[-1]} features but memory has {memory.shape[-1]}")
    source = memory if kv_from is None else kv_from(x, memory)
    q, k, v = x @ w_q, source @ w_k, source @ w_v
    scores = q @ k.T / (np.sqrt(q.shape[-1]) if scale else 1.0)
    if not stable:
        return np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True) @ v
    return scipy.special.softmax(scores, axis=-1) @ v


def swiglu_ffn(d_model, d_ff, multiple_of, share=2, rounding="up", floor=True, matrices=3):
    width = share * d_ff // 3 if floor else math.ceil(share * d_ff / 3)
    if rounding == "up":
        width = -(-width // multiple_of) * multiple_of
    elif rounding == "down":
        width = width // multiple_of * multiple_of
    elif rounding == "always":  # one multiple more even when the width is one already
        width = (width // multiple_of + 1) * multiple_of
    return width, matrices * d_model * width


def swiglu_ffn_by_search(d_model, d_ff, multiple_of):
    width = 0
    while 3 * d_model * (width + 1) <= 2 * d_model * d_ff:  # one more still fits
        width += 1
    while width % multiple_of:
        width += 1
    return width, 3 * d_model * width


def decoder_layer_flops(t, s, d, d_ff, kv_length=None, cross=True, ffn_matrices=2,
                        projections=True, cross_output=True, per_multiply_add=2):
    kv = s if kv_length is None else kv_length(t, s)
    flops = (8 * t * d * d if projections else 0) + 4 * t * t * d
    if cross:
        if projections:
            flops += 2 * t * d * d + (2 * t * d * d if cross_output else 0) + 4 * kv * d * d
        flops += 4 * t * kv * d
    flops += 2 * ffn_matrices * t * d * d_ff
    return flops * per_multiply_add // 2


def decoder_layer_flops_counted(t, s, d, d_ff):
    config = layers.TransformerConfig(d_model=d, n_heads=1, d_ff=d_ff)
    layer = layers.DecoderLayer(config).to("meta").eval()  # shapes only, no numbers
    x, memory = torch.zeros(1, t, d, device="meta"), torch.zeros(1, s, d, device="meta")
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        layer(x, memory)
    return counter.get_total_flops()


ROWS = [
    *right(nb13.check_decoder_masks, worked=decoder_masks, loops=decoder_masks_by_loops),
    *wrong(
        nb13.check_decoder_masks,
        causal_cross=(lambda t, s: decoder_masks(t, s, causal_cross=True),
                      "T = S = 4, no padding: cross-attention is still not causal: cross_mask: "
                      "values differ in 12 of 32 entries of shape (2, 4, 4)"),
        no_target_padding=(lambda t, s: decoder_masks(t, s, key_padding=None),
                           "T = 3, S = 5, padding in the second target and the first source: "
                           "self_mask: values differ in 1 of 18 entries of shape (2, 3, 3), "
                           "the first at [1, 2, 2]; the worst at [1, 2, 2]: expected False, "
                           "got True"),
        padded_queries=(lambda t, s: decoder_masks(t, s, key_padding="queries"),
                        "self_mask: values differ in 2 of 18 entries of shape (2, 3, 3), the "
                        "first at [1, 2, 0]"),
        upper_triangle=(lambda t, s: decoder_masks(t, s, upper=True),
                        "self_mask: values differ in 10 of 18 entries"),
        broadcast_only=(lambda t, s: decoder_masks(t, s, expand=False),
                        "cross_mask: shape: expected (2, 3, 5), got (2, 1, 5)"),
        pytorch_convention=(lambda t, s: tuple(~m for m in decoder_masks(t, s)),
                            "T = 1: one target position: self_mask: values differ: expected "
                            "[[[True]]], got [[[False]]]"),
        swapped=(lambda t, s: decoder_masks(t, s)[::-1],
                 "self_mask: shape: expected (2, 3, 3), got (2, 3, 5)"),
        integers=(lambda t, s: tuple(m.long() for m in decoder_masks(t, s)),
                  "self_mask: dtype: expected torch.bool, got torch.int64"),
    ),
    *right(nb13.check_cross_attention, worked=cross_attention),
    *wrong(
        nb13.check_cross_attention,
        self_attention=(lambda *args: cross_attention(*args, kv_from=lambda x, m: x),
                        "T = 3, S = 5: values differ"),
        unscaled=(lambda *args: cross_attention(*args, scale=False), "T = 3, S = 5: values differ"),
        naive_softmax=(lambda *args: cross_attention(*args, stable=False),
                       "large scores: the softmax must not overflow: values differ"),
    ),
    *right(nb13.check_swiglu_ffn, worked=swiglu_ffn, search=swiglu_ffn_by_search),
    *wrong(
        nb13.check_swiglu_ffn,
        relu_width=(lambda *args: swiglu_ffn(*args, share=3),
                    "LLaMA-7B: d_ff = 11,008: width: values differ: expected 11008, got 16384"),
        not_rounded=(lambda *args: swiglu_ffn(*args, rounding=None),
                     "width: values differ: expected 11008, got 10922"),
        rounded_down=(lambda *args: swiglu_ffn(*args, rounding="down"),
                      "width: values differ: expected 11008, got 10752"),
        one_multiple_too_many=(lambda *args: swiglu_ffn(*args, rounding="always"),
                               "2/3 of 3072 = 2048 is a multiple of 256 already: width: values "
                               "differ: expected 2048, got 2304"),
        ceiling=(lambda *args: swiglu_ffn(*args, floor=False),
                 "the base model's FFN, no rounding: 2/3 of 2048 is not whole: width: values "
                 "differ: expected 1365, got 1366"),
        two_matrices=(lambda *args: swiglu_ffn(*args, matrices=2),
                      "parameters: values differ: expected 135266304, got 90177536"),
        float_width=(lambda d, d_ff, m: (math.ceil(2 * d_ff / 3 / m) * m * 1.0,
                                         3 * d * math.ceil(2 * d_ff / 3 / m) * m),
                     "width: expected an integer, got float 11008.0"),
        a_list=(lambda *args: list(swiglu_ffn(*args)),
                "expected a tuple of 2 items (width, parameters), got list"),
    ),
    *right(nb13.check_decoder_layer_flops, worked=decoder_layer_flops,
           counted=decoder_layer_flops_counted),
    *wrong(
        nb13.check_decoder_layer_flops,
        keys_from_target=(lambda *args: decoder_layer_flops(*args, kv_length=lambda t, s: t),
                          "T = 20 != S = 35: keys and values come from the source: values "
                          "differ: expected 185753600, got 169410560"),
        no_cross_attention=(lambda *args: decoder_layer_flops(*args, cross=False),
                            "T = 4, S = 6, d = 8, d_ff = 32: 9,984: values differ: expected "
                            "9984, got 6656"),
        one_ffn_product=(lambda *args: decoder_layer_flops(*args, ffn_matrices=1),
                         "expected 9984, got 7936"),
        mixing_only=(lambda *args: decoder_layer_flops(*args, projections=False, ffn_matrices=0),
                     "expected 9984, got 1280"),
        no_cross_output=(lambda *args: decoder_layer_flops(*args, cross_output=False),
                         "expected 9984, got 9472"),
        multiply_adds=(lambda *args: decoder_layer_flops(*args, per_multiply_add=1),
                       "expected 9984, got 4992"),
        math_pow=(lambda t, s, d, d_ff: 12 * t * math.pow(d, 2) + decoder_layer_flops(t, s, d, d_ff)
                  - 12 * t * d * d,
                  "expected an integer, got float 9984.0"),
    ),
]

test_checker = table_test(ROWS)
