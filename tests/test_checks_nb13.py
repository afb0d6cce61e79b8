"""Notebook 13's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import scipy.special
import torch
from checker_table import right, table_test, wrong

from course_utils.checks import nb13
from course_utils.layers import transformer_parameter_count


def causal_mask(T, k=0, make=np.ones, dtype=bool):
    if T < 1:
        raise ValueError(f"T must be at least 1, got {T}")
    return np.tril(make((T, T), dtype=dtype), k)


def causal_mask_by_comparison(T):
    if T < 1:
        raise ValueError(f"T must be at least 1, got {T}")
    return np.arange(T)[None, :] <= np.arange(T)[:, None]


def cross_attention(x, memory, w_q, w_k, w_v, kv_from=None, scale=True, stable=True):
    if x.shape[-1] != memory.shape[-1]:
        raise ValueError(f"x has {x.shape[-1]} features but memory has {memory.shape[-1]}")
    source = memory if kv_from is None else kv_from(x, memory)
    q, k, v = x @ w_q, source @ w_k, source @ w_v
    scores = q @ k.T / (np.sqrt(q.shape[-1]) if scale else 1.0)
    if not stable:
        return np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True) @ v
    return scipy.special.softmax(scores, axis=-1) @ v


def transformer_params(vocab_size, d_model, d_ff, n_layers, cross=True, biases=True):
    d = d_model
    attention = 4 * d * d + biases * 4 * d
    ffn = 2 * d * d_ff + biases * (d_ff + d)
    encoder = attention + ffn + 4 * d
    decoder = (1 + cross) * attention + ffn + (4 + 2 * cross) * d
    return n_layers * (encoder + decoder) + vocab_size * d


ROWS = [
    *right(nb13.check_causal_mask, worked=causal_mask_by_comparison, tril=causal_mask),
    *wrong(
        nb13.check_causal_mask,
        ones_as_floats=(lambda T: causal_mask(T, dtype=float),
                        "T = 1: a single position sees itself: dtype: expected bool entries "
                        "(bool), got float64"),
        integers=(lambda T: causal_mask(T, dtype=np.int64),
                  "dtype: expected bool entries (bool), got int64"),
        upper=(lambda T: causal_mask(T).T, "T = 4: the lower triangle, diagonal included: values "
               "differ"),
        no_diagonal=(lambda T: causal_mask(T, k=-1), "T = 1: a single position sees itself: "
                     "values differ: expected [[True]], got [[False]]"),
        a_tensor=(lambda T: torch.from_numpy(causal_mask(T)),
                  "expected a numpy.ndarray, got torch.Tensor"),
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
    *right(nb13.check_transformer_params, worked=transformer_params,
           course_utils=lambda v, d, ff, n: transformer_parameter_count(v, v, d, ff, n, n,
                                                                        share_embeddings=True)),
    *wrong(
        nb13.check_transformer_params,
        no_cross_attention=(lambda *args: transformer_params(*args, cross=False),
                            "the base model: 63,082,496: values differ: expected 63082496, got "
                            "56772608 (|error| 6309888)"),
        no_biases=(lambda *args: transformer_params(*args, biases=False),
                   "the base model: 63,082,496: values differ"),
        a_float=(lambda *args: transformer_params(*args) / 1.0,
                 "expected an integer, got float 63082496.0"),
    ),
    *right(nb13.check_layer_flops, worked=lambda n, d: (4 * n * n * d, 4 * n * d * d)),
    *wrong(
        nb13.check_layer_flops,
        math_pow=(lambda n, d: (4 * math.pow(n, 2) * d, 4 * n * math.pow(d, 2)),
                  "attention: expected an integer, got float 2097152.0"),
        swapped=(lambda n, d: (4 * n * d * d, 4 * n * n * d),
                 "attention: values differ: expected 2097152, got 33554432"),
        halved=(lambda n, d: (2 * n * n * d, 2 * n * d * d), "attention: values differ"),
        a_list=(lambda n, d: [4 * n * n * d, 4 * n * d * d],
                "expected a tuple of 2 items (attention, recurrent), got list"),
    ),
]

test_checker = table_test(ROWS)
