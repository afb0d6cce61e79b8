"""The notebook 14 checkers accept the reference solutions and catch plausible mistakes."""

import torch

from course_utils.checks import nb14


def _stub(*args):
    raise NotImplementedError


def test_pad_and_mask_checker():
    def good(seqs, pad_id):
        if not seqs:
            raise ValueError("empty")
        n = max(len(s) for s in seqs)
        padded = torch.tensor([s + [pad_id] * (n - len(s)) for s in seqs])
        mask = torch.tensor([[True] * len(s) + [False] * (n - len(s)) for s in seqs])
        return padded, mask

    def mask_from_ids(seqs, pad_id):  # wrong when a real token equals 0
        padded, _ = good(seqs, pad_id)
        return padded, padded != 0

    def left_padded(seqs, pad_id):
        if not seqs:
            raise ValueError("empty")
        n = max(len(s) for s in seqs)
        padded = torch.tensor([[pad_id] * (n - len(s)) + s for s in seqs])
        return padded, padded != pad_id

    assert nb14.check_pad_and_mask(good).passed
    assert nb14.check_pad_and_mask(mask_from_ids).status == "failed"
    assert nb14.check_pad_and_mask(left_padded).status == "failed"
    assert nb14.check_pad_and_mask(_stub).status == "not attempted"


def test_masked_cross_entropy_checker():
    def good(logits, targets, pad_id):
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(),
                                                 ignore_index=pad_id)

    def counts_padding(logits, targets, pad_id):  # sums real positions, divides by all
        log_p = torch.log_softmax(logits, -1).gather(-1, targets[..., None])[..., 0]
        return -(log_p * (targets != pad_id)).sum() / targets.numel()

    def log_of_softmax(logits, targets, pad_id):  # underflows to -inf for large logits
        log_p = torch.log(torch.softmax(logits, -1)).gather(-1, targets[..., None])[..., 0]
        real = targets != pad_id
        return -(log_p[real]).sum() / real.sum()

    assert nb14.check_masked_cross_entropy(good).passed
    assert nb14.check_masked_cross_entropy(counts_padding).status == "failed"
    assert nb14.check_masked_cross_entropy(log_of_softmax).status == "failed"
    assert nb14.check_masked_cross_entropy(_stub).status == "not attempted"


def test_noam_lr_checker():
    def good(step, d, w):
        if step < 1:
            raise ValueError("step")
        return d**-0.5 * min(step**-0.5, step * w**-1.5)

    def uses_max(step, d, w):
        if step < 1:
            raise ValueError("step")
        return d**-0.5 * max(step**-0.5, step * w**-1.5)

    def no_check(step, d, w):
        return d**-0.5 * min(step**-0.5 if step else 0.0, step * w**-1.5)

    assert nb14.check_noam_lr(good).passed
    assert nb14.check_noam_lr(uses_max).status == "failed"
    assert nb14.check_noam_lr(no_check).status == "failed"
    assert nb14.check_noam_lr(_stub).status == "not attempted"


def test_teacher_forcing_checker():
    assert nb14.check_teacher_forcing(lambda ids, b, e: ([b, *ids], [*ids, e])).passed
    swapped = nb14.check_teacher_forcing(lambda ids, b, e: ([*ids, e], [b, *ids]))
    assert swapped.status == "failed"
    same = nb14.check_teacher_forcing(lambda ids, b, e: ([b, *ids, e], [b, *ids, e]))
    assert same.status == "failed"
    assert nb14.check_teacher_forcing(_stub).status == "not attempted"
