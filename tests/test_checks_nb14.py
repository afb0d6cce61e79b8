"""Notebook 14's checkers: right answers pass, plausible mistakes fail with a reason."""

import torch
import torch.nn.functional as F
from checker_table import right, table_test, wrong

from course_utils.checks import nb14
from course_utils.training import sequence_loss, warmup_lr


def pad_and_mask(sequences, pad_id, dtype=torch.long, mask_dtype=torch.bool):
    if len(sequences) == 0:
        raise ValueError("sequences must not be empty")
    longest = max(len(s) for s in sequences)
    padded = torch.full((len(sequences), longest), pad_id, dtype=dtype)
    mask = torch.zeros(len(sequences), longest, dtype=mask_dtype)
    for row, seq in enumerate(sequences):
        padded[row, : len(seq)] = torch.tensor(seq, dtype=dtype)
        mask[row, : len(seq)] = True
    return padded, mask


def pad_in_place(sequences, pad_id):
    if not sequences:
        raise ValueError("no sequences")
    lengths = [len(s) for s in sequences]
    for seq in sequences:
        seq.extend([pad_id] * (max(lengths) - len(seq)))
    padded = torch.tensor(sequences)
    return padded, torch.arange(padded.shape[1]) < torch.tensor(lengths)[:, None]


def left_padded(sequences, pad_id):
    padded, mask = pad_and_mask(sequences, pad_id)
    return padded.flip(-1), mask.flip(-1)  # also reverses the tokens


def masked_cross_entropy(logits, targets, pad_id, log_p=torch.log_softmax, divide_by_all=False):
    picked = log_p(logits, dim=-1).gather(-1, targets[..., None])[..., 0]
    real = targets != pad_id
    return -(picked[real]).sum() / (targets.numel() if divide_by_all else real.sum())


def masked_cross_entropy_marking_targets(logits, targets, pad_id):
    targets[targets == pad_id] = -100  # PyTorch's ignore_index, written into the caller's targets
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def noam_lr(step, d_model, warmup, pick=min, check=True):
    if check and step < 1:
        raise ValueError(f"step must be at least 1, got {step}")
    return d_model**-0.5 * pick(step**-0.5 if step else 0.0, step * warmup**-1.5)


def smoothed_cross_entropy(logits, targets, pad_id, eps, log_p=torch.log_softmax, spread="mean",
                           keep=None, divide_by_all=False, check=True):
    real = targets != pad_id
    if check and not real.any():
        raise ValueError("every target is padding")
    log_probs = log_p(logits, dim=-1)
    nll = -log_probs.gather(-1, targets[..., None])[..., 0]
    if spread == "mean":  # eps/V on every token, the right one included
        smooth = -log_probs.mean(dim=-1)
    elif spread == "sum":  # eps on every token: the target no longer sums to 1
        smooth = -log_probs.sum(dim=-1)
    else:  # eps/(V-1) on the wrong tokens only: another convention than the exercise's
        smooth = (-log_probs.sum(dim=-1) - nll) / (logits.shape[-1] - 1)
    loss = ((1 - eps) if keep is None else keep) * nll + eps * smooth
    return loss[real].sum() / (targets.numel() if divide_by_all else real.sum())


def smoothed_cross_entropy_from_q(logits, targets, pad_id, eps):
    real = targets != pad_id
    if not real.any():
        raise ValueError("every target is padding")
    v = logits.shape[-1]
    q = (1 - eps) * F.one_hot(targets, v) + eps / v  # the smoothed target distribution
    return -(q * torch.log_softmax(logits, dim=-1)).sum(dim=-1)[real].mean()


def smoothed_cross_entropy_by_torch(logits, targets, pad_id, eps, check=True):
    if check and (targets == pad_id).all():
        raise ValueError("every target is padding")
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=pad_id,
                           label_smoothing=eps)


ROWS = [
    *right(nb14.check_pad_and_mask, worked=pad_and_mask),
    *wrong(
        nb14.check_pad_and_mask,
        mask_from_ids=(lambda seqs, pad: (pad_and_mask(seqs, pad)[0],
                                          pad_and_mask(seqs, pad)[0] != pad),
                       "a real 0 inside a sentence: the mask comes from the lengths: mask: "
                       "values differ"),
        int_mask=(lambda seqs, pad: pad_and_mask(seqs, pad, mask_dtype=torch.long),
                  "mask: dtype: expected bool entries (torch.bool), got torch.int64"),
        float_padded=(lambda seqs, pad: pad_and_mask(seqs, pad, dtype=torch.float32),
                      "padded: dtype: expected integer entries (torch.int64), got torch.float32"),
        left_padded=(left_padded, "three lengths, pad 0: padded: values differ"),
        pads_the_input=(pad_in_place, "changed its argument `sequences` in place"),
    ),
    *right(nb14.check_masked_cross_entropy, course_utils=sequence_loss, worked=masked_cross_entropy,
           torch=lambda z, t, pad: F.cross_entropy(z.flatten(0, 1), t.flatten(), ignore_index=pad)),
    *wrong(
        nb14.check_masked_cross_entropy,
        counts_padding=(lambda *args: masked_cross_entropy(*args, divide_by_all=True),
                        "padding at the ends of rows: values differ"),
        log_of_softmax=(lambda *args: masked_cross_entropy(
            *args, log_p=lambda z, dim: torch.log(torch.softmax(z, dim=dim))),
                        "large logits: log_softmax, not log(softmax): values differ: expected "
                        "112.5989990234375, got inf"),
        a_float=(lambda *args: masked_cross_entropy(*args).item(),
                 "expected a torch.Tensor, got float"),
        marks_targets=(masked_cross_entropy_marking_targets,
                       "changed its argument `targets` in place"),
    ),
    *right(nb14.check_noam_lr, course_utils=warmup_lr, worked=noam_lr),
    *wrong(
        nb14.check_noam_lr,
        uses_max=(lambda *args: noam_lr(*args, pick=max), "the first step: values differ"),
        no_check=(lambda *args: noam_lr(*args, check=False),
                  "step 0 does not exist: should raise ValueError, returned 0.0"),
    ),
    *right(nb14.check_smoothed_cross_entropy, worked=smoothed_cross_entropy,
           from_q=smoothed_cross_entropy_from_q, torch=smoothed_cross_entropy_by_torch,
           course_utils=sequence_loss),
    *wrong(
        nb14.check_smoothed_cross_entropy,
        wrong_tokens_only=(lambda *args: smoothed_cross_entropy(*args, spread="others"),
                           "eps = 1: the target is uniform: values differ"),
        no_one_minus_eps=(lambda *args: smoothed_cross_entropy(*args, keep=1.0),
                          "the paper's eps = 0.1, padding at the ends of rows: values differ"),
        eps_per_token=(lambda *args: smoothed_cross_entropy(*args, spread="sum"),
                       "the paper's eps = 0.1, padding at the ends of rows: values differ"),
        counts_padding=(lambda *args: smoothed_cross_entropy(*args, divide_by_all=True),
                        "eps = 0: exercise 2's loss: values differ"),
        ignores_eps=(lambda logits, targets, pad_id, eps: smoothed_cross_entropy(
            logits, targets, pad_id, 0.0), "eps = 1: the target is uniform: values differ"),
        log_of_softmax=(lambda *args: smoothed_cross_entropy(
            *args, log_p=lambda z, dim: torch.log(torch.softmax(z, dim=dim))),
                        "large logits: log_softmax, not log(softmax): values differ"),
        torch_unchecked=(lambda *args: smoothed_cross_entropy_by_torch(*args, check=False),
                         "only padding: nothing to average: should raise ValueError, returned "
                         "tensor(nan)"),
        a_float=(lambda *args: smoothed_cross_entropy(*args).item(),
                 "expected a torch.Tensor, got float"),
    ),
]

test_checker = table_test(ROWS)
