"""Notebook 14's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import torch
import torch.nn.functional as F
from checker_table import right, table_test, wrong

from course_utils.checks import nb14
from course_utils.training import sequence_loss


def pad_and_mask(sequences, pad_id, dtype=torch.long, mask_dtype=torch.bool, check_empty=True):
    if len(sequences) == 0:
        raise ValueError("sequences must not be empty")
    longest = max(len(s) for s in sequences)
    if check_empty and longest == 0:
        raise ValueError("every sequence is empty: there is nothing to pad")
    padded = torch.full((len(sequences), longest), pad_id, dtype=dtype)
    mask = torch.zeros(len(sequences), longest, dtype=mask_dtype)
    for row, seq in enumerate(sequences):
        padded[row, : len(seq)] = torch.tensor(seq, dtype=dtype)
        mask[row, : len(seq)] = True
    return padded, mask


def mask_from_ids(sequences, pad_id):  # True wherever the id is not pad_id
    padded = pad_and_mask(sequences, pad_id)[0]
    return padded, padded != pad_id


def pad_with_own_helper(sequences, pad_id):  # the learner's own pad_sequences, np.stack of rows
    padded = pad_sequences(sequences, pad_id)
    lengths = torch.tensor([len(s) for s in sequences])
    return padded, torch.arange(padded.shape[1]) < lengths[:, None]


def pad_sequences(sequences, pad_id):  # the name of the course's function, written here
    if not sequences:
        raise ValueError("no sequences")
    longest = max(len(s) for s in sequences)
    if longest == 0:
        raise ValueError("only empty sequences")
    return torch.from_numpy(np.stack([np.array(s + [pad_id] * (longest - len(s)), dtype=np.int64)
                                      for s in sequences]))


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


def mean_loss(model, batches):  # the worked solution: add up, then divide once
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in batches:
            logits = model(batch.src, batch.tgt_in, batch.src_token_mask, batch.tgt_token_mask)
            real = batch.tgt_out != batch.pad_id
            total += F.cross_entropy(logits[real], batch.tgt_out[real], reduction="sum").item()
            count += int(real.sum())
    return total / count


def mean_loss_weighted(model, batches, weigh="positions"):  # each batch's mean times a weight
    means, weights = [], []
    with torch.no_grad():
        for batch in batches:
            logits = model(batch.src, batch.tgt_in, batch.src_token_mask, batch.tgt_token_mask)
            means.append(sequence_loss(logits, batch.tgt_out, batch.pad_id).item())
            real = batch.tgt_out != batch.pad_id
            weights.append({"positions": int(real.sum()), "batches": 1,
                            "sentences": batch.src.shape[0]}[weigh])
    return float(np.dot(means, weights) / sum(weights))


def mean_loss_concatenated(model, batches):  # every real position's loss in one tensor
    with torch.no_grad():
        per_position = [F.cross_entropy(
            model(b.src, b.tgt_in, b.src_token_mask, b.tgt_token_mask).transpose(1, 2),
            b.tgt_out, reduction="none")[b.tgt_out != b.pad_id] for b in batches]
    return torch.cat(per_position).mean().item()


def mean_loss_over_padding(model, batches):  # the sum over real positions, divided by all
    total, count = 0.0, 0
    with torch.no_grad():
        for b in batches:
            logits = model(b.src, b.tgt_in, b.src_token_mask, b.tgt_token_mask)
            total += F.cross_entropy(logits.flatten(0, 1), b.tgt_out.flatten(),
                                     ignore_index=b.pad_id, reduction="sum").item()
            count += b.tgt_out.numel()
    return total / count


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
    elif spread == "annotated":  # the Annotated Transformer: eps/(V-2) off the right and pad
        smooth = (-log_probs.sum(dim=-1) - nll + log_probs[..., pad_id]) / (logits.shape[-1] - 2)
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
    *right(nb14.check_pad_and_mask, worked=pad_and_mask, own_helper=pad_with_own_helper),
    *wrong(
        nb14.check_pad_and_mask,
        mask_from_ids=(mask_from_ids, "a real 0 inside a sentence: the mask comes from the "
                       "lengths: the mask is read from the ids (padded != pad_id)"),
        int_mask=(lambda seqs, pad: pad_and_mask(seqs, pad, mask_dtype=torch.long),
                  "mask: dtype: expected torch.bool, got torch.int64"),
        float_padded=(lambda seqs, pad: pad_and_mask(seqs, pad, dtype=torch.float32),
                      "padded: dtype: expected torch.int64, got torch.float32"),
        int32_padded=(lambda seqs, pad: pad_and_mask(seqs, pad, dtype=torch.int32),
                      "padded: dtype: expected torch.int64"),
        left_padded=(left_padded, "three lengths, pad 0: padded: values differ"),
        pads_the_input=(pad_in_place, "changed its argument `sequences` in place"),
        all_empty_padded=(lambda seqs, pad: pad_and_mask(seqs, pad, check_empty=False),
                          "only empty sequences: nothing to pad: should raise ValueError"),
    ),
    *right(nb14.check_untrained_loss, estimate=math.log(43) + 0.5, measured=4.24),
    *wrong(
        nb14.check_untrained_loss,
        log_v=(math.log(43), "3.7612 is too low: that is log V, a uniform guess"),
        untrained_model=(4.184, "4.184 is too low: that is section 6's untrained model"),
        three_percent_low=(4.1, "4.1 is too low: write the loss at one position"),
        log_v_plus_variance=(math.log(43) + 1, "4.7612 is too high: that adds σ² = 1"),
        log2=(math.log2(43), "is too high: that is log base 2 of V"),
        a_tensor=(torch.tensor(4.24), "expected a number, got torch.Tensor"),
    ),
    *right(nb14.check_mean_loss, worked=mean_loss, weighted_means=mean_loss_weighted,
           concatenated=mean_loss_concatenated),
    *wrong(
        nb14.check_mean_loss,
        as_given=(lambda m, b: mean_loss_weighted(m, b, "batches"), "a batch of 3 pairs, then "
                  "one of 1: still the bug: every batch's mean counts once"),
        by_sentences=(lambda m, b: mean_loss_weighted(m, b, "sentences"),
                      "a batch of 3 pairs, then one of 1: it weighs each batch by its number "
                      "of sentences"),
        over_padding=(mean_loss_over_padding, "it divides by every position, padding included"),
    ),
    *right(nb14.check_smoothed_cross_entropy, worked=smoothed_cross_entropy,
           from_q=smoothed_cross_entropy_from_q,
           by_torch=smoothed_cross_entropy_by_torch,  # label_smoothing=: a note, not a failure
           by_course_utils=sequence_loss),
    *wrong(
        nb14.check_smoothed_cross_entropy,
        annotated_transformer=(lambda *args: smoothed_cross_entropy(*args, spread="annotated"),
                               "the paper's alpha = 0.1, padding at the ends of rows: this is the "
                               "Annotated Transformer's p, α/(V − 2)"),
        wrong_tokens_only=(lambda *args: smoothed_cross_entropy(*args, spread="others"),
                           "alpha = 1: the target is uniform: this gives α/(V − 1) to each wrong "
                           "token only"),
        mean_with_padding=(lambda logits, targets, pad_id, eps: smoothed_cross_entropy_from_q(
            logits, targets, -1, eps),  # no target equals -1: every position is averaged
                           "the padded positions are averaged in with their own losses"),
        no_one_minus_eps=(lambda *args: smoothed_cross_entropy(*args, keep=1.0),
                          "the paper's alpha = 0.1, padding at the ends of rows: values differ"),
        eps_per_token=(lambda *args: smoothed_cross_entropy(*args, spread="sum"),
                       "the paper's alpha = 0.1, padding at the ends of rows: values differ"),
        counts_padding=(lambda *args: smoothed_cross_entropy(*args, divide_by_all=True),
                        "alpha = 0: section 4's loss: the mean is taken over every position, "
                        "padding included"),
        ignores_eps=(lambda logits, targets, pad_id, eps: smoothed_cross_entropy(
            logits, targets, pad_id, 0.0), "alpha = 1: the target is uniform: values differ"),
        log_of_softmax=(lambda *args: smoothed_cross_entropy(
            *args, log_p=lambda z, dim: torch.log(torch.softmax(z, dim=dim))),
                        "large logits: log_softmax, not log(softmax): values differ"),
        torch_unchecked=(lambda *args: smoothed_cross_entropy_by_torch(*args, check=False),
                         "only padding: nothing to average: should raise ValueError"),
        a_float=(lambda *args: smoothed_cross_entropy(*args).item(),
                 "expected a torch.Tensor, got float"),
    ),
]

test_checker = table_test(ROWS)
