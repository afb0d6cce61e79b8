"""Checkers for notebook 15 (today's language models): RoPE, the KV cache's size, top-p, and
the key/value heads of grouped-query attention."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from course_utils import language_model, positional, sampling
from course_utils.checks import Case, CheckResult, check_function, randn


def _rope(x: np.ndarray, pos: int, base: float = 10000.0) -> np.ndarray:
    return positional.apply_rope(torch.from_numpy(x)[None], [pos], base)[0].numpy()


def check_rope(func: Callable) -> CheckResult:
    """``func(x, pos, base=10000.0)``: the float64 vector ``x`` (d,) at position ``pos`` with
    each pair ``(x[2i], x[2i+1])`` turned by ``pos · base^(-2i/d)``; ValueError for an odd d."""
    x8 = np.array([0.5, -1.0, 2.0, 0.25, -0.75, 1.5, 1.0, -2.0])
    cases = [
        Case((np.array([1.0, 0.0]), 1), "d = 2, position 1: (cos 1, sin 1)",
             expected=np.array([np.cos(1.0), np.sin(1.0)])),
        Case((np.array([1.0, 2.0, 3.0, 4.0]), 0), "position 0 changes nothing"),
        Case((x8, 3), "d = 8 at position 3"),
        Case((x8, 1000), "d = 8 at position 1000: the slow pairs turn too"),
        Case((x8, 7), "another base", kwargs={"base": 100.0}),
        Case((np.ones(5), 1), "d = 5 is odd: the features do not pair up", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_rope, name="rope", rtol=1e-9,
                          atol=1e-12)


def _kv_cache_bytes(n_layers: int, n_heads: int, n_kv_heads: int, head_dim: int,
                    n_tokens: int, dtype: torch.dtype) -> int:
    return language_model.kv_cache_bytes(n_layers, n_kv_heads, head_dim, n_tokens, dtype.itemsize)


def check_kv_cache_bytes(func: Callable) -> CheckResult:
    """``func(n_layers, n_heads, n_kv_heads, head_dim, n_tokens, dtype)``: the bytes (an int) of
    the keys and values of ``n_tokens`` tokens stored as ``dtype`` (a torch dtype)."""
    cases = [
        Case((32, 32, 8, 128, 1, torch.bfloat16), "32 layers, 8 KV heads of 128, bfloat16: "
             "128 KiB per token", expected=131_072),
        Case((32, 32, 8, 128, 8192, torch.bfloat16), "the same model, 8,192 tokens"),
        Case((32, 32, 32, 128, 4096, torch.float16), "32 KV heads (no grouping), 4,096 tokens"),
        Case((80, 64, 8, 128, 1, torch.bfloat16), "80 layers, 64 query heads, 8 KV heads"),
        Case((2, 4, 1, 16, 100, torch.float32), "multi-query attention in float32"),
        Case((4, 8, 2, 64, 10, torch.float8_e4m3fn), "a float8 cache: one byte per number"),
    ]
    return check_function(func, cases=cases, reference=_kv_cache_bytes, name="kv_cache_bytes")


def _top_p_probs(logits: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    return sampling.filter_probs(torch.from_numpy(logits), temperature, top_p=top_p).numpy()


def check_top_p(func: Callable) -> CheckResult:
    """``func(logits, temperature, top_p)``: the float64 distribution ``softmax(logits / T)``
    cut to the smallest set of most probable tokens whose total reaches ``top_p`` (never fewer
    than one) and renormalised; ValueError for ``top_p`` outside (0, 1]."""
    four = np.log(np.array([0.5, 0.1, 0.25, 0.15]))
    ordered = np.log(np.array([0.4, 0.3, 0.2, 0.1]))
    ten = np.array([1.2, -0.3, 2.5, 0.0, 0.7, -1.1, 1.9, 0.4, -2.0, 1.0])
    cases = [
        Case((four, 1.0, 0.8), "0.5 + 0.25 = 0.75 < 0.8: the 0.15 that crosses 0.8 stays",
             expected=np.array([0.5, 0.0, 0.25, 0.15]) / 0.9),
        Case((four, 1.0, 0.3), "0.5 alone reaches 0.3: one token left"),
        Case((four, 1.0, 1.0), "top_p = 1 keeps everything"),
        Case((ordered, 3.0, 0.6), "temperature 3 first: the flatter distribution needs 3 tokens"),
        Case((ten, 0.5, 0.9), "ten logits, temperature 0.5, top_p 0.9"),
        Case((ten, 1.5, 0.95), "ten logits, temperature 1.5, top_p 0.95"),
        Case((four, 1.0, 0.0), "top_p = 0 keeps nothing", raises=ValueError),
        Case((four, 1.0, 1.5), "top_p = 1.5 is not a probability", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_top_p_probs, name="top_p_probs",
                          rtol=1e-9, atol=1e-12)


def _repeat_kv(k: torch.Tensor, n_heads: int) -> torch.Tensor:
    if n_heads % k.shape[1]:
        raise ValueError(f"n_heads={n_heads} is not a multiple of {k.shape[1]} KV heads")
    return k.repeat_interleave(n_heads // k.shape[1], dim=1)


def check_repeat_kv(func: Callable) -> CheckResult:
    """``func(k, n_heads)``: ``k`` (B, H_kv, L, d) widened to (B, n_heads, L, d), head ``h``
    being K/V head ``h // (n_heads / H_kv)``; ValueError when n_heads is not a multiple of H_kv."""
    cases = [
        Case((randn(2, 2, 3, 4, seed=1), 4), "2 KV heads for 4 query heads: 0, 0, 1, 1"),
        Case((randn(1, 3, 2, 2, seed=2), 6), "3 KV heads for 6 query heads"),
        Case((randn(1, 1, 5, 2, seed=3), 8), "multi-query: one KV head for 8 query heads"),
        Case((randn(2, 4, 2, 3, seed=4), 4), "as many KV heads as query heads: unchanged"),
        Case((randn(1, 4, 2, 2, seed=5), 6), "6 query heads cannot share 4 KV heads",
             raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_repeat_kv, name="repeat_kv",
                          rtol=0, atol=0)
