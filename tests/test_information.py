"""course_utils.information against scipy.special, scipy.stats and torch.nn.functional."""

import numpy as np
import pytest
import scipy.special
import scipy.stats
import torch
import torch.nn.functional as F
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from course_utils.information import (
    cross_entropy,
    cross_entropy_from_logits,
    entropy,
    kl_divergence,
    perplexity,
)


@st.composite
def distributions(draw, n=None, zeros=True):
    """A probability vector; some entries may be exactly 0."""
    n = n or draw(st.integers(1, 8))
    low = 0.0 if zeros else 1e-3
    weights = draw(arrays(np.float64, n, elements=st.floats(low, 1.0)))
    if weights.sum() == 0:
        weights[0] = 1.0
    return weights / weights.sum()


@st.composite
def pairs(draw, zeros=True):
    n = draw(st.integers(1, 8))
    return draw(distributions(n, zeros)), draw(distributions(n, zeros))


def test_the_worked_examples():
    np.testing.assert_allclose(entropy([0.8, 0.2]), 0.5004, atol=5e-5)
    np.testing.assert_allclose(cross_entropy([1, 0, 0], [0.8, 0.1, 0.1]), -np.log(0.8))
    np.testing.assert_allclose(cross_entropy([0, 1, 0], [0.1, 0.8, 0.1]), 0.2231, atol=5e-5)
    np.testing.assert_allclose(kl_divergence([0.7, 0.3], [0.6, 0.4]), 0.0216, atol=5e-5)
    np.testing.assert_allclose(entropy([0.5, 0.5], base=2), 1.0)


@settings(max_examples=50, deadline=None)
@given(pq=pairs())
def test_match_scipy(pq):
    p, q = pq
    np.testing.assert_allclose(entropy(p), scipy.stats.entropy(p), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(entropy(p), scipy.special.entr(p).sum(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(entropy(p, base=2), scipy.stats.entropy(p, base=2), rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(kl_divergence(p, q), scipy.special.rel_entr(p, q).sum(),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(kl_divergence(p, q), scipy.stats.entropy(p, q), rtol=1e-12,
                               atol=1e-15)


@settings(max_examples=50, deadline=None)
@given(pq=pairs())
@example(pq=(np.array([2.2250738585e-311, 1.0]), np.array([2.3171711e-302, 1.0])))  # found by CI
def test_gibbs_inequality_and_decomposition(pq):
    p, q = pq
    kl = kl_divergence(p, q)
    # Gibbs' inequality holds for exact distributions; normalised floats are distributions only to
    # within rounding. p = [2e-311, 1], q = [2e-302, 1] gives KL = -5e-310 (exact for those floats:
    # the mass 2e-302 that q moves off its second entry is lost when 1 - 2e-302 rounds to 1).
    # The slack covers such rounding; any real error (a sign, a swapped argument) is far larger.
    assert kl >= -1e-12
    assert cross_entropy(p, q) >= entropy(p) - 1e-12  # Gibbs' inequality
    if np.isfinite(kl):
        np.testing.assert_allclose(cross_entropy(p, q), entropy(p) + kl, rtol=1e-10, atol=1e-12)
    else:
        assert np.isinf(cross_entropy(p, q))
    assert kl_divergence(p, p) == pytest.approx(0.0, abs=1e-15)
    assert 0 <= entropy(p) <= np.log(len(p)) + 1e-12


def test_batches_along_an_axis():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=(3, 5))
    q = rng.dirichlet(np.ones(4), size=(3, 5))
    np.testing.assert_allclose(entropy(p), scipy.stats.entropy(p, axis=-1))
    np.testing.assert_allclose(kl_divergence(p, q), scipy.stats.entropy(p, q, axis=-1))
    np.testing.assert_allclose(entropy(p.transpose(2, 0, 1), axis=0), entropy(p))
    expected = -(torch.from_numpy(p) * torch.from_numpy(q).log()).sum(-1).numpy()
    np.testing.assert_allclose(cross_entropy(p, q), expected)
    assert entropy(p).shape == (3, 5)


def test_zero_probability_conventions():
    assert entropy([1.0, 0.0]) == 0.0  # 0 log 0 = 0
    assert kl_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(np.log(2))
    assert kl_divergence([0.5, 0.5], [1.0, 0.0]) == np.inf  # q = 0 < p
    assert cross_entropy([0.0, 1.0], [1.0, 0.0]) == np.inf
    assert cross_entropy([1.0, 0.0], [1.0, 0.0]) == 0.0  # p = 0 where q = 0: nothing lost
    clipped = cross_entropy([0.0, 1.0], [1.0, 0.0], clip=1e-15)
    np.testing.assert_allclose(clipped, -np.log(1e-15))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_dtype_is_kept(dtype):
    p = np.array([0.7, 0.3], dtype=dtype)
    q = np.array([0.6, 0.4], dtype=dtype)
    p64, q64 = p.astype(np.float64), q.astype(np.float64)  # the rounded inputs, exactly
    eps = float(np.finfo(dtype).eps)
    for ours, theirs in [(entropy(p), scipy.special.entr(p64).sum()),
                         (kl_divergence(p, q), scipy.special.rel_entr(p64, q64).sum()),
                         (cross_entropy(p, q), -(p64 * np.log(q64)).sum())]:
        assert ours.dtype == dtype
        assert float(ours) == pytest.approx(theirs, rel=eps)


def test_from_logits_matches_torch_with_padding():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, dtype=torch.float64, generator=generator)
    targets = torch.randint(0, 7, (2, 5), generator=generator)
    targets[0, 3:] = -100
    targets[1, 4] = -100
    for reduction in ("mean", "sum", "none"):
        expected = F.cross_entropy(logits.transpose(1, 2), targets, reduction=reduction)
        ours = cross_entropy_from_logits(logits.numpy(), targets.numpy(), reduction=reduction)
        np.testing.assert_allclose(ours, expected.numpy(), rtol=1e-12)
    plain = torch.tensor([2, 0, 2, 6, 1])
    expected = F.cross_entropy(logits[0], plain, ignore_index=2)
    ours = cross_entropy_from_logits(logits[0].numpy(), plain.numpy(), ignore_index=2)
    np.testing.assert_allclose(ours, expected.numpy(), rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(logits=arrays(np.float64, (4, 3), elements=st.floats(-30, 30)),
       targets=arrays(np.int64, 4, elements=st.integers(0, 2)))
def test_from_logits_equals_cross_entropy_of_softmax(logits, targets):
    expected = F.cross_entropy(torch.from_numpy(logits), torch.from_numpy(targets)).numpy()
    np.testing.assert_allclose(cross_entropy_from_logits(logits, targets), expected, rtol=1e-10)
    one_hot = np.eye(3)[targets]
    probs = scipy.special.softmax(logits, axis=-1)
    by_probs = cross_entropy(one_hot, probs)
    finite = np.isfinite(by_probs)  # softmax can underflow to 0; log_softmax cannot
    per_row = cross_entropy_from_logits(logits, targets, reduction="none")
    np.testing.assert_allclose(per_row[finite], by_probs[finite], rtol=1e-8, atol=1e-12)


def test_perplexity():
    assert perplexity(np.log(50.0)) == pytest.approx(50.0)
    uniform = np.full(8, 1 / 8)
    assert perplexity(cross_entropy(uniform, uniform)) == pytest.approx(8.0)
    assert perplexity(0.0) == 1.0
    assert perplexity(1e6) == np.inf
    with pytest.raises(ValueError, match="must be >= 0"):
        perplexity(-0.1)


@pytest.mark.parametrize(
    ("p", "q", "match"),
    [
        ([0.5, 0.5], [0.2, 0.3, 0.5], "same shape"),
        ([1.2, -0.2], [0.5, 0.5], "p must be non-negative"),
        ([0.5, 0.5], [0.6, 0.6], "q must sum to 1"),
        ([], [], "must not be empty"),
        ([np.inf, 0.5], [0.5, 0.5], "finite"),
        ([np.nan, 0.5], [0.5, 0.5], "NaN"),
    ],
)
def test_bad_distributions(p, q, match):
    with pytest.raises(ValueError, match=match):
        kl_divergence(p, q)
    with pytest.raises(ValueError, match=match):
        cross_entropy(p, q)


def test_bad_arguments():
    with pytest.raises(ValueError, match="p must sum to 1"):
        entropy([0.3, 0.3])
    with pytest.raises(ValueError, match="base must be"):
        entropy([0.5, 0.5], base=1)
    with pytest.raises(ValueError, match=r"clip must be in \[0, 1\)"):
        cross_entropy([0.5, 0.5], [0.5, 0.5], clip=-1.0)
    logits = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"targets must have shape \(2,\)"):
        cross_entropy_from_logits(logits, np.array([0, 1, 2]))
    with pytest.raises(TypeError, match="integer class indices"):
        cross_entropy_from_logits(logits, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"class indices in \[0, 3\)"):
        cross_entropy_from_logits(logits, np.array([0, 3]))
    with pytest.raises(ValueError, match="every target equals ignore_index"):
        cross_entropy_from_logits(logits, np.array([-100, -100]))
    with pytest.raises(ValueError, match="reduction must be"):
        cross_entropy_from_logits(logits, np.array([0, 1]), reduction="max")
