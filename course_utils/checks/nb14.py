"""Checkers for notebook 14: padding, the untrained loss, a held-out loss in batches, smoothing."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F

from course_utils.checks import Case, CheckResult, check_function, check_number, exercise, randn
from course_utils.data import Batch, Vocabulary, make_batch, number_pairs, pad_sequences
from course_utils.layers import Transformer, TransformerConfig
from course_utils.training import sequence_loss


def _pad_and_mask(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    padded, lengths = pad_sequences(sequences, pad_id), torch.tensor([len(s) for s in sequences])
    return padded, torch.arange(padded.shape[1])[None, :] < lengths[:, None]


@exercise("practice")
def check_pad_and_mask(func: Callable) -> CheckResult:
    """``func(sequences, pad_id)`` = (right-padded int64 (B, N_max), bool mask True on tokens)."""
    cases = [Case(([[5, 6, 7], [8], [9, 10]], 0), "three lengths, pad 0"),
             Case(([[4, 4], [4, 4]], 0), "no padding"), Case(([[3], [1, 2, 3, 4]], 9), "pad id 9"),
             Case(([[0, 1], [2]], 3), "id 0 is a real token here (pad is 3)"),
             Case(([[2, 0, 5], [7]], 0), "a real 0 inside a sentence: the mask comes from the "
                  "lengths"), Case(([], 0), "no sequences", raises=ValueError),
             Case(([[], []], 0), "only empty sequences: nothing to pad", raises=ValueError)]
    from_ids = {"the mask is read from the ids (padded != pad_id), but a real token may carry "
                "pad_id": lambda s, p: (_pad_and_mask(s, p)[0], _pad_and_mask(s, p)[0] != p)}
    return check_function(func, cases=cases, reference=_pad_and_mask, name="pad_and_mask",
                          names=("padded", "mask"), exact_dtype=True, mistakes=from_ids)


@exercise("predict")
def check_untrained_loss(answer: Any, *, show_answer: bool = False) -> CheckResult:
    """``answer``: the mean loss (nats) of N(0, 1) logits over V = 43 tokens, within 1%."""
    explanation = ("The loss is logsumexp(z) - z_y, and z_y averages 0; the sum of e^z_v averages "
                   "43·E[e^z] = 43·e^(1/2), so the loss is about log V + σ²/2 = 4.261 (measured: "
                   "4.242), above log V = 3.761, the uniform guess: the largest e^z_v dominate "
                   "the sum. Section 6's untrained model, logits of standard deviation about "
                   "0.9: log V + 0.9²/2 ≈ 4.17.")
    mistakes = {math.log(43): "that is log V, a uniform guess: random logits are not all equal",
        4.184: "that is section 6's untrained model, whose logits spread with σ ≈ 0.9, not 1",
        math.log(43) + 1: "that adds σ² = 1; the mean of e^z for a standard normal z is e^(σ²/2)",
        math.log2(43): "that is log base 2 of V, in bits; the loss is in nats (natural log)"}
    return check_number(answer, 4.2423, name="untrained_loss", rtol=0.01, mistakes=mistakes,
                        label="the loss of random N(0, 1) logits over 43 tokens",
                        explanation=explanation, show_answer=show_answer,
                        hint="write the loss at one position as log(sum of e^z_v) - z_y and "
                             "average the two parts separately (Hint 1 and Hint 2 below)")


def _tiny_problem(seed: int, sizes: tuple[int, ...]) -> tuple[torch.nn.Module, tuple]:
    """A float64 untrained Transformer and a tuple of batches of ``sizes`` pairs: the first of
    numbers below 100 (1 or 2 words), the others of numbers from 1,000 (3 to 6 words)."""
    pairs = number_pairs(10_000)
    vocab = Vocabulary.from_sentences(s for pair in pairs for s in pair)
    order = torch.randperm(9000, generator=torch.Generator().manual_seed(seed)).tolist()
    short = [pairs[i % 100] for i in order[: sizes[0]]]
    long = [pairs[1000 + i] for i in order[sizes[0] : sum(sizes)]]
    chosen, starts = short + long, [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    torch.manual_seed(seed)
    model = Transformer(TransformerConfig(d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1,
                                          n_decoder_layers=1, dropout=0.0, max_len=16,
                                          src_vocab_size=len(vocab), tgt_vocab_size=len(vocab)))
    return model.double().eval(), tuple(make_batch(chosen[a:b], vocab)
                                        for a, b in zip(starts, starts[1:], strict=False))


def _mean_loss(model: torch.nn.Module, batches: list[Batch], weigh: str = "positions") -> float:
    """The loss over every real target position of ``batches`` (or a mistaken weighting)."""
    total, count = 0.0, 0
    with torch.no_grad():
        for b in batches:
            logits = model(b.src, b.tgt_in, b.src_token_mask, b.tgt_token_mask)
            real = b.tgt_out != b.pad_id
            nll = F.cross_entropy(logits[real], b.tgt_out[real], reduction="sum").item()
            weight = {"positions": int(real.sum()), "batches": 1, "sentences": len(b.src),
                      "padded": real.numel()}[weigh]
            total += nll if weigh in ("positions", "padded") else weight * nll / int(real.sum())
            count += weight
    return total / count


@exercise("debug")
def check_mean_loss(func: Callable[..., float]) -> CheckResult:
    """``func(model, batches)``: the mean loss over every real target position of all the
    batches (a float), the same however the pairs are split into batches."""
    cases = [Case(_tiny_problem(0, (3, 1)), "a batch of 3 pairs, then one of 1"),
             Case(_tiny_problem(1, (4,)), "one batch: every way of averaging agrees"),
             Case(_tiny_problem(2, (2, 2)), "2 short numbers, then 2 long ones: as many "
                  "sentences, not as many target positions"),
             Case(_tiny_problem(3, (5, 2, 1)), "batches of 5, 2 and 1 pairs")]
    per_position = ("the loss is a mean over target positions; batches differ in their number of "
                    "real positions, so weigh each batch's mean by that number (or add up the "
                    "per-position losses and divide once)")
    mistakes = {
        "still the bug: every batch's mean counts once, whatever its size: "
        + per_position: partial(_mean_loss, weigh="batches"),
        "it weighs each batch by its number of sentences, but sentences differ in length: "
        + per_position: partial(_mean_loss, weigh="sentences"),
        "it divides by every position, padding included: count only the real target "
        "positions (tgt_out != pad_id)": partial(_mean_loss, weigh="padded")}
    return check_function(func, cases=cases, reference=_mean_loss, name="mean_loss", rtol=1e-9,
                          atol=1e-12, mistakes=mistakes)


def _smoothed(z: torch.Tensor, y: torch.Tensor, pad_id: int, alpha: float, others: bool = False,
              over: str = "real", annotated: bool = False) -> torch.Tensor:
    """(1 − α)(−log q_y) + α·mean_v(−log q_v) (or α/(V − 1) on each wrong token; or, as the
    Annotated Transformer, α/(V − 2) on each token neither right nor <pad>), averaged."""
    nll = -(log_q := torch.log_softmax(z, dim=-1)).gather(-1, y[..., None])[..., 0]
    spread = (-log_q.sum(-1) - nll) / (z.shape[-1] - 1) if others else -log_q.mean(-1)
    if annotated:
        spread = (-log_q.sum(-1) - nll + log_q[..., pad_id]) / (z.shape[-1] - 2)
    loss, real = (1 - alpha) * nll + alpha * spread, y != pad_id
    return {"real": loss[real].mean(), "all": loss[real].sum() / y.numel()}.get(over, loss.mean())


@exercise("extend")
def check_smoothed_cross_entropy(func: Callable[..., torch.Tensor]) -> CheckResult:
    """``func(logits (B, N, V), targets (B, N), pad_id, alpha)``: the mean over non-pad positions
    of H(p, q), p = (1 − α)·onehot(y) + α/V, q = softmax(z); ValueError when all is padding."""
    z, y = randn(3, 4, 6, seed=14).float(), torch.tensor([[1, 2, 3, 0], [4, 0, 0, 0], [5, 5, 1, 2]])
    cases = [Case((z, y, 0, 0.1), "the paper's alpha = 0.1, padding at the ends of rows"),
             Case((z, y, 0, 0.0), "alpha = 0: section 4's loss"), Case((z, y, 5, 0.1), "pad id 5 "
             "(then 0 is a real token)"), Case((z, y, 0, 1.0), "alpha = 1: the target is uniform"),
             Case((100 * z, y, 0, 0.1), "large logits: log_softmax, not log(softmax)"),
             Case((z, 0 * y, 0, 0.1), "only padding: nothing to average", raises=ValueError)]
    mistakes = {"this gives α/(V − 1) to each wrong token only; the exercise's p gives α/V to "
        "every token, the right one included": partial(_smoothed, others=True),
        "this is the Annotated Transformer's p, α/(V − 2) on each token that is neither right "
        "nor <pad>; the exercise's p (PyTorch's) gives α/V to every token, <pad> and the right "
        "one included": partial(_smoothed, annotated=True),
        "the mean is taken over every position, padding included: divide by the number of real "
        "target positions": partial(_smoothed, over="all"),
        "the padded positions are averaged in with their own losses: keep only the real target "
        "positions, as section 4 does": partial(_smoothed, over="every")}
    return check_function(func, cases=cases, name="smoothed_cross_entropy", rtol=1e-5, atol=1e-6,
                          mistakes=mistakes,
                          shortcuts=("sequence_loss", "cross_entropy", "CrossEntropyLoss"),
                          reference=lambda z, y, pad, alpha: sequence_loss(
                              z, y, pad, label_smoothing=alpha))
