"""Notebook 17's checkers: right answers pass, plausible mistakes fail with a reason."""

import math
import re

import numpy as np
import pytest
import torch
from checker_table import right, table_test, wrong

from course_utils import online_softmax
from course_utils.checks import nb17, predict


def online_softmax_stats(chunks, start=-math.inf, rescale=True):
    m, ell = start, 0.0
    for chunk in chunks:
        m_new = max(m, float(chunk.max()))
        ell = ell * (math.exp(m - m_new) if rescale else 1.0) + float(np.exp(chunk - m_new).sum())
        m = m_new
    return m, ell


def online_softmax_stats_by_merging(chunks):
    m, ell = -math.inf, 0.0
    for chunk in chunks:
        stats = online_softmax.online_softmax_stats(chunk)
        m, ell = online_softmax.merge_softmax_stats(m, ell, *stats)
    return m, ell


_merge, _stats = online_softmax.merge_softmax_stats, online_softmax.online_softmax_stats


def online_softmax_stats_by_default_merging(chunks, merge=online_softmax.merge_softmax_stats):
    m, ell = -math.inf, 0.0
    for chunk in chunks:
        m, ell = merge(m, ell, float(chunk.max()), float(np.exp(chunk - chunk.max()).sum()))
    return m, ell


def online_softmax_stats_by_aliased_merging(chunks):  # the course's functions under other names
    m, ell = -math.inf, 0.0
    for chunk in chunks:
        m, ell = _merge(m, ell, *_stats(chunk))
    return m, ell


def merge_softmax_stats(m1, l1, m2, l2):  # the learner's own, under the course's name
    m = max(m1, m2)
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


def online_softmax_stats_by_own_merging(chunks):
    m, ell = -math.inf, 0.0
    for chunk in chunks:
        top = float(chunk.max())
        m, ell = merge_softmax_stats(m, ell, top, float(np.exp(chunk - top).sum()))
    return m, ell


def _merged(m, ell, chunk):  # a helper of the learner's that calls the course's merge
    return online_softmax.merge_softmax_stats(m, ell, *online_softmax.online_softmax_stats(chunk))


def online_softmax_stats_by_a_merging_helper(chunks):
    m, ell = -math.inf, 0.0
    for chunk in chunks:
        m, ell = _merged(m, ell, chunk)
    return m, ell


def online_softmax_stats_per_score(chunks):  # section 2's loop inside each chunk
    m, ell = -math.inf, 0.0
    for chunk in chunks:
        for value in chunk:
            m_new = max(m, float(value))
            ell = ell * math.exp(m - m_new) + math.exp(float(value) - m_new)
            m = m_new
    return m, ell


def online_softmax_stats_in_logs(chunks):
    m, lse = -math.inf, -math.inf                      # the max and log Σ e^x so far
    for chunk in chunks:                               # each chunk is used before the next
        m = max(m, float(chunk.max()))
        lse = np.logaddexp(lse, np.logaddexp.reduce(chunk))   # never overflows
    return m, float(np.exp(lse - m))                   # ℓ = Σ e^(x - m) = e^(lse - m)


def two_passes_over_a_list(chunks):
    kept = list(chunks)
    m = max(float(c.max()) for c in kept)
    return m, sum(float(np.exp(c - m).sum()) for c in kept)


def concatenated(chunks):
    x = np.concatenate(list(chunks))
    return float(x.max()), float(np.exp(x - x.max()).sum())


def array_of_each_chunk_used_at_once(chunks):  # np.array(chunk) is fine when used right away
    m, ell = -math.inf, 0.0
    for chunk in chunks:
        x = np.array(chunk)
        m_new = max(m, float(x.max()))
        ell = ell * math.exp(m - m_new) + float(np.exp(x - m_new).sum())
        m = m_new
    return m, ell


def read_twice(chunks):
    m = max(float(c.max()) for c in chunks)
    return m, sum(float(np.exp(c - m).sum()) for c in chunks)


def chunk_max_only(chunks):  # each chunk's sum against its own max, added without rescaling
    m, ell = -math.inf, 0.0
    for chunk in chunks:
        ell += float(np.exp(chunk - chunk.max()).sum())
        m = max(m, float(chunk.max()))
    return m, ell


def causal_block_forward(q, q_start, blocks, stop=True, strict=False, rescale=True,
                         early=False):
    q = q / math.sqrt(q.shape[1])
    rows = q_start + np.arange(len(q))
    m, ell, acc, k_start = np.full(len(q), -np.inf), np.zeros(len(q)), 0.0, 0
    for k, v in blocks:
        keys = k_start + np.arange(len(k))
        allowed = keys[None, :] < rows[:, None] if strict else keys[None, :] <= rows[:, None]
        s = np.where(allowed, q @ k.T, -np.inf)
        m_new = np.maximum(m, s.max(axis=1))
        p = np.exp(s - m_new[:, None])
        alpha = np.exp(m - m_new) if rescale else 1.0
        ell = alpha * ell + p.sum(axis=1)
        acc = (alpha[:, None] if rescale else 1.0) * acc + p @ v
        m = m_new
        k_start += len(k)
        if stop and (k_start >= rows[-1] if early else k_start > rows[-1]):
            break
    return acc / ell[:, None], m + np.log(ell)


def causal_by_merging(q, q_start, blocks):  # exact attention per block, merged block by block
    out, lse, k_start = None, None, 0
    for k, v in blocks:
        keys = k_start + np.arange(len(k))
        s = q @ k.T / math.sqrt(q.shape[1])
        s = np.where(keys[None, :] <= q_start + np.arange(len(q))[:, None], s, -np.inf)
        m = s.max(axis=1)
        safe = np.where(np.isneginf(m), 0.0, m)
        p = np.exp(s - safe[:, None])
        total = p.sum(axis=1)
        part_out = np.divide(p @ v, total[:, None], out=np.zeros((len(q), v.shape[1])),
                             where=total[:, None] > 0)
        with np.errstate(divide="ignore"):
            part_lse = safe + np.log(total)
        if out is None:
            out, lse = part_out, part_lse
        else:
            out, lse = online_softmax.merge_attention_partials(out, lse, part_out, part_lse)
        k_start += len(k)
        if k_start > q_start + len(q) - 1:
            break
    return out, lse


def causal_in_logs(q, q_start, blocks):
    scaled = q / math.sqrt(q.shape[1])
    rows = q_start + np.arange(len(q))[:, None]        # (B_q, 1): the queries' positions
    lse = np.full(len(q), -np.inf)                     # log-sum-exp of the keys seen so far
    out = 0.0                                          # attention over the keys seen so far
    first = 0                                          # position of the block's first key
    for k_blk, v_blk in blocks:
        cols = first + np.arange(len(k_blk))[None, :]  # (1, B_k): the keys' positions
        scores = np.where(cols <= rows, scaled @ k_blk.T, -np.inf)
        new_lse = np.logaddexp(lse, np.logaddexp.reduce(scores, axis=1))
        # the old output carries weight e^(lse - new_lse); each new key e^(score - new_lse)
        out = np.exp(lse - new_lse)[:, None] * out + np.exp(scores - new_lse[:, None]) @ v_blk
        lse = new_lse
        first += len(k_blk)
        if first > rows[-1, 0]:                        # the next block is wholly in the future
            break
    return out, lse


def causal_concatenated(q, q_start, blocks):  # every block kept, then one softmax
    kept, seen = [], 0
    for k, v in blocks:
        kept.append((k, v))
        seen += len(k)
        if seen > q_start + len(q) - 1:
            break
    k = np.concatenate([k for k, _ in kept])
    v = np.concatenate([v for _, v in kept])
    s = q @ k.T / math.sqrt(q.shape[1])
    s = np.where(np.arange(len(k))[None, :] <= q_start + np.arange(len(q))[:, None], s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return p @ v / p.sum(axis=1, keepdims=True), s.max(axis=1) + np.log(p.sum(axis=1))


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


KEPT = ("it keeps the chunks for later: each arrives in the same reused buffer, so a kept chunk "
        "shows the last chunk's numbers")
RULE = "the rule: it calls merge_softmax_stats: the rule is to write the chunk-by-chunk update"

ROWS = [
    *right(nb17.check_online_softmax_stats, worked=online_softmax_stats,
           per_score=online_softmax_stats_per_score, in_logs=online_softmax_stats_in_logs,
           array_used_at_once=array_of_each_chunk_used_at_once,
           own_merge_softmax_stats=online_softmax_stats_by_own_merging),
    *wrong(
        nb17.check_online_softmax_stats,
        two_passes_over_a_list=(two_passes_over_a_list, "in chunks [2, 1] and [0.1]: "
                                f"{KEPT}; update m and ℓ as each chunk arrives; m: values differ"),
        concatenated=(concatenated, f"the max rises with every chunk: rescale ℓ: {KEPT}"),
        by_merging=(online_softmax_stats_by_merging, RULE),
        by_aliased_merging=(online_softmax_stats_by_aliased_merging, RULE),
        by_default_merging=(online_softmax_stats_by_default_merging, RULE),
        by_a_merging_helper=(online_softmax_stats_by_a_merging_helper, RULE),
        read_twice=(read_twice, "it reads the chunks a second time: they arrive once, in order"),
        starts_at_zero=(lambda x: online_softmax_stats(x, start=0.0),
                        "all negative: m starts at -inf, not 0: m: values differ: expected -3.0, "
                        "got 0.0"),
        no_rescale=(lambda x: online_softmax_stats(x, rescale=False),
                    "the max rises with every chunk: rescale ℓ: ℓ: values differ"),
        chunk_max_only=(chunk_max_only, "the max rises with every chunk: rescale ℓ: ℓ: values "
                        "differ"),
    ),
    *right(nb17.check_skipped_tiles, exact=28),
    *wrong(
        nb17.check_skipped_tiles,
        half=(128, "128 is too high: that is half the tiles"),
        square_triangle=(496, "496 is too high"),
        top_left=(220, "220 is too high: that aligns the mask top-left"),
        visited=(228, "228 is too high: that counts visited tiles, not skipped ones"),
        one_short=(27, "27 is too low"),
    ),
    *right(nb17.check_fa1_break_even, worked=12_544, as_float=12544.0, from_the_bound=(
        4 * 64 * math.ceil(32768 / ((4 * 32768 + 64 - 2) // (3 * 64 + 4))))),
    *wrong(
        nb17.check_fa1_break_even,
        block_rows=(49, "49 is too low: that is B_c, in rows of keys; the question asks for M, in "
                    "numbers"),
        no_4nd=(12_800, "12,800 is too high: that drops standard attention's 4Nd"),
        one_row_fewer=(12_288, "12,288 is too low: at that M FlashAttention-1 still moves more "
                       "than standard attention: count its outer steps"),
        fa2_order=(8_192, "8192 is too low: that is where section 6's FlashAttention-2 order"),
        s_and_p_once=(25_344, "25,344 is too high: that counts S and P once each"),
        no_q_per_step=(8_448, "8448 is too low: that leaves out Q, read at every outer step"),
        in_bytes=(25_088, "25,088 is too high: that is in bytes"),
        not_whole_rows=(12_289, "12,289 is too low: M is a whole number of rows of 4d numbers"),
        a100_sram=(98_304, "98,304 is too high: write both counts, find the most outer steps T_c"),
        string=("12,544", "expected a number, got str"),
    ),
    *right(nb17.check_causal_block_forward, worked=causal_block_forward,
           by_merging=causal_by_merging, in_logs=causal_in_logs),
    *wrong(
        nb17.check_causal_block_forward,
        reads_every_block=(lambda *a: causal_block_forward(*a, stop=False),
                           "block 3 is not written yet (NaN): a causal loop stops before it: out: "
                           "values differ: expected"),
        concatenated=(causal_concatenated, "it keeps the blocks for later: each arrives in the "
                      "same reused buffer, so a kept block shows the last one's numbers"),
        strict_mask=(lambda *a: causal_block_forward(*a, strict=True),
                     "queries 0-3: only the diagonal block, masked inside: out: values differ"),
        one_block_early=(lambda *a: causal_block_forward(*a, early=True),
                         "queries 5-8: the next block starts at the last query (key 8), so the "
                         "loop must read it: out: values differ"),
        no_rescale=(lambda *a: causal_block_forward(*a, rescale=False),
                    "the max rises in every block: rescale ℓ and the accumulator: out: values "
                    "differ"),
    ),
    *right(nb17.check_tile_backward, worked=tile_backward),
    *wrong(
        nb17.check_tile_backward,
        given=(nb17.tile_backward_given, "the second of two key tiles: the tile holds only some "
               "of each row's keys: still the bug: P is a softmax over this tile's keys alone; "
               "rebuild it from the saved lse, normalised over all keys; dq: values differ"),
        missing_d=(lambda *a: tile_backward(*a, d_term=False),
                   "one tile holding every key: the whole gradient: dq: values differ"),
        missing_scale=(lambda *a: tile_backward(*a, scale_q=False),
                       "one tile holding every key: the whole gradient: dq: values differ"),
        exp_then_divide=(tile_backward_exp_then_divide,
                         "scores near 800: exp(S) alone overflows: dq: values differ"),
    ),
]

test_checker = table_test(ROWS)


@pytest.mark.parametrize("checker, answers, expected", [
    (nb17.check_skipped_tiles, (128, 496, 220, 228, 27), r"\b28\b"),
    (nb17.check_fa1_break_even, (49, 12_800, 12_288, 8_192, 25_344, 8_448, 25_088, 12_289),
     r"12,?544|B_c = 49|49 rows"),
])
def test_a_first_miss_holds_the_answer_back(checker, answers, expected, monkeypatch, capsys):
    """Neither the hint nor a named mistake gives the answer (or B_c = 49 rows) away."""
    for answer in answers:
        monkeypatch.setattr(predict, "_misses", {})  # each a first miss
        checker(answer)
        printed = capsys.readouterr().out
        assert "✗" in printed and not re.search(expected, printed), printed
