"""Tests for course_utils.sampling against SciPy, Hugging Face's filtering algorithm and the
definitions, with property tests and the empirical frequencies of many draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from course_utils import sampling


def hf_filter(logits: torch.Tensor, temperature=1.0, top_k=None, top_p=None) -> torch.Tensor:
    """Hugging Face's logits warpers (Temperature, TopK, TopP), then a softmax."""
    scores = logits / temperature
    if top_k is not None:
        kth = torch.topk(scores, min(top_k, scores.shape[-1]))[0][..., -1, None]
        scores = scores.masked_fill(scores < kth, -math.inf)
    if top_p is not None:
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove_sorted = cumulative <= (1 - top_p)
        remove_sorted[..., -1:] = False  # min_tokens_to_keep = 1
        remove = remove_sorted.scatter(-1, sorted_indices, remove_sorted)
        scores = scores.masked_fill(remove, -math.inf)
    return scores.softmax(dim=-1)


def test_smallest_example_by_hand() -> None:
    logits = torch.log(torch.tensor([0.5, 0.1, 0.25, 0.15], dtype=torch.float64))
    torch.testing.assert_close(sampling.filter_probs(logits),
                               torch.tensor([0.5, 0.1, 0.25, 0.15], dtype=torch.float64))
    torch.testing.assert_close(sampling.filter_probs(logits, top_k=2),
                               torch.tensor([2 / 3, 0, 1 / 3, 0], dtype=torch.float64))
    # top-p 0.8: 0.5 < 0.8, 0.5 + 0.25 = 0.75 < 0.8, so 0.15 crosses 0.8 and is kept too
    torch.testing.assert_close(sampling.filter_probs(logits, top_p=0.8),
                               torch.tensor([0.5, 0, 0.25, 0.15], dtype=torch.float64) / 0.9)
    torch.testing.assert_close(sampling.filter_probs(logits, top_p=0.3),
                               torch.tensor([1.0, 0, 0, 0], dtype=torch.float64))
    p = np.array([0.5, 0.1, 0.25, 0.15]) ** 2  # temperature 1/2 squares the probabilities
    torch.testing.assert_close(sampling.filter_probs(logits, temperature=0.5),
                               torch.from_numpy(p / p.sum()))


@pytest.mark.parametrize("temperature", [0.3, 1.0, 2.5])
def test_temperature_equals_scipy_softmax(temperature) -> None:
    logits = torch.randn(3, 7, dtype=torch.float64)
    expected = special.softmax(logits.numpy() / temperature, axis=-1)
    np.testing.assert_allclose(sampling.filter_probs(logits, temperature).numpy(), expected,
                               rtol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("temperature", "top_k", "top_p"),
                         [(1.0, 5, None), (0.7, None, 0.9), (1.3, 10, 0.5), (0.5, 3, 0.99),
                          (2.0, 1, None), (1.0, None, 0.05)])
def test_equals_hugging_face_filtering(dtype, temperature, top_k, top_p) -> None:
    g = torch.Generator().manual_seed(top_k or 0)
    logits = (3 * torch.randn(4, 50, generator=g)).to(dtype)
    torch.testing.assert_close(sampling.filter_probs(logits, temperature, top_k, top_p),
                               hf_filter(logits, temperature, top_k, top_p))


def test_order_is_temperature_then_top_k_then_top_p() -> None:
    logits = torch.log(torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=torch.float64))
    # temperature 3 flattens to ∝ p^(1/3) ≈ [.300, .272, .238, .189]: top-p 0.6 keeps 3 tokens;
    # top-p 0.6 before the temperature would keep 2 (0.4 + 0.3 reaches 0.6)
    out = sampling.filter_probs(logits, temperature=3.0, top_p=0.6)
    kept = torch.tensor([0.4, 0.3, 0.2], dtype=torch.float64) ** (1 / 3)
    torch.testing.assert_close(out, torch.cat([kept / kept.sum(), torch.zeros(1).double()]))
    # temperature 1/2 sharpens to ∝ p²: [16, 9, 4, 1] / 30; top-k 2 renormalises to
    # [16, 9] / 25, where 16/25 = 0.64 alone reaches 0.6. Top-p first would keep 2 tokens.
    out = sampling.filter_probs(logits, temperature=0.5, top_k=2, top_p=0.6)
    torch.testing.assert_close(out, torch.tensor([1.0, 0, 0, 0], dtype=torch.float64))
    out = sampling.filter_probs(logits, temperature=0.5, top_p=0.6)
    torch.testing.assert_close(out, torch.tensor([16, 9, 0, 0], dtype=torch.float64) / 25)


def test_ties_at_the_kth_are_kept_and_minus_inf_is_impossible() -> None:
    logits = torch.tensor([2.0, 1.0, 1.0, 0.0, -math.inf])
    expected = torch.cat([torch.softmax(torch.tensor([2.0, 1.0, 1.0]), -1), torch.zeros(2)])
    torch.testing.assert_close(sampling.filter_probs(logits, top_k=2), expected)
    assert sampling.filter_probs(logits)[-1] == 0


logit_rows = st.lists(st.floats(-20, 20), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(row=logit_rows, temperature=st.floats(0.05, 10), top_k=st.none() | st.integers(1, 35),
       top_p=st.none() | st.floats(0.01, 1.0))
def test_properties_of_the_filtered_distribution(row, temperature, top_k, top_p) -> None:
    logits = torch.tensor(row, dtype=torch.float64)
    probs = sampling.filter_probs(logits, temperature, top_k, top_p)
    assert probs.sum().item() == pytest.approx(1.0, abs=1e-12)
    assert (probs >= 0).all()
    base = torch.softmax(logits / temperature, -1)
    kept = probs > 0
    assert kept.any()
    # the kept tokens keep their relative probabilities; the removed ones are exactly 0
    torch.testing.assert_close(probs[kept], base[kept] / base[kept].sum())
    assert torch.all(probs[~kept] == 0)
    # every kept token is at least as probable as every removed one
    if (~kept).any():
        assert base[kept].min() >= base[~kept].max()
    if top_k is not None and top_p is None:
        assert kept.sum() >= min(top_k, len(row))
    if top_p is not None and top_k is None:  # the smallest prefix whose total reaches p
        total = base[kept].sum().item()
        assert total >= top_p - 1e-12 or kept.all()
        assert total - base[kept].min().item() < top_p + 1e-12


@settings(max_examples=40, deadline=None)
@given(row=logit_rows, temperature=st.floats(0.05, 10))
def test_top_p_one_and_top_k_vocab_change_nothing(row, temperature) -> None:
    logits = torch.tensor(row, dtype=torch.float64)
    plain = sampling.filter_probs(logits, temperature)
    assert torch.equal(sampling.filter_probs(logits, temperature, top_p=1.0), plain)
    assert torch.equal(sampling.filter_probs(logits, temperature, top_k=len(row)), plain)
    assert torch.equal(sampling.filter_probs(logits, temperature, top_k=len(row) + 5), plain)
    assert torch.equal(plain, torch.softmax(logits / temperature, -1))


@pytest.mark.parametrize(("temperature", "top_k", "top_p"),
                         [(1.0, None, None), (0.7, 4, None), (1.5, None, 0.8), (1.0, 5, 0.7)])
def test_draws_follow_the_filtered_distribution(temperature, top_k, top_p) -> None:
    logits = torch.linspace(2.0, -1.0, 8, dtype=torch.float64)
    probs = sampling.filter_probs(logits, temperature, top_k, top_p).numpy()
    n = 20_000
    draws = sampling.sample(logits.expand(n, 8), temperature, top_k, top_p,
                            generator=torch.Generator().manual_seed(0))
    assert draws.shape == (n,) and draws.dtype == torch.long
    counts = np.bincount(draws.numpy(), minlength=8)
    assert np.all(counts[probs == 0] == 0)  # filtered tokens are never drawn
    kept = probs > 0
    assert stats.chisquare(counts[kept], n * probs[kept]).pvalue > 1e-3
    assert 0.5 * np.abs(counts / n - probs).sum() < 0.02  # total variation


def test_sample_keeps_the_batch_shape_and_is_reproducible() -> None:
    logits = torch.randn(2, 3, 10)
    first = sampling.sample(logits, generator=torch.Generator().manual_seed(5))
    again = sampling.sample(logits, generator=torch.Generator().manual_seed(5))
    assert first.shape == (2, 3) and torch.equal(first, again)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"temperature": 0.0}, ValueError, "temperature"),
        ({"temperature": -1.0}, ValueError, "temperature"),
        ({"temperature": math.nan}, ValueError, "temperature"),
        ({"temperature": True}, TypeError, "temperature"),
        ({"temperature": "1"}, TypeError, "temperature"),
        ({"top_p": 0.0}, ValueError, "top_p"),
        ({"top_p": 1.5}, ValueError, "top_p"),
        ({"top_p": "0.9"}, TypeError, "top_p"),
        ({"top_k": 0}, ValueError, "top_k"),
        ({"top_k": 2.0}, TypeError, "top_k"),
        ({"logits": torch.tensor([1.0, math.nan])}, ValueError, "NaN"),
        ({"logits": torch.tensor([1.0, math.inf])}, ValueError, r"\+inf"),
        ({"logits": torch.full((2, 3), -math.inf)}, ValueError, "no token"),
        ({"logits": torch.tensor([1, 2])}, TypeError, "floating"),
        ({"logits": [1.0, 2.0]}, TypeError, "torch.Tensor"),
        ({"logits": torch.ones(0)}, ValueError, "V >= 1"),
    ],
)
def test_bad_inputs(kwargs, error, match) -> None:
    kwargs = {"logits": torch.randn(5), **kwargs}
    with pytest.raises(error, match=match):
        sampling.filter_probs(**kwargs)
    with pytest.raises(error, match=match):
        sampling.sample(**kwargs)


def test_numpy_scalars_are_accepted_and_generator_is_checked() -> None:
    logits = torch.randn(6)
    torch.testing.assert_close(
        sampling.filter_probs(logits, np.float32(0.5), np.int64(3), np.float64(0.9)),
        sampling.filter_probs(logits, 0.5, 3, 0.9))
    with pytest.raises(TypeError, match="generator"):
        sampling.sample(logits, generator=np.random.default_rng(0))


# ------------------------------------------------------------------- speculative sampling

PQ = [  # (p, q): the target's and the draft's distributions
    ([0.5, 0.2, 0.2, 0.1, 0.0], [0.1, 0.4, 0.1, 0.2, 0.2]),
    ([0.05, 0.05, 0.9], [0.9, 0.05, 0.05]),
    ([0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1]),
    ([0.3, 0.7], [0.3, 0.7]),  # the same: every proposal accepted
]


def _joint(p: torch.Tensor, q: torch.Tensor) -> np.ndarray:
    """The exact joint distribution of (proposal x, result y), from the rule written out here:
    q(x) · [min(1, p(x)/q(x)) · 1{y = x} + (1 − min(1, p(x)/q(x))) · residual(y)]."""
    p, q = p.numpy(), q.numpy()
    accept = np.where(q > 0, np.minimum(1, p / np.where(q > 0, q, 1)), 1)
    residual = np.maximum(p - q, 0)
    residual = residual / residual.sum() if residual.sum() > 0 else residual
    return q[:, None] * (np.diag(accept) + (1 - accept)[:, None] * residual[None, :])


@pytest.mark.parametrize(("p", "q"), PQ)
def test_the_proof_identity_holds_exactly(p, q) -> None:
    p, q = torch.tensor(p, dtype=torch.float64), torch.tensor(q, dtype=torch.float64)
    joint = _joint(p, q)
    np.testing.assert_allclose(joint.sum(axis=0), p.numpy(), rtol=0, atol=1e-15)  # P(y) = p(y)
    accept, residual = sampling._acceptance(p, q)  # the module's own two ingredients
    out = q * accept + residual * (q * (1 - accept)).sum()
    torch.testing.assert_close(out, p, rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.diag(joint), (q * accept).numpy(), atol=1e-15)


def _draws(rule, p, q, n, seed):
    """(proposal, result) counts over ``n`` rounds: proposal ~ q, result = rule(p, q, proposal)."""
    g = torch.Generator().manual_seed(seed)
    proposals = torch.multinomial(q, n, replacement=True, generator=g).tolist()
    counts = np.zeros((len(p), len(p)))
    for x in proposals:
        counts[x, rule(p, q, x, g)] += 1
    return counts


def _chisquare_p_value(counts: np.ndarray, probs: np.ndarray) -> float:
    counts, probs = counts.ravel(), probs.ravel()
    if counts[probs == 0].sum() > 0:  # drawn where it is impossible
        return 0.0
    keep = probs > 0
    return stats.chisquare(counts[keep], counts.sum() * probs[keep]).pvalue


def _accept_always(p, q, token, rng) -> int:  # a deliberately wrong rule: the output follows q
    return token


def _resample_from_p(p, q, token, rng) -> int:  # wrong: a rejection redraws from p, not r
    if torch.rand((), generator=rng, dtype=torch.float64) < min(1.0, float(p[token] / q[token])):
        return token
    return int(torch.multinomial(p, 1, generator=rng))


@pytest.mark.parametrize(("p", "q"), PQ[:3])
def test_draws_follow_the_target_by_a_chi_square_test(p, q) -> None:
    p, q = torch.tensor(p, dtype=torch.float64), torch.tensor(q, dtype=torch.float64)
    counts = _draws(sampling.speculative_accept, p, q, 4000, seed=len(p))
    assert _chisquare_p_value(counts.sum(axis=0), p.numpy()) > 1e-3  # the result follows p
    # jointly with the proposal: result == proposal exactly when accepted (diagonal q·accept)
    assert _chisquare_p_value(counts, _joint(p, q)) > 1e-3
    for wrong in (_accept_always, _resample_from_p):  # the same test rejects wrong rules
        counts = _draws(wrong, p, q, 3000, seed=len(p))
        assert _chisquare_p_value(counts.sum(axis=0), p.numpy()) < 1e-3


def test_a_rejection_never_returns_the_proposal(monkeypatch) -> None:
    p = torch.tensor([0.1, 0.6, 0.3], dtype=torch.float64)
    q = torch.tensor([0.8, 0.1, 0.1], dtype=torch.float64)
    real_rand = torch.rand
    monkeypatch.setattr(torch, "rand", lambda *a, **k: real_rand(*a, **k) * 0 + 0.999)  # reject
    g = torch.Generator().manual_seed(0)
    results = [sampling.speculative_accept(p, q, 0, g) for _ in range(300)]
    assert 0 not in results and set(results) == {1, 2}
    # p <= q everywhere (a p summing to 1 - 1e-7): the residual is 0, the proposal is kept
    assert sampling.speculative_accept(q - torch.tensor([1e-7, 0, 0]), q, 0, g) == 0


def test_global_generator_and_reproducibility() -> None:
    p, q = (torch.tensor(v) for v in PQ[0])  # float32 inputs are accepted
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    first = [sampling.speculative_accept(p, q, 1, g1) for _ in range(50)]
    assert first == [sampling.speculative_accept(p, q, 1, g2) for _ in range(50)]
    torch.manual_seed(9)
    a = [sampling.speculative_accept(p, q, 1) for _ in range(50)]
    torch.manual_seed(9)
    assert a == [sampling.speculative_accept(p, q, 1) for _ in range(50)]
    assert len(set(a)) > 1 and all(isinstance(t, int) for t in a)
    assert sampling.speculative_accept(p, q, np.int64(0), g1) == 0  # p(0) >= q(0): accepted


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"p": [0.5, 0.5]}, TypeError, "p must be a torch.Tensor"),
        ({"q": torch.tensor([1, 0])}, TypeError, "q must be a floating"),
        ({"p": torch.ones(2, 2) / 4}, ValueError, r"p must be a 1-D"),
        ({"q": torch.tensor([0.5, 0.25, 0.25])}, ValueError, "same length"),
        ({"p": torch.tensor([1.5, -0.5])}, ValueError, "non-negative"),
        ({"p": torch.tensor([0.5, 0.4])}, ValueError, "p must sum to 1, got 0.9"),
        ({"q": torch.tensor([float("nan"), 1.0])}, ValueError, "q must hold finite"),
        ({"token": 2}, ValueError, r"token must be in \[0, 1\]"),
        ({"token": 1.0}, TypeError, "token must be an int"),
        ({"q": torch.tensor([1.0, 0.0]), "token": 1}, ValueError, r"q\[token\] > 0"),
        ({"rng": 0}, TypeError, "rng must be a torch.Generator"),
    ],
)
def test_speculative_accept_bad_inputs(kwargs, error, match) -> None:
    good = {"p": torch.tensor([0.5, 0.5]), "q": torch.tensor([0.25, 0.75]), "token": 1}
    with pytest.raises(error, match=match):
        sampling.speculative_accept(**{**good, **kwargs})
