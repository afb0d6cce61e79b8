"""Training an encoder–decoder: the warm-up schedule, the loss, the loop, greedy decoding.

The model is anything with the interface of :class:`course_utils.layers.Transformer`::

    memory = model.encode(src, src_token_mask)                             # (B, S, d)
    logits = model.decode(tgt_in, memory, src_token_mask, tgt_token_mask)  # (B, T, V)
    logits = model(src, tgt_in, src_token_mask, tgt_token_mask)            # both at once

with token masks (B, L) that are True on real tokens. Batches are
:class:`course_utils.data.Batch` objects.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.data import Batch, Vocabulary, check_pairs
from course_utils.validation import check_bool, check_int, check_real, check_tensor

if TYPE_CHECKING:
    from tqdm import tqdm

    from course_utils.layers import Transformer


def _check_type(value: object, name: str, kind: type | tuple[type, ...], what: str) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")


def _check_model(model: object) -> None:
    """An encoder–decoder with ``encode`` and ``decode`` (see the module docstring)."""
    if not (isinstance(model, nn.Module) and callable(getattr(model, "encode", None))
            and callable(getattr(model, "decode", None))):
        raise TypeError("model must be an encoder-decoder nn.Module with encode and decode "
                        f"(a course_utils.layers.Transformer), got {type(model).__name__}")


def warmup_lr(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """The learning rate of "Attention Is All You Need" (eq. 3) at ``step`` (counted from 1):

        lr = scale · d_model^(−1/2) · min(step^(−1/2), step · warmup^(−3/2))

    It rises linearly for ``warmup`` steps, peaks at ``scale · (d_model · warmup)^(−1/2)`` at
    ``step == warmup``, then decays as 1/√step.
    """
    step, d_model = check_int(step, "step"), check_int(d_model, "d_model")
    warmup, scale = check_int(warmup, "warmup"), check_real(scale, "scale", low=0, low_open=True)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def warmup_scheduler(
    optimizer: torch.optim.Optimizer, d_model: int, warmup: int, scale: float = 1.0
) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` whose learning rate follows :func:`warmup_lr` (step 1 for the first update).

    ``LambdaLR`` multiplies each group's initial lr by the lambda, so every group of
    ``optimizer`` must be created with ``lr=1.0``.
    """
    _check_type(optimizer, "optimizer", torch.optim.Optimizer, "a torch.optim.Optimizer")
    lrs = [group["lr"] for group in optimizer.param_groups]
    if any(lr != 1.0 for lr in lrs):
        raise ValueError(f"optimizer must be created with lr=1.0 (the schedule sets it), got {lrs}")
    warmup_lr(1, d_model, warmup, scale)  # check the numbers now, not at the first step
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda i: warmup_lr(i + 1, d_model, warmup, scale)
    )


def sequence_loss(logits: torch.Tensor, targets: torch.Tensor, pad_id: int,
                  label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy over the real (non-padding) target positions.

    ``logits`` (B, T, V), ``targets`` (B, T) int64; positions where ``targets == pad_id`` count
    neither in the sum nor in the mean: loss = −(1/#real) Σ_real log softmax(logits)[target].
    """
    check_tensor(logits, "logits")
    check_tensor(targets, "targets", dtype=torch.long)
    pad_id = check_int(pad_id, "pad_id", minimum=None)
    label_smoothing = check_real(label_smoothing, "label_smoothing", low=0, high=1)
    if logits.ndim != 3 or targets.shape != logits.shape[:2]:
        raise ValueError(
            f"expected logits (B, T, V) and targets (B, T), got {tuple(logits.shape)} "
            f"and {tuple(targets.shape)}"
        )
    if not (targets != pad_id).any():
        raise ValueError("targets hold only padding: there is nothing to score")
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
        ignore_index=pad_id, label_smoothing=label_smoothing,
    )


def progress_bar(total: int) -> tqdm:
    """A tqdm progress bar for ``total`` steps (``update()``, ``set_postfix_str``, ``close()``):
    its notebook widget where a learner runs the cell (JupyterLab, Colab; text in a terminal),
    or, where outputs are stored and compared (``COURSE_STORED_OUTPUTS=1``, set by the
    Makefile), plain text on stdout written twice, at the start and at the end, so the stored
    output is one short line."""
    total = check_int(total, "total")
    if os.environ.get("COURSE_STORED_OUTPUTS"):
        from tqdm import tqdm as text_bar

        return text_bar(total=total, file=sys.stdout, mininterval=math.inf, ascii=True, ncols=90)
    from tqdm.auto import tqdm as live_bar  # the widget needs ipywidgets (requirements.txt)

    return live_bar(total=total)


def train(
    model: nn.Module,
    batches: Iterable[Batch],
    optimizer: torch.optim.Optimizer,
    n_steps: int,
    *,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    label_smoothing: float = 0.0,
    clip_norm: float | None = 1.0,
    progress: bool = True,
) -> list[float]:
    """Run ``n_steps`` optimiser updates with teacher forcing and return the loss of each step.

    Each step: ``logits = model(src, tgt_in, masks)``, :func:`sequence_loss` against
    ``tgt_out``, backward, optional gradient-norm clipping, ``optimizer.step()``, then
    ``scheduler.step()``. ``batches`` is iterated again from the start whenever it runs out
    (one pass = one epoch). With ``progress`` a tqdm bar shows the step, the mean loss of the
    last 20 steps and the time.
    """
    _check_type(model, "model", nn.Module, "an nn.Module")
    _check_type(optimizer, "optimizer", torch.optim.Optimizer, "a torch.optim.Optimizer")
    if scheduler is not None:
        _check_type(scheduler, "scheduler", torch.optim.lr_scheduler.LRScheduler,
                    "a torch LRScheduler or None")
    if not isinstance(batches, Iterable):
        raise TypeError(f"batches must be an iterable of Batch, got {type(batches).__name__}")
    progress = check_bool(progress, "progress")
    n_steps = check_int(n_steps, "n_steps")
    label_smoothing = check_real(label_smoothing, "label_smoothing", low=0, high=1)
    if clip_norm is not None:
        clip_norm = check_real(clip_norm, "clip_norm", low=0, low_open=True)
    model.train()
    losses: list[float] = []
    bar = progress_bar(n_steps) if progress else None
    step = 0
    while step < n_steps:
        empty = True
        for batch in batches:
            empty = False
            _check_type(batch, "batches", Batch, "an iterable of Batch")
            logits = model(batch.src, batch.tgt_in, batch.src_token_mask,
                           batch.tgt_token_mask)
            loss = sequence_loss(logits, batch.tgt_out, batch.pad_id, label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if clip_norm is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            losses.append(loss.item())
            step += 1
            if bar is not None:
                recent = losses[-20:]
                bar.set_postfix_str(f"loss {sum(recent) / len(recent):.4f}", refresh=False)
                bar.update()
            if step == n_steps:
                break
        if empty:
            raise ValueError("batches must yield at least one batch")
    if bar is not None:
        bar.close()
    model.eval()
    return losses


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: torch.Tensor,
    src_token_mask: torch.Tensor,
    bos_id: int,
    eos_id: int,
    max_len: int,
) -> torch.Tensor:
    """Translate a batch by always taking the most likely next token.

    Encode ``src`` (B, S) once; start every target with ``<bos>``; for up to ``max_len`` steps
    run the decoder on the tokens so far and append ``argmax`` of the last position's logits.
    Rows that have produced ``<eos>`` keep producing ``<eos>``; the loop stops early once all
    have. Returns (B, 1 + n) int64 ids beginning with ``<bos>``, n ≤ ``max_len``.
    """
    _check_model(model)
    check_tensor(src, "src", dtype=torch.long, what="tensor of token ids")
    check_tensor(src_token_mask, "src_token_mask", dtype=torch.bool,
                 what="tensor (True = real token)")
    bos_id, eos_id = check_int(bos_id, "bos_id", minimum=0), check_int(eos_id, "eos_id", minimum=0)
    max_len = check_int(max_len, "max_len")
    if src.ndim != 2 or src_token_mask.shape != src.shape:
        raise ValueError(
            f"expected src (B, S) and src_token_mask (B, S), got {tuple(src.shape)} and "
            f"{tuple(src_token_mask.shape)}"
        )
    return _greedy_decode(model, src, src_token_mask, bos_id, eos_id, max_len)


def _greedy_decode(model: Transformer, src: torch.Tensor, src_token_mask: torch.Tensor,
                   bos_id: int, eos_id: int, max_len: int) -> torch.Tensor:
    was_training = model.training
    model.eval()
    memory = model.encode(src, src_token_mask)
    out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        logits = model.decode(out, memory, src_token_mask, torch.ones_like(out, dtype=torch.bool))
        next_id = logits[:, -1].argmax(dim=-1)
        next_id = torch.where(finished, torch.full_like(next_id, eos_id), next_id)
        out = torch.cat([out, next_id[:, None]], dim=1)
        finished |= next_id == eos_id
        if finished.all():
            break
    model.train(was_training)
    return out


def translate(model: Transformer, sentences: list[str], vocab: Vocabulary,
              max_len: int = 20) -> list[str]:
    """Greedy translations of ``sentences`` (source side encoded with a trailing ``<eos>``)."""
    _check_model(model)
    _check_type(vocab, "vocab", Vocabulary, "a Vocabulary")
    if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)):
        raise TypeError(f"sentences must be a list of str, got {type(sentences).__name__}")
    if not sentences:
        raise ValueError("sentences must hold at least one sentence")
    _check_sentences(sentences, vocab)
    return _translate(model, list(sentences), vocab, check_int(max_len, "max_len"))


def _check_sentences(sentences: list[str], vocab: Vocabulary) -> None:
    if not all(isinstance(s, str) for s in sentences):
        raise TypeError("sentences must be a list of str")
    unknown = {t for s in sentences for t in s.split()} - set(vocab.tokens)
    if unknown:
        raise ValueError(f"sentences hold tokens not in the vocabulary: {sorted(unknown)[:5]}")


def _translate(model: Transformer, sentences: list[str], vocab: Vocabulary,
               max_len: int) -> list[str]:
    device = next(model.parameters()).device
    src = [vocab.encode(s, add_eos=True) for s in sentences]
    longest = max(len(s) for s in src)
    src_ids = torch.tensor([s + [vocab.pad_id] * (longest - len(s)) for s in src], device=device)
    ids = _greedy_decode(model, src_ids, src_ids != vocab.pad_id, vocab.bos_id, vocab.eos_id,
                        max_len)
    return [vocab.decode(row) for row in ids.cpu()]


def exact_match(model: Transformer, pairs: list[tuple[str, str]], vocab: Vocabulary, *,
                batch_size: int = 500, max_len: int = 20) -> float:
    """Fraction of ``(source, target)`` pairs whose greedy translation equals the target exactly."""
    _check_model(model)
    _check_type(vocab, "vocab", Vocabulary, "a Vocabulary")
    pairs = check_pairs(pairs)
    batch_size, max_len = check_int(batch_size, "batch_size"), check_int(max_len, "max_len")
    _check_sentences([s for s, _ in pairs], vocab)
    correct = 0
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        guesses = _translate(model, [s for s, _ in chunk], vocab, max_len)
        correct += sum(g == t for g, (_, t) in zip(guesses, chunk, strict=True))
    return correct / len(pairs)
