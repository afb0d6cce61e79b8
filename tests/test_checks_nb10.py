"""The notebook 10 checkers accept the reference solutions and catch plausible mistakes."""

from __future__ import annotations

import math

import torch

from course_utils.checks import nb10


def stub(*args):
    raise NotImplementedError


def good_weights(q, k):
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("d_k differs")
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)


def test_attention_weights() -> None:
    assert nb10.check_attention_weights(good_weights).passed
    assert nb10.check_attention_weights(stub).status == "not attempted"

    def unscaled(q, k):
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1)

    def wrong_axis(q, k):
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-2)

    def divides_by_d_k(q, k):
        return torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1], dim=-1)

    for wrong in (unscaled, wrong_axis, divides_by_d_k):
        assert nb10.check_attention_weights(wrong).status == "failed", wrong.__name__


def test_causal_mask() -> None:
    assert nb10.check_causal_mask(lambda lq, lk: torch.ones(lq, lk, dtype=torch.bool).tril(
        diagonal=lk - lq)).passed
    assert nb10.check_causal_mask(stub).status == "not attempted"

    def top_left(lq, lk):
        return torch.ones(lq, lk, dtype=torch.bool).tril()

    def strict(lq, lk):  # forgets that a token sees itself
        return torch.ones(lq, lk, dtype=torch.bool).tril(diagonal=lk - lq - 1)

    def as_ints(lq, lk):
        return torch.ones(lq, lk).tril(diagonal=lk - lq)

    for wrong in (top_left, strict, as_ints):
        assert nb10.check_causal_mask(wrong).status == "failed", wrong.__name__


def test_masked_attention() -> None:
    def good(q, k, v, mask):
        scores = (q @ k.T / math.sqrt(q.shape[-1])).masked_fill(~mask, float("-inf"))
        return torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0) @ v

    def minus_1e9(q, k, v, mask):
        scores = (q @ k.T / math.sqrt(q.shape[-1])).masked_fill(~mask, -1e9)
        return torch.softmax(scores, dim=-1) @ v

    def nan_rows(q, k, v, mask):
        scores = (q @ k.T / math.sqrt(q.shape[-1])).masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v

    def inverted_mask(q, k, v, mask):
        return good(q, k, v, ~mask)

    assert nb10.check_masked_attention(good).passed
    assert nb10.check_masked_attention(stub).status == "not attempted"
    for wrong in (minus_1e9, nan_rows, inverted_mask):
        assert nb10.check_masked_attention(wrong).status == "failed", wrong.__name__
