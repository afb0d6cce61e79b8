"""Tests for speculative decoding: course_utils.language_model.speculative_generate against
greedy ``generate`` and the target's exact distribution (χ², SciPy), and
sampling.expected_tokens_per_pass against a Monte-Carlo simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from course_utils import language_model as lm
from course_utils import sampling

V = 8


def tiny_lm(seed: int, spread: float = 0.6) -> lm.DecoderLM:
    """A random one-layer DecoderLM over V tokens whose next-token distributions are far from
    uniform: an untied output matrix drawn with std ``spread`` gives logits of a unit or two."""
    torch.manual_seed(seed)
    model = lm.DecoderLM(lm.LMConfig(vocab_size=V, d_model=8, n_layers=1, n_heads=2,
                                     n_kv_heads=1, d_ff=16, max_len=32, tie_embeddings=False))
    with torch.no_grad():
        torch.nn.init.normal_(model.output.weight, std=spread)
    return model.eval()


def noisy_copy(model: lm.DecoderLM, noise: float, seed: int) -> lm.DecoderLM:
    """A draft that agrees with ``model`` only in part: ``model`` with ``noise`` times a random
    N(0, 1) matrix added to its output matrix."""
    copy = tiny_lm(0)
    copy.load_state_dict(model.state_dict())
    with torch.no_grad():
        copy.output.weight.add_(noise * torch.randn(copy.output.weight.shape,
                                                    generator=torch.Generator().manual_seed(seed)))
    return copy


TARGET = tiny_lm(0)
DRAFT = noisy_copy(TARGET, 0.25, seed=1)
PROMPT = torch.tensor([[3, 1, 4]])


@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_greedy_equals_generate_token_for_token(gamma) -> None:
    expected = lm.generate(TARGET, PROMPT, 12)  # greedy by default
    out, counts = lm.speculative_generate(TARGET, DRAFT, PROMPT, 12, gamma=gamma, temperature=0)
    assert torch.equal(out, expected)
    assert counts.target_passes + counts.accepted == 12  # each pass: accepted + its own token
    assert counts.accepted < counts.draft_tokens  # the two models disagree somewhere
    assert torch.equal(out, lm.generate(TARGET, PROMPT, 12, use_cache=False))


def test_draft_equal_to_the_target_has_every_proposal_accepted() -> None:
    out, counts = lm.speculative_generate(TARGET, TARGET, PROMPT, 10, gamma=3, temperature=0)
    assert torch.equal(out, lm.generate(TARGET, PROMPT, 10))
    # rounds of 4, 4 and 2 tokens (the last proposes one: the budget has 2 left)
    assert counts == lm.SpeculativeStats(target_passes=3, draft_tokens=7, accepted=7,
                                         rejections=0)
    assert counts.acceptance_rate == 1.0 and counts.tokens_per_pass == pytest.approx(10 / 3)


def _two_token_distribution(model: lm.DecoderLM) -> np.ndarray:
    """The model's exact P(t1, t2) after PROMPT at temperature 1, from its logits: (V, V)."""
    with torch.no_grad():
        p1 = torch.softmax(model(PROMPT)[0][0, -1].double(), -1)
        second = torch.cat([PROMPT.expand(V, -1), torch.arange(V)[:, None]], dim=1)
        p2 = torch.softmax(model(second)[0][:, -1].double(), -1)  # row t1: P(t2 | t1)
    return (p1[:, None] * p2).numpy()


def _chisquare_p_value(counts: np.ndarray, probs: np.ndarray) -> float:
    """χ² goodness of fit, the cells expected fewer than 5 times pooled into one."""
    counts, expected = counts.ravel(), probs.ravel() * counts.sum()
    small = expected < 5
    observed = np.append(counts[~small], counts[small].sum())
    expected = np.append(expected[~small], expected[small].sum())
    return stats.chisquare(observed, expected).pvalue


def test_sampled_tokens_follow_the_target_distribution() -> None:
    # gamma = 1 and two new tokens: the first is the accepted proposal or the resample, the
    # second the bonus token after an acceptance or the next pass's token after a rejection
    g, runs = torch.Generator().manual_seed(0), 400
    counts, accepted = np.zeros((V, V)), 0
    for _ in range(runs):
        out, run = lm.speculative_generate(TARGET, DRAFT, PROMPT, 2, gamma=1, generator=g)
        counts[out[0, 3], out[0, 4]] += 1
        accepted += run.accepted
        assert run.target_passes + run.accepted == 2
    target, draft = _two_token_distribution(TARGET), _two_token_distribution(DRAFT)
    assert 0.5 * np.abs(target - draft).sum() > 0.3  # the draft is a rough copy of the target
    assert 0.2 * runs < accepted < 0.9 * runs  # both acceptances and rejections happen
    assert _chisquare_p_value(counts, target) > 1e-3
    assert _chisquare_p_value(counts, draft) < 1e-3  # the test tells the two apart


def test_reproducible_with_a_generator_and_restores_training_mode() -> None:
    model = tiny_lm(2).train()
    runs = [lm.speculative_generate(TARGET, model, PROMPT, 6, gamma=2,
                                    generator=torch.Generator().manual_seed(4)) for _ in range(2)]
    assert torch.equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]
    assert model.training and not TARGET.training
    out, counts = lm.speculative_generate(TARGET, DRAFT, PROMPT, 0)
    assert torch.equal(out, PROMPT) and counts == lm.SpeculativeStats(0, 0, 0, 0)
    assert counts.tokens_per_pass == 0.0 and counts.acceptance_rate == 0.0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"draft": lm.DecoderLM(lm.LMConfig(vocab_size=V + 1, d_model=8, n_layers=1, n_heads=2,
                                            n_kv_heads=2, d_ff=8, max_len=32))},
         ValueError, "draft must share the target's vocabulary"),
        ({"prompt_ids": torch.tensor([[1, 2], [3, 4]])}, ValueError, r"shape \(1, L\)"),
        ({"prompt_ids": torch.tensor([[1, V]])}, ValueError, "prompt_ids must lie in"),
        ({"max_new_tokens": 30}, ValueError, "exceeds the target's max_len=32"),
        ({"gamma": 0}, ValueError, "gamma must be at least 1"),
        ({"target": "model"}, TypeError, "target must be a DecoderLM"),
    ],
)
def test_bad_inputs(kwargs, error, match) -> None:
    good = {"target": TARGET, "draft": DRAFT, "prompt_ids": PROMPT, "max_new_tokens": 3}
    with pytest.raises(error, match=match):
        lm.speculative_generate(**{**good, **kwargs})


# ------------------------------------------------------------- expected tokens per pass


@pytest.mark.parametrize(("alpha", "gamma"), [(0.0, 4), (0.3, 1), (0.6, 4), (0.8, 7), (0.95, 3)])
def test_expected_tokens_per_pass_matches_a_simulation(alpha, gamma) -> None:
    rng = np.random.default_rng(gamma)
    n = 200_000
    accepted = rng.random((n, gamma)) < alpha  # i.i.d. acceptances, rate α
    prefix = np.cumprod(accepted, axis=1).sum(axis=1)  # proposals kept before the first reject
    tokens = prefix + 1  # plus the target's own token (the correction or the bonus)
    formula = sampling.expected_tokens_per_pass(alpha, gamma)
    assert abs(tokens.mean() - formula) < 4 * tokens.std() / math.sqrt(n) + 1e-12
    assert formula == pytest.approx(sum(alpha**i for i in range(gamma + 1)), rel=1e-12)


def test_expected_tokens_per_pass_limits() -> None:
    assert sampling.expected_tokens_per_pass(1, 4) == 5.0
    assert sampling.expected_tokens_per_pass(np.float32(0.0), np.int64(3)) == 1.0
    assert sampling.expected_tokens_per_pass(0.999999, 4) == pytest.approx(5.0, rel=1e-5)
    with pytest.raises(ValueError, match="alpha"):
        sampling.expected_tokens_per_pass(1.5, 4)
    assert sampling.expected_tokens_per_pass(0.5, 0) == 1.0  # no proposals: plain decoding
    assert sampling.expected_tokens_per_pass(1, 0) == 1.0
    with pytest.raises(ValueError, match="gamma"):
        sampling.expected_tokens_per_pass(0.5, -1)


def test_the_acceptance_rate_counts_only_the_proposals_the_target_tested():
    """With every proposal accepted with probability a independently, accepted ÷ (accepted +
    rejections) estimates a; accepted ÷ proposed is biased low (the rest of a round after a
    rejection is never tested)."""
    import numpy as np

    rng, k, a = np.random.default_rng(0), 4, 0.8
    accepted = rejections = proposed = 0
    for _ in range(20_000):
        proposed += k
        n_ok = next((j for j in range(k) if rng.random() >= a), k)
        accepted, rejections = accepted + n_ok, rejections + (n_ok < k)
    stats = lm.SpeculativeStats(20_000, proposed, accepted, rejections)
    assert abs(stats.acceptance_rate - a) < 0.01
    assert accepted / proposed < a - 0.15  # the biased estimate: about 0.59
