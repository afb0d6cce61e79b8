"""Checkers for notebook 14: padding, the untrained loss, a loss that does not fall, smoothing."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F

from course_utils.checks import Case, CheckResult, check_function, check_number, exercise, randn
from course_utils.data import pad_sequences
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
                  "lengths"), Case(([], 0), "no sequences", raises=ValueError)]
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


def _train(model: torch.nn.Module, batches: Any, lr: float, zero: str = "before",
           optimizer: type = torch.optim.SGD, **settings: Any) -> list[float]:
    step, losses = optimizer(model.parameters(), lr=lr, **settings), []
    for x, y in batches:
        if zero == "before":
            step.zero_grad()
        (loss := F.cross_entropy(model(x), y)).backward()
        if zero == "between":  # the notebook's bug
            step.zero_grad()
        step.step()
        losses.append(loss.item())
    return losses


def _problem(seed: int, steps: int, lr: float) -> tuple[torch.nn.Linear, tuple, float]:
    """A float64 Linear(5, 3) and ``steps`` batches (a tuple) of 16 points, linearly labelled."""
    model, teacher = torch.nn.Linear(5, 3, dtype=torch.float64), randn(5, 3, seed=seed + 50)
    model.load_state_dict({"weight": randn(3, 5, seed=seed, scale=0.1), "bias": 0 * teacher[0]})
    return model, tuple((x, (x @ teacher).argmax(-1)) for x in randn(steps, 16, 5, seed=seed)), lr


@exercise("debug")
def check_train(func: Callable[..., list[float]]) -> CheckResult:
    """``func(model, batches, lr)``: a plain SGD step per (x, y) batch; its losses (floats)."""
    cases = [Case(_problem(0, 6, 0.5), "6 batches, lr 0.5"), Case(_problem(1, 10, 0.1),
             "10 batches, lr 0.1"), Case(_problem(2, 1, 0.5), "one batch: the first loss is the "
             "untrained one"), Case(_problem(3, 8, 1.0), "8 batches, lr 1.0")]
    plain = "the exercise's step is plain SGD (notebook 08): each weight minus lr × its gradient"
    mistakes = {"still the bug: the weights never moved, so the loss cannot fall: step() found no "
        "gradient (what runs between backward() and step()?)": partial(_train, zero="between"),
        "the gradients add up from step to step: backward() adds (+=) into .grad, so each step "
        "must start from zero, before backward()": partial(_train, zero="never"),
        f"it steps with Adam: {plain}": partial(_train, optimizer=torch.optim.Adam),
        f"the SGD has momentum=0.9: {plain}": partial(_train, momentum=0.9)}
    return check_function(func, cases=cases, reference=_train, name="train", rtol=1e-9,
                          atol=1e-12, mistakes=mistakes)


def _smoothed(z: torch.Tensor, y: torch.Tensor, pad_id: int, alpha: float, others: bool = False,
              over: str = "real") -> torch.Tensor:
    """(1 − α)(−log q_y) + α·mean_v(−log q_v) (or α/(V − 1) on each wrong token), averaged."""
    nll = -(log_q := torch.log_softmax(z, dim=-1)).gather(-1, y[..., None])[..., 0]
    spread = (-log_q.sum(-1) - nll) / (z.shape[-1] - 1) if others else -log_q.mean(-1)
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
        "the mean is taken over every position, padding included: divide by the number of real "
        "target positions": partial(_smoothed, over="all"),
        "the padded positions are averaged in with their own losses: keep only the real target "
        "positions, as section 4 does": partial(_smoothed, over="every")}
    return check_function(func, cases=cases, name="smoothed_cross_entropy", rtol=1e-5, atol=1e-6,
                          mistakes=mistakes,
                          shortcuts=("sequence_loss", "cross_entropy", "CrossEntropyLoss"),
                          reference=lambda z, y, pad, alpha: sequence_loss(
                              z, y, pad, label_smoothing=alpha))
