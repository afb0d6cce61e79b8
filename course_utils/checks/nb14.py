"""Checkers for notebook 14's exercises (padding, padded loss, warm-up, label smoothing)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from course_utils.checks import Case, CheckResult, check_function


def _pad_and_mask(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    from course_utils.data import pad_sequences

    padded = pad_sequences(sequences, pad_id)
    lengths = torch.tensor([len(s) for s in sequences])
    return padded, torch.arange(padded.shape[1])[None, :] < lengths[:, None]


def check_pad_and_mask(func: Callable[..., tuple[torch.Tensor, torch.Tensor]]) -> CheckResult:
    """``func(sequences, pad_id)`` = (right-padded int64 (B, L_max), bool mask True = real)."""
    cases = [
        Case(([[5, 6, 7], [8], [9, 10]], 0), "three lengths, pad 0"),
        Case(([[4, 4], [4, 4]], 0), "equal lengths: no padding at all"),
        Case(([[3], [1, 2, 3, 4]], 9), "a pad id that is not 0"),
        Case(([[0, 1], [2]], 3), "id 0 is a real token here (pad is 3)"),
        Case(([[2, 0, 5], [7]], 0), "a real 0 inside a sentence: the mask comes from the lengths"),
        Case(([], 0), "no sequences", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_pad_and_mask, name="pad_and_mask",
                          names=("padded", "mask"))


def _masked_ce(logits: torch.Tensor, targets: torch.Tensor, pad_id: int) -> torch.Tensor:
    from course_utils.training import sequence_loss

    return sequence_loss(logits, targets, pad_id)


def check_masked_cross_entropy(func: Callable[..., torch.Tensor]) -> CheckResult:
    """``func(logits (B, T, V), targets (B, T), pad_id)``: mean CE over non-pad targets."""
    g = torch.Generator().manual_seed(14)
    logits = torch.randn(3, 4, 6, generator=g)
    targets = torch.tensor([[1, 2, 3, 0], [4, 0, 0, 0], [5, 5, 1, 2]])
    cases = [
        Case((logits, targets, 0), "padding at the ends of rows"),
        Case((logits, targets.clamp(min=1), 0), "no padding: the plain mean"),
        Case((logits, targets, 5), "pad id 5 (then 0 is a real token)"),
        Case((100 * logits, targets, 0), "large logits: log_softmax, not log(softmax)"),
    ]
    return check_function(func, cases=cases, reference=_masked_ce, name="masked_cross_entropy",
                          rtol=1e-5, atol=1e-6)


def check_noam_lr(func: Callable[[int, int, int], float]) -> CheckResult:
    """``func(step, d_model, warmup)`` = d^(−1/2) · min(step^(−1/2), step · warmup^(−3/2))."""
    from course_utils.training import warmup_lr

    cases = [
        Case((1, 512, 4000), "the first step"),
        Case((2000, 512, 4000), "half-way through warm-up"),
        Case((4000, 512, 4000), "the peak"),
        Case((100_000, 512, 4000), "long after the peak"),
        Case((50, 32, 100), "a small model"),
        Case((0, 512, 4000), "step 0 does not exist", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=warmup_lr, name="noam_lr", rtol=1e-9)


def _smoothed_ce(logits: torch.Tensor, targets: torch.Tensor, pad_id: int,
                 eps: float) -> torch.Tensor:
    from course_utils.training import sequence_loss

    return sequence_loss(logits, targets, pad_id, label_smoothing=eps)


def check_smoothed_cross_entropy(func: Callable[..., torch.Tensor]) -> CheckResult:
    """``func(logits (B, T, V), targets (B, T), pad_id, eps)``: the mean over non-pad positions of
    H(q, softmax(z)) with q = (1 − ε)·onehot(y) + ε/V, that is (1 − ε)·(−log p_y) + ε·mean_v(−log
    p_v); ValueError when every target is padding."""
    g = torch.Generator().manual_seed(14)
    logits = torch.randn(3, 4, 6, generator=g)
    targets = torch.tensor([[1, 2, 3, 0], [4, 0, 0, 0], [5, 5, 1, 2]])
    cases = [
        Case((logits, targets, 0, 0.1), "the paper's eps = 0.1, padding at the ends of rows"),
        Case((logits, targets, 0, 0.0), "eps = 0: exercise 2's loss"),
        Case((logits, targets, 0, 1.0), "eps = 1: the target is uniform"),
        Case((logits, targets, 5, 0.1), "pad id 5 (then 0 is a real token)"),
        Case((100 * logits, targets, 0, 0.1), "large logits: log_softmax, not log(softmax)"),
        Case((logits, torch.zeros_like(targets), 0, 0.1), "only padding: nothing to average",
             raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_smoothed_ce, name="smoothed_cross_entropy",
                          rtol=1e-5, atol=1e-6)
