"""Notebook 16's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import torch
from checker_table import right, table_test, wrong

from course_utils import tiled
from course_utils.checks import nb16


def online_softmax_stats(x, start=-math.inf, rescale=True):
    m, ell = start, 0.0
    for value in x:
        m_new = max(m, float(value))
        ell = ell * (math.exp(m - m_new) if rescale else 1.0) + math.exp(value - m_new)
        m = m_new
    return m, ell


def online_softmax_stats_from_first(x):
    values = iter(x)
    m, ell = float(next(values)), 1.0
    for value in values:
        m, ell = tiled.merge_softmax_stats(m, ell, float(value), 1.0)
    return m, ell


def two_passes(x):
    m = max(x)
    return float(m), sum(math.exp(value - m) for value in x)


def as_array(x):
    x = np.asarray(x, dtype=np.float64)
    return float(x.max()), float(np.exp(x - x.max()).sum())


def merge_partials(out1, lse1, out2, lse2):
    lse = np.logaddexp(lse1, lse2)
    safe = np.where(np.isneginf(lse), 0.0, lse)
    return np.exp(lse1 - safe)[:, None] * out1 + np.exp(lse2 - safe)[:, None] * out2, lse


def merge_partials_nan_when_empty(out1, lse1, out2, lse2):
    lse = np.logaddexp(lse1, lse2)
    return np.exp(lse1 - lse)[:, None] * out1 + np.exp(lse2 - lse)[:, None] * out2, lse


def merge_partials_naively(out1, lse1, out2, lse2):
    w1, w2 = np.exp(lse1), np.exp(lse2)
    return (w1[:, None] * out1 + w2[:, None] * out2) / (w1 + w2)[:, None], np.log(w1 + w2)


def count_causal_tiles(lq, lk, block_q, block_k, align=None):
    count = 0
    for q_start in range(0, lq, block_q):
        last_key = min(q_start + block_q, lq) - 1 + (lk - lq if align is None else align)
        count += sum(1 for k_start in range(0, lk, block_k) if k_start <= last_key)
    return count


def block_forward(q, blocks, rescale_sum=True, rescale_out=True, lse_is_max=False):
    q = q / math.sqrt(q.shape[1])
    m, ell, acc = np.full(len(q), -np.inf), np.zeros(len(q)), 0.0
    for k, v in blocks:
        s = q @ k.T
        m_new = np.maximum(m, s.max(axis=1))
        p = np.exp(s - m_new[:, None])
        alpha = np.exp(m - m_new)
        ell = (alpha if rescale_sum else 1.0) * ell + p.sum(axis=1)
        acc = (alpha[:, None] if rescale_out else 1.0) * acc + p @ v
        m = m_new
    return acc / ell[:, None], m if lse_is_max else m + np.log(ell)


def block_forward_by_blocks(q, blocks):  # merging per-block attention, exercise 2's way
    out, lse = None, None
    for k, v in blocks:
        part = tiled.tiled_attention_numpy(q, k, v, block_q=len(q), block_k=len(k))
        out, lse = part if out is None else tiled.merge_attention_partials(out, lse, *part)
    return out, lse


def block_forward_two_passes(q, blocks):
    m = max(float((q @ k.T).max()) for k, _ in blocks)
    return block_forward(q, blocks)[0], np.full(len(q), m)


def block_forward_without_max(q, blocks):
    q = q / math.sqrt(q.shape[1])
    num, den = 0.0, 0.0
    for k, v in blocks:
        p = np.exp(q @ k.T)
        num, den = num + p @ v, den + p.sum(axis=1)
    return num / den[:, None], np.log(den)


def tile_backward(q, k, v, out, lse, grad_out, d_term=True, scale_q=True, tile_softmax=False):
    scale = 1 / math.sqrt(q.shape[1])
    s = q @ k.T * scale
    p = torch.softmax(s, dim=1) if tile_softmax else torch.exp(s - lse[:, None])
    dv = p.T @ grad_out
    dp = grad_out @ v.T
    delta = (grad_out * out).sum(dim=1, keepdim=True) if d_term else 0.0
    ds = p * (dp - delta)
    return ds @ k * (scale if scale_q else 1.0), ds.T @ q * scale, dv


def tile_backward_exp_then_divide(q, k, v, out, lse, grad_out):
    scale = 1 / math.sqrt(q.shape[1])
    p = torch.exp(q @ k.T * scale) / torch.exp(lse)[:, None]
    ds = p * (grad_out @ v.T - (grad_out * out).sum(dim=1, keepdim=True))
    return ds @ k * scale, ds.T @ q * scale, p.T @ grad_out


ROWS = [
    *right(nb16.check_online_softmax_stats, worked=online_softmax_stats,
           from_first=online_softmax_stats_from_first),
    *wrong(
        nb16.check_online_softmax_stats,
        two_passes=(two_passes, "it reads x a second time: x is a stream that can be read once"),
        as_an_array=(as_array, "it turns x into an array"),
        starts_at_zero=(lambda x: online_softmax_stats(x, start=0.0),
                        "all negative: m starts at -inf, not 0: m: values differ: expected -3.0, "
                        "got 0.0"),
        no_rescale=(lambda x: online_softmax_stats(x, rescale=False),
                    "increasing: the max changes every step: ℓ: values differ"),
        log_of_sum=(lambda x: (lambda m, ell: (m, math.log(ell)))(*online_softmax_stats(x)),
                    "ℓ: values differ"),
    ),
    *right(nb16.check_merge_partials, course_utils=tiled.merge_attention_partials,
           worked=merge_partials),
    *wrong(
        nb16.check_merge_partials,
        nan_when_both_empty=(merge_partials_nan_when_empty,
                             "a row empty in both parts: out 0 and lse -inf, not NaN: out: values "
                             "differ"),
        average=(lambda out1, lse1, out2, lse2: ((out1 + out2) / 2, np.logaddexp(lse1, lse2)),
                 "three rows, one with log-sum-exp 900: out: values differ"),
        overflows=(merge_partials_naively, "[nan, nan, nan, nan]]; 4 of 12 entries differ (4 are "
                   "nan), the worst at [2, 0]: expected -1.5244078842009887, got nan (it warned: "
                   "overflow encountered in exp)"),
        forgets_lse=(lambda *args: (merge_partials(*args)[0], np.maximum(args[1], args[3])),
                     "equal halves: same out, lse + log 2: lse: values differ: expected "
                     "[1.19314718], got [0.5]"),
    ),
    *right(nb16.check_count_causal_tiles, worked=count_causal_tiles),
    *wrong(
        nb16.check_count_causal_tiles,
        top_left=(lambda *args: count_causal_tiles(*args, align=0),
                  "Lq < Lk: bottom-right alignment: values differ"),
        about_half=(lambda lq, lk, bq, bk: math.ceil(lq / bq) * math.ceil(lk / bk) // 2,
                    "8×8 in 2×2 tiles: 10 of 16: values differ: expected 10, got 8"),
        triangle_formula=(lambda lq, lk, bq, bk: (n := math.ceil(lq / bq)) * (n + 1) / 2,
                          "8×8 in 2×2 tiles: 10 of 16: expected an integer, got float 10.0"),
    ),
]

ROWS += [
    *right(nb16.check_block_forward, worked=block_forward, merging_blocks=block_forward_by_blocks),
    *wrong(
        nb16.check_block_forward,
        no_rescale=(lambda q, b: block_forward(q, b, rescale_sum=False, rescale_out=False),
                    "the max rises in every block: rescale ℓ and the output: out: values differ"),
        forgets_the_output=(lambda q, b: block_forward(q, b, rescale_out=False),
                            "the max rises in every block: rescale ℓ and the output: out: "
                            "values differ"),
        lse_is_max=(lambda q, b: block_forward(q, b, lse_is_max=True),
                    "3 queries, 12 keys in blocks of 4: lse: values differ"),
        two_passes=(block_forward_two_passes,
                    "it reads blocks a second time: blocks is a stream that can be read once"),
        without_max=(block_forward_without_max, "scores near 1000, the last block shorter: no "
                     "overflow: out: values differ"),
    ),
    *right(nb16.check_tile_backward, worked=tile_backward),
    *wrong(
        nb16.check_tile_backward,
        missing_d=(lambda *a: tile_backward(*a, d_term=False),
                   "one tile holding every key: the whole gradient: dq: values differ"),
        missing_scale=(lambda *a: tile_backward(*a, scale_q=False),
                       "one tile holding every key: the whole gradient: dq: values differ"),
        tile_softmax=(lambda *a: tile_backward(*a, tile_softmax=True),
                      "the second of two key tiles: P = exp(S - lse), not a softmax over the "
                      "tile: dq: values differ"),
        exp_then_divide=(tile_backward_exp_then_divide,
                         "scores near 800: exp(S) alone overflows: dq: values differ"),
    ),
]

test_checker = table_test(ROWS)
