"""The notebook 06 checkers accept a correct solution and catch plausible mistakes."""

import numpy as np

from course_utils.checks import nb06


def stub(*args):
    raise NotImplementedError


def good_entropy(p):
    p = np.asarray(p, dtype=np.float64)
    nz = p[p > 0]
    return float(-np.sum(nz * np.log(nz)))


def naive_entropy(p):
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(-np.sum(p * np.log(p)))  # 0 * log 0 = nan


def good_kl(p, q):
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    mask = p > 0
    with np.errstate(divide="ignore"):
        return float(np.sum(p[mask] * (np.log(p[mask]) - np.log(q[mask]))))


def swapped_kl(p, q):
    return good_kl(q, p)


def good_ce(logits, targets):
    logits = np.asarray(logits, dtype=np.float64)
    m = logits.max(axis=-1, keepdims=True)
    log_probs = logits - m - np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))
    keep = targets != -100
    return float(-log_probs[np.arange(len(targets))[keep], targets[keep]].mean())


def ce_counting_padding(logits, targets):
    logits = np.asarray(logits, dtype=np.float64)
    m = logits.max(axis=-1, keepdims=True)
    log_probs = logits - m - np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))
    keep = targets != -100
    return float(-log_probs[np.arange(len(targets))[keep], targets[keep]].sum() / len(targets))


def ce_of_log_softmax_unstable(logits, targets):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        probs = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
        keep = targets != -100
        return float(-np.log(probs[np.arange(len(targets))[keep], targets[keep]]).mean())


def test_entropy_from_scratch():
    assert nb06.check_entropy_from_scratch(good_entropy).passed
    assert nb06.check_entropy_from_scratch(naive_entropy).status == "failed"
    bits = nb06.check_entropy_from_scratch(lambda p: good_entropy(p) / np.log(2))
    assert bits.status == "failed"
    assert nb06.check_entropy_from_scratch(stub).status == "not attempted"


def test_kl_from_scratch():
    assert nb06.check_kl_from_scratch(good_kl).passed
    assert nb06.check_kl_from_scratch(swapped_kl).status == "failed"
    assert nb06.check_kl_from_scratch(stub).status == "not attempted"


def test_cross_entropy_from_logits():
    assert nb06.check_cross_entropy_from_logits(good_ce).passed
    assert nb06.check_cross_entropy_from_logits(ce_counting_padding).status == "failed"
    assert nb06.check_cross_entropy_from_logits(ce_of_log_softmax_unstable).status == "failed"
    assert nb06.check_cross_entropy_from_logits(stub).status == "not attempted"
