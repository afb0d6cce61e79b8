"""Checkers for notebook 13's exercises (decoder, cross-attention, parameter count, FLOPs)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from course_utils import attention
from course_utils.checks import Case, CheckResult, check_function
from course_utils.validation import check_int


def _causal_mask(T: int) -> np.ndarray:
    return attention.causal_mask(check_int(T, "T"), T).numpy()


def check_causal_mask(func: Callable[[int], np.ndarray]) -> CheckResult:
    """``func(T)``: boolean (T, T), True where key j ≤ query i; ValueError for T < 1."""
    cases = [
        Case((1,), "T = 1: a single position sees itself"),
        Case((4,), "T = 4: the lower triangle, diagonal included"),
        Case((7,), "T = 7"),
        Case((0,), "T = 0 is not a sequence", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_causal_mask, name="causal_mask")


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


def _transformer_params(vocab_size: int, d_model: int, d_ff: int, n_layers: int) -> int:
    from course_utils.layers import transformer_parameter_count

    return transformer_parameter_count(vocab_size, vocab_size, d_model, d_ff, n_layers, n_layers,
                                       share_embeddings=True)


def check_transformer_params(func: Callable[[int, int, int, int], int]) -> CheckResult:
    """``func(V, d_model, d_ff, n_layers)``: post-LN, shared embeddings, N + N layers."""
    cases = [
        Case((37_000, 512, 2048, 6), "the base model: 63,082,496", expected=63_082_496),
        Case((37_000, 1024, 4096, 6), "the big model"),
        Case((20, 32, 64, 2), "a tiny model"),
        Case((10, 4, 8, 1), "one layer each"),
    ]
    return check_function(func, cases=cases, reference=_transformer_params,
                          name="transformer_params", rtol=0, atol=0)


def check_layer_flops(func: Callable[[int, int], tuple[int, int]]) -> CheckResult:
    """``func(n, d)`` = ``(4·n²·d, 4·n·d²)`` as Python ints."""
    cases = [
        Case((32, 512), "translation-length sentence, d = 512"),
        Case((4096, 512), "a long context"),
        Case((64, 64), "N = d: equal cost"),
        Case((1, 3), "N = 1"),
    ]
    return check_function(func, cases=cases, reference=lambda n, d: (4 * n * n * d, 4 * n * d * d),
                          name="layer_flops", rtol=0, atol=0, names=("attention", "recurrent"))
