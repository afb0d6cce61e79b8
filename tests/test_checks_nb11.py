"""The notebook 11 checkers accept the reference solutions and catch plausible mistakes."""

from __future__ import annotations

import math

import torch

from course_utils import attention
from course_utils.checks import nb11


def stub(*args, **kwargs):
    raise NotImplementedError


def test_split_heads() -> None:
    assert nb11.check_split_heads(attention.split_heads).passed
    assert nb11.check_split_heads(stub).status == "not attempted"

    def no_transpose(x, n_heads):
        b, n, d = x.shape
        if d % n_heads:
            raise ValueError("not divisible")
        return x.reshape(b, n_heads, n, d // n_heads)

    def no_check(x, n_heads):
        b, n, d = x.shape
        return x[..., : d - d % n_heads].reshape(b, n, n_heads, -1).transpose(1, 2)

    for wrong in (no_transpose, no_check):
        assert nb11.check_split_heads(wrong).status == "failed", wrong.__name__


def test_merge_heads() -> None:
    assert nb11.check_merge_heads(attention.merge_heads).passed
    assert nb11.check_merge_heads(stub).status == "not attempted"

    def no_transpose(x):
        b, h, n, d_k = x.shape
        return x.reshape(b, n, h * d_k)

    def sum_heads(x):
        return x.sum(dim=1)

    for wrong in (no_transpose, sum_heads):
        assert nb11.check_merge_heads(wrong).status == "failed", wrong.__name__


def _mha(x, w_q, w_k, w_v, w_o, n_heads, scale_by_d_model=False, skip_w_o=False):
    b, n, d = x.shape
    d_k = d // n_heads
    split = lambda t: t.reshape(b, n, n_heads, d_k).transpose(1, 2)  # noqa: E731
    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    scale = math.sqrt(d if scale_by_d_model else d_k)
    z = (torch.softmax(q @ k.transpose(-2, -1) / scale, dim=-1) @ v).transpose(1, 2)
    z = z.reshape(b, n, d)
    return z if skip_w_o else z @ w_o


def test_multi_head_attention() -> None:
    assert nb11.check_multi_head_attention(_mha).passed
    assert nb11.check_multi_head_attention(stub).status == "not attempted"

    def scaled_by_d_model(*args):
        return _mha(*args, scale_by_d_model=True)

    def forgets_w_o(*args):
        return _mha(*args, skip_w_o=True)

    def one_head_only(x, w_q, w_k, w_v, w_o, n_heads):
        return _mha(x, w_q, w_k, w_v, w_o, 1)

    for wrong in (scaled_by_d_model, forgets_w_o, one_head_only):
        assert nb11.check_multi_head_attention(wrong).status == "failed", wrong.__name__


def test_parameter_count() -> None:
    def good(d_model, n_heads, bias=True):
        if d_model % n_heads:
            raise ValueError("not divisible")
        return 4 * d_model**2 + (4 * d_model if bias else 0)

    assert nb11.check_parameter_count(good).passed
    assert nb11.check_parameter_count(stub).status == "not attempted"

    def three_matrices(d_model, n_heads, bias=True):
        return good(d_model, n_heads, bias) - d_model**2 - (d_model if bias else 0)

    def ignores_bias(d_model, n_heads, bias=True):
        return good(d_model, n_heads, True)

    def per_head(d_model, n_heads, bias=True):
        return good(d_model, n_heads, bias) * n_heads

    def as_float(d_model, n_heads, bias=True):
        return float(good(d_model, n_heads, bias))

    for wrong in (three_matrices, ignores_bias, per_head, as_float):
        assert nb11.check_parameter_count(wrong).status == "failed", wrong.__name__
