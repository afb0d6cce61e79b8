"""Notebook 14's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import torch
import torch.nn.functional as F
from checker_table import right, table_test, wrong

from course_utils.checks import nb14
from course_utils.training import sequence_loss


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


def train(model, batches, lr, order="right", make_optimizer=None):
    optimizer = (make_optimizer or (lambda p: torch.optim.SGD(p, lr=lr)))(model.parameters())
    losses = []
    for x, y in batches:
        if order == "right":
            optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if order == "between":  # the notebook's bug: the gradients are gone before step()
            optimizer.zero_grad()
        optimizer.step()
        if order == "after":  # also right: the next backward() starts from zero
            optimizer.zero_grad()
        losses.append(loss.item())
    return losses


class _ZeroingSGD(torch.optim.SGD):
    def __init__(self, model, lr):  # zero_grad through the model instead of the optimizer
        super().__init__(model.parameters(), lr=lr)
        self.model = model

    def zero_grad(self, set_to_none=True):
        self.model.zero_grad()


def train_by_hand(model, batches, lr):
    losses = []
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        grads = torch.autograd.grad(loss, list(model.parameters()))  # fresh, never accumulated
        with torch.no_grad():
            for p, g in zip(model.parameters(), grads, strict=True):
                p -= lr * g
        losses.append(loss.item())
    return losses


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
    *right(nb14.check_train, worked=lambda *a: train(*a), zero_after_step=lambda *a: train(
        *a, order="after"), by_hand=train_by_hand,
           model_zero_grad=lambda m, b, lr: train(m, b, lr, order="right",
                                                  make_optimizer=lambda p: _ZeroingSGD(m, lr))),
    *wrong(
        nb14.check_train,
        as_given=(lambda *a: train(*a, order="between"), "6 batches, lr 0.5: still the bug: the "
                  "weights never moved, so the loss cannot fall"),
        never_zeroed=(lambda *a: train(*a, order="never"), "the gradients add up from step to "
                      "step: backward() adds (+=) into .grad"),
        adam=(lambda m, b, lr: train(m, b, lr, make_optimizer=lambda p: torch.optim.Adam(p, lr)),
              "6 batches, lr 0.5: it steps with Adam: the exercise's step is plain SGD"),
        momentum=(lambda m, b, lr: train(m, b, lr, make_optimizer=lambda p: torch.optim.SGD(
            p, lr, momentum=0.9)), "6 batches, lr 0.5: the SGD has momentum=0.9: the exercise's "
                  "step is plain SGD"),
        tensors=(lambda *a: [torch.tensor(v) for v in train(*a)][:-1],
                 "6 batches, lr 0.5: shape: expected (6,), got (5,)"),
    ),
    *right(nb14.check_smoothed_cross_entropy, worked=smoothed_cross_entropy,
           from_q=smoothed_cross_entropy_from_q,
           by_torch=smoothed_cross_entropy_by_torch,  # label_smoothing=: a note, not a failure
           by_course_utils=sequence_loss),
    *wrong(
        nb14.check_smoothed_cross_entropy,
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
