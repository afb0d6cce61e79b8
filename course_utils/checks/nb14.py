"""Checkers for notebook 14's exercises (padding, the untrained loss, a training loop whose loss
does not fall, label smoothing)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import torch

from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    wraps_answer,
)


def _pad_and_mask(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    from course_utils.data import pad_sequences

    padded = pad_sequences(sequences, pad_id)
    lengths = torch.tensor([len(s) for s in sequences])
    return padded, torch.arange(padded.shape[1])[None, :] < lengths[:, None]


@exercise("practice")
def check_pad_and_mask(func: Callable[..., tuple[torch.Tensor, torch.Tensor]]) -> CheckResult:
    """``func(sequences, pad_id)`` = (right-padded int64 (B, N_max), bool mask True = real); the
    dtypes exactly (an int32 ``padded`` is refused)."""
    cases = [
        Case(([[5, 6, 7], [8], [9, 10]], 0), "three lengths, pad 0"),
        Case(([[4, 4], [4, 4]], 0), "equal lengths: no padding at all"),
        Case(([[3], [1, 2, 3, 4]], 9), "a pad id that is not 0"),
        Case(([[0, 1], [2]], 3), "id 0 is a real token here (pad is 3)"),
        Case(([[2, 0, 5], [7]], 0), "a real 0 inside a sentence: the mask comes from the lengths"),
        Case(([], 0), "no sequences", raises=ValueError),
    ]

    @wraps_answer(func)
    def int64_ids(sequences: list[list[int]], pad_id: int) -> Any:
        got = func(sequences, pad_id)
        padded = got[0] if isinstance(got, tuple) and len(got) == 2 else None
        if (isinstance(padded, torch.Tensor) and not padded.is_floating_point()
                and padded.dtype not in (torch.int64, torch.bool)):
            raise RuleBroken(f"padded: dtype: expected torch.int64, got {padded.dtype}: the ids "
                             "must be int64, the integers nn.Embedding and cross_entropy's "
                             "targets are given throughout the course")
        return got

    return check_function(int64_ids, cases=cases, reference=_pad_and_mask, name="pad_and_mask",
                          names=("padded", "mask"))


@exercise("predict")
def check_untrained_loss(answer: Any) -> CheckResult:
    """``answer``: the mean cross-entropy, in nats, of logits drawn independently from N(0, 1)
    over V = 43 tokens, whatever the target: E[logsumexp(z)] ≈ 4.242, within 1%."""
    explanation = (
        "The loss is -log q_y = logsumexp(z) - z_y, with q = softmax(z) the model's "
        "distribution. The target's own logit z_y averages 0, so "
        "what is left is the mean of log(sum of e^z_v). If every logit were 0 that would be "
        "log 43 = 3.761, the uniform guess; random logits raise it, because the largest e^z_v "
        "dominate the sum: the sum averages 43·E[e^z] = 43·e^(1/2) (the mean of e^z for a "
        "standard normal z), so the loss is about log V + σ²/2 = 4.261, and measured over 20 "
        "million positions 4.242. Section 6's untrained model, with logits of standard deviation "
        "about 0.9, shows the same effect: log V + 0.9²/2 ≈ 4.17, against 4.18 measured."
    )
    log_v = math.log(43)
    mistakes = {
        log_v: "that is log V, the loss of a uniform guess; random logits are not all equal",
        4.184: "that is section 6's untrained model, whose logits spread with a standard "
               "deviation of about 0.9, not 1",
        log_v + 1: "that adds σ² = 1; the mean of e^z for a standard normal z is e^(σ²/2)",
        math.log2(43): "that is log base 2 of V, in bits; the loss is in nats (natural log)",
    }
    hint = ("write the loss at one position as log(sum of e^z_v) - z_y and average the two parts "
            "separately (Hint 1 and Hint 2 below)")
    return check_number(answer, _UNTRAINED_LOSS, name="untrained_loss",
                        label="the loss of random N(0, 1) logits over 43 tokens",
                        explanation=explanation, rtol=0.01, hint=hint, mistakes=mistakes)


_UNTRAINED_LOSS = 4.2423  # E[logsumexp(z)], z of 43 N(0, 1) draws: 2·10⁷ samples, ± 0.0002


def _train_reference(model: torch.nn.Module, batches: list, lr: float, zero: bool = True
                     ) -> list[float]:
    import torch.nn.functional as F

    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for x, y in batches:
        if zero:
            optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _problem(seed: int, steps: int) -> tuple[torch.nn.Linear, list]:
    """A linear classifier (float64, 5 features, 3 classes) and ``steps`` batches of 16 points
    labelled by a fixed linear teacher: the same for a ``seed``."""
    g = torch.Generator().manual_seed(seed)
    model = torch.nn.Linear(5, 3, dtype=torch.float64)
    with torch.no_grad():
        model.weight.copy_(0.1 * torch.randn(3, 5, generator=g, dtype=torch.float64))
        model.bias.zero_()
    teacher = torch.randn(5, 3, generator=g, dtype=torch.float64)
    batches = []
    for _ in range(steps):
        x = torch.randn(16, 5, generator=g, dtype=torch.float64)
        batches.append((x, (x @ teacher).argmax(-1)))
    return model, batches


@contextlib.contextmanager
def _optimizers_recorded() -> Iterator[list[tuple[str, dict]]]:
    """Within the block, every optimizer created is recorded: its class name and settings."""
    made: list[tuple[str, dict]] = []
    original = torch.optim.Optimizer.__init__

    def recording(self: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append((type(self).__name__, dict(self.defaults)))

    torch.optim.Optimizer.__init__ = recording  # type: ignore[method-assign]
    try:
        yield made
    finally:
        torch.optim.Optimizer.__init__ = original  # type: ignore[method-assign]


def _run(train: Callable[..., Any], seed: int, steps: int, lr: float
         ) -> tuple[torch.Tensor, torch.Tensor]:
    model, batches = _problem(seed, steps)
    losses = train(model, batches, lr)
    return (torch.tensor([float(v) for v in losses], dtype=torch.float64),
            model.weight.detach().clone())


@exercise("debug")
def check_train(func: Callable[..., list[float]]) -> CheckResult:
    """``func(model, batches, lr)``: one SGD step per ``(x, y)`` batch on the cross-entropy of
    ``model(x)``, returning the list of losses (floats). Compared, losses and final weights, with
    a correct loop; a loop whose weights never move, whose gradients add up across steps, or
    that steps with another optimizer (Adam, SGD with momentum), is named as such."""

    @wraps_answer(func)
    def watched(seed: int, steps: int, lr: float) -> tuple[torch.Tensor, torch.Tensor]:
        with _optimizers_recorded() as made:
            losses, weight = _run(func, seed, steps, lr)
        right_weight = _run(_train_reference, seed, steps, lr)[1]
        if not torch.allclose(weight, right_weight, rtol=1e-9, atol=1e-12):
            for kind, settings in made:
                if kind != "SGD":
                    raise RuleBroken(f"it steps with {kind}: the exercise's step is plain SGD "
                                     "(notebook 08), each weight minus lr times its gradient; "
                                     f"{kind} moves the weights by another rule")
                extras = [f"{key}={settings[key]}" for key in ("momentum", "weight_decay")
                          if settings.get(key)] + (["nesterov=True"] if settings.get("nesterov")
                                                   else [])
                if extras:
                    raise RuleBroken(f"the SGD has {', '.join(extras)}: the exercise's step is "
                                     "plain SGD, each weight minus lr times this step's gradient "
                                     "only; keep torch.optim.SGD(model.parameters(), lr=lr)")
        if torch.equal(weight, _problem(seed, steps)[0].weight.detach()):
            raise RuleBroken("the weights never moved, so the loss cannot fall: step() found no "
                             "gradient to use (what runs between backward() and step()?)")
        right = _run(_train_reference, seed, steps, lr)
        if losses.shape == right[0].shape and not torch.allclose(losses, right[0]):
            summed = _run(lambda m, b, r: _train_reference(m, b, r, zero=False), seed, steps, lr)
            if torch.allclose(losses, summed[0]):
                raise RuleBroken("the gradients add up from step to step: backward() adds (+=) "
                                 "into .grad, so each step must start from zero, before "
                                 "backward()")
        return losses, weight

    cases = [
        Case((0, 6, 0.5), "6 batches, lr 0.5"),
        Case((1, 10, 0.1), "10 batches, lr 0.1"),
        Case((2, 1, 0.5), "one batch: the first loss is the untrained one"),
        Case((3, 8, 1.0), "8 batches, lr 1.0"),
    ]
    return check_function(watched, cases=cases, reference=lambda *a: _run(_train_reference, *a),
                          name="train", names=("losses", "final weight"), rtol=1e-9,
                          atol=1e-12)


def _smoothed_ce(logits: torch.Tensor, targets: torch.Tensor, pad_id: int,
                 eps: float) -> torch.Tensor:
    from course_utils.training import sequence_loss

    return sequence_loss(logits, targets, pad_id, label_smoothing=eps)


def _smoothed_slips(logits: torch.Tensor, targets: torch.Tensor, pad_id: int, eps: float
                    ) -> list[tuple[torch.Tensor, str]]:
    """The losses of two plausible slips, each with the message that names it."""
    real = targets != pad_id
    log_q = torch.log_softmax(logits, dim=-1)
    nll = -log_q.gather(-1, targets[..., None])[..., 0]
    spread = -log_q.mean(dim=-1)
    others = (-log_q.sum(dim=-1) - nll) / (logits.shape[-1] - 1)
    loss = (1 - eps) * nll + eps * spread
    return [
        (((1 - eps) * nll + eps * others)[real].mean(), "this gives α/(V − 1) to each wrong token "
         "only; the exercise's p gives α/V to every token, the right one included"),
        (loss[real].sum() / targets.numel(), "the mean is taken over every position, padding "
         "included: divide by the number of real target positions"),
        (loss.mean(), "the padded positions are averaged in with their own losses: keep only "
         "the real target positions, as section 4 does"),
    ]


@exercise("extend")
def check_smoothed_cross_entropy(func: Callable[..., torch.Tensor]) -> CheckResult:
    """``func(logits (B, N_tgt, V), targets (B, N_tgt), pad_id, alpha)``: the mean over non-pad
    positions of H(p, q) with the smoothed target p = (1 − α)·onehot(y) + α/V and the model's
    q = softmax(z), that is (1 − α)·(−log q_y) + α·mean_v(−log q_v); ValueError when every
    target is padding.
    The rule: PyTorch's ``label_smoothing=`` (the reference) is refused while ``func`` runs."""
    import torch.nn.functional as F

    @wraps_answer(func)
    def watched(logits: torch.Tensor, targets: torch.Tensor, pad_id: int, eps: float) -> Any:
        original = F.cross_entropy

        def guarded(*args: Any, label_smoothing: float = 0.0, **kwargs: Any) -> torch.Tensor:
            if label_smoothing:
                raise RuleBroken(f"{func.__name__} must build the smoothed target itself: "
                                 "cross_entropy's label_smoothing= is the loss it is compared "
                                 "with, so it is not allowed here")
            return original(*args, **kwargs)

        F.cross_entropy = guarded
        try:
            got = func(logits.clone(), targets.clone(), pad_id, eps)
        finally:
            F.cross_entropy = original
        if isinstance(got, torch.Tensor) and got.shape == () and (targets != pad_id).any() \
                and not torch.allclose(got, _smoothed_ce(logits, targets, pad_id, eps)):
            for slip, message in _smoothed_slips(logits, targets, pad_id, eps):
                if torch.allclose(got, slip):
                    raise RuleBroken(message)
        return got

    g = torch.Generator().manual_seed(14)
    logits = torch.randn(3, 4, 6, generator=g)
    targets = torch.tensor([[1, 2, 3, 0], [4, 0, 0, 0], [5, 5, 1, 2]])
    cases = [
        Case((logits, targets, 0, 0.1), "the paper's alpha = 0.1, padding at the ends of rows"),
        Case((logits, targets, 0, 0.0), "alpha = 0: section 4's loss"),
        Case((logits, targets, 0, 1.0), "alpha = 1: the target is uniform"),
        Case((logits, targets, 5, 0.1), "pad id 5 (then 0 is a real token)"),
        Case((100 * logits, targets, 0, 0.1), "large logits: log_softmax, not log(softmax)"),
        Case((logits, torch.zeros_like(targets), 0, 0.1), "only padding: nothing to average",
             raises=ValueError),
    ]
    return check_function(watched, cases=cases, reference=_smoothed_ce,
                          name="smoothed_cross_entropy",
                          rtol=1e-5, atol=1e-6)
