"""The online softmax and the merging of partial results against scipy.special and torch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp, softmax

from course_utils import online_softmax


def _attention(q, k, v):
    """(out, lse) of dense attention in float64."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return F.scaled_dot_product_attention(q, k, v), torch.logsumexp(scores, -1)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1000, 1000), min_size=1, max_size=30))
def test_online_softmax_matches_scipy(values):
    x = np.array(values)
    m, ell = online_softmax.online_softmax_stats(x)
    assert m == x.max()
    np.testing.assert_allclose(m + math.log(ell), logsumexp(x), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(np.exp(x - m) / ell, softmax(x), rtol=1e-9, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-50, 50), min_size=2, max_size=30), st.integers(1, 29))
def test_merging_chunks_equals_one_pass(values, cut):
    x = np.array(values)
    cut = min(cut, len(x) - 1)
    stats = online_softmax.online_softmax_stats
    m, ell = online_softmax.merge_softmax_stats(*stats(x[:cut]), *stats(x[cut:]))
    np.testing.assert_allclose(m + math.log(ell), logsumexp(x), rtol=1e-12, atol=1e-12)
    assert online_softmax.merge_softmax_stats(-math.inf, 0.0, -math.inf, 0.0) == (-math.inf, 0.0)


def test_online_softmax_rejects_bad_input():
    with pytest.raises(ValueError, match="x must not be empty"):
        online_softmax.online_softmax_stats(np.array([]))
    with pytest.raises(ValueError, match="1-D array of finite"):
        online_softmax.online_softmax_stats(np.ones((2, 2)))
    with pytest.raises(ValueError, match="1-D array of finite"):
        online_softmax.online_softmax_stats(np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="x contains NaN"):
        online_softmax.online_softmax_stats(np.array([1.0, np.nan]))
    with pytest.raises(TypeError, match="m1 must be a real number"):
        online_softmax.merge_softmax_stats(torch.tensor(1.0), 1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="l2 must be a finite number >= 0"):
        online_softmax.merge_softmax_stats(0.0, 1.0, 0.0, -1.0)


def test_merge_attention_partials_equals_attention_over_all_keys():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, n, 8, generator=g, dtype=torch.float64) for n in (6, 10, 10))
    out, lse = _attention(q, k, v)
    parts = [_attention(q, k[:, a:b], v[:, a:b]) for a, b in [(0, 4), (4, 10)]]
    merged_out, merged_lse = online_softmax.merge_attention_partials(
        parts[0][0].numpy(), parts[0][1].numpy(), parts[1][0].numpy(), parts[1][1].numpy()
    )
    np.testing.assert_allclose(merged_out, out.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(merged_lse, lse.numpy(), rtol=1e-12, atol=1e-12)
    empty = online_softmax.merge_attention_partials(np.zeros((1, 2)), [-np.inf], np.zeros((1, 2)),
                                                    [-np.inf])
    assert np.array_equal(empty[0], np.zeros((1, 2))) and empty[1][0] == -np.inf
    with pytest.raises(ValueError, match="lse1 and lse2 must have shape"):
        online_softmax.merge_attention_partials(np.zeros((3, 2)), np.zeros(2), np.zeros((3, 2)),
                                                np.zeros(3))
