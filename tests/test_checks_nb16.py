"""Notebook 16's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import torch
from checker_table import right, table_test, wrong

from course_utils import positional
from course_utils.checks import nb16


def best_draft_length(a, c):
    ks = np.arange(0, 1000)
    return int(np.argmax((1 - a ** (ks + 1)) / ((1 - a) * (ks * c + 1))))


def best_by_loop(a, c):  # another correct formulation: walk up while the speedup still grows
    def speedup(k):
        return sum(a**i for i in range(k + 1)) / (k * c + 1)

    k = 0
    while speedup(k + 1) > speedup(k):
        k += 1
    return k


def best_by_loop_ties(a, c):  # the same walk, going on through a tie: a tie is no mistake
    def speedup(k):
        return (1 - a ** (k + 1)) / ((1 - a) * (k * c + 1))

    k = 0
    while speedup(k + 1) >= speedup(k):
        k += 1
    return k


def draft_cost_ignored(a, c):
    ks = np.arange(0, 1000)
    return int(np.argmax((1 - a ** (ks + 1)) / (1 - a)))


def no_bonus_token(a, c):
    ks = np.arange(0, 1000)
    tokens = np.where(ks > 0, (1 - a**ks) / (1 - a), 1.0)
    return int(np.argmax(tokens / (ks * c + 1)))


def from_one(a, c):  # never returns 0: speculation always
    ks = np.arange(1, 1000)
    return int(ks[np.argmax((1 - a ** (ks + 1)) / ((1 - a) * (ks * c + 1)))])


def one_pass_too_many(a, c):  # a round costed as k + 1 draft passes, (k + 1)c + 1
    ks = np.arange(0, 1000)
    return int(np.argmax((1 - a ** (ks + 1)) / ((1 - a) * ((ks + 1) * c + 1))))


def store(k_buffer, v_buffer, p, k_p, v_p):
    slot = p % len(k_buffer)
    k_buffer[slot] = positional.apply_rope(k_p[None], [p])[0]
    v_buffer[slot] = v_p


def store_not_rotated(k_buffer, v_buffer, p, k_p, v_p):
    slot = p % len(k_buffer)
    k_buffer[slot] = k_p
    v_buffer[slot] = v_p


def store_last_slot(k_buffer, v_buffer, p, k_p, v_p):  # once full, keeps overwriting one slot
    slot = min(p, len(k_buffer) - 1)
    k_buffer[slot] = positional.apply_rope(k_p[None], [p])[0]
    v_buffer[slot] = v_p


def store_copy(k_buffer, v_buffer, p, k_p, v_p):  # writes into copies, not the buffers
    k_buffer, v_buffer = k_buffer.clone(), v_buffer.clone()
    store(k_buffer, v_buffer, p, k_p, v_p)


def gather(pool, tables, lengths):
    size = pool.shape[1]
    p = torch.arange(int(lengths.max()))
    valid = p[None, :] < lengths[:, None]
    flat = torch.where(valid, tables[:, p // size] * size + p % size, 0)
    return pool.flatten(0, 1)[flat] * valid[..., None]


def gather_blocks_first(pool, tables, lengths):  # another: blocks first, then cut and mask
    blocks = pool[tables.clamp(min=0)].flatten(1, 2)[:, : int(lengths.max())]
    valid = torch.arange(blocks.shape[1])[None, :] < lengths[:, None]
    return torch.where(valid[..., None], blocks, torch.zeros(()))


def gather_loop(pool, tables, lengths):  # the notebook's gather, one sequence at a time
    n_max, rows = int(lengths.max()), []
    for b in range(len(tables)):
        n = int(lengths[b])
        keys = torch.cat([pool[block] for block in tables[b, : math.ceil(n / pool.shape[1])]])
        rows.append(torch.cat([keys[:n], keys.new_zeros(n_max - n, keys.shape[1])]))
    return torch.stack(rows)


def gather_column_loop(pool, tables, lengths):  # right numbers, a loop over the columns
    size, n_max = pool.shape[1], int(lengths.max())
    out = pool.new_zeros(len(tables), tables.shape[1] * size, pool.shape[2])
    for t in range(tables.shape[1]):
        out[:, t * size : (t + 1) * size] = pool[tables[:, t]]
    valid = torch.arange(n_max)[None, :] < lengths[:, None]
    return out[:, :n_max] * valid[..., None]


def gather_comprehension(pool, tables, lengths):  # right numbers, a loop in a comprehension
    n_max = int(lengths.max())
    blocks = torch.cat([pool[tables[:, t]] for t in range(tables.shape[1])], dim=1)[:, :n_max]
    valid = torch.arange(n_max)[None, :] < lengths[:, None]
    return blocks * valid[..., None]


def gather_no_zeros(pool, tables, lengths):  # keeps what the last block holds after the end
    return pool[tables.clamp(min=0)].flatten(1, 2)[:, : int(lengths.max())]


def gather_negative_index(pool, tables, lengths):  # -1 entries index the last block
    size = pool.shape[1]
    p = torch.arange(int(lengths.max()))
    return pool.flatten(0, 1)[tables[:, p // size] * size + p % size]


ROWS = [
    *right(nb16.check_decode_intensity, exact=223, as_float=223.0),
    *wrong(
        nb16.check_decode_intensity,
        rounded_down=(222, "222 is too low: at B = 222 the intensity is 200.3, still below 200.6: "
                      "round up"),
        not_rounded=(222.4, "that is not a whole number of sequences: a batch holds whole "
                     "sequences; at B = 222 the intensity is 200.3, still below 200.6: round up"),
        not_whole=(223.4, "223.4 is too high: that is not a whole number of sequences"),
        near_below=(219, "219 is too low: write the FLOPs and the bytes for B sequences"),
        near_above=(227, "227 is too high: write the FLOPs and the bytes for B sequences"),
        intensity_is_batch=(201, "201 is too low: that takes the intensity to be B itself"),
        one=(1, "that is one sequence"),
        float32=(500, "that counts 4 bytes a number"),
        other=(100, "100 is too low: write the FLOPs and the bytes for B sequences"),
        string=("223 sequences", "expected a number, got str"),
    ),
    *right(nb16.check_best_draft_length, worked=best_draft_length, by_loop=best_by_loop,
           by_loop_through_ties=best_by_loop_ties),
    *wrong(
        nb16.check_best_draft_length,
        draft_cost_ignored=(draft_cost_ignored, "gives an expected speedup of 0.549, the best k "
                            "gives 3.092"),
        no_bonus_token=(no_bonus_token, "k = 9 gives an expected speedup of 3.078, the best "
                        "k gives 3.092"),
        always_speculate=(from_one, "a = 0.5, c = 0.6: a slow draft that is often wrong: k = 1 "
                          "gives an expected speedup of 0.938, the best k gives 1.000"),
        one_pass_too_many=(one_pass_too_many, "a = 0.6, c = 0.3: k = 2 gives an expected speedup "
                           "of 1.225, the best k gives 1.231"),
        float_answer=(lambda a, c: float(best_draft_length(a, c)), "expected a whole number of "
                      "draft tokens (an int), got float"),
    ),
    *right(nb16.check_store, worked=store),
    *wrong(
        nb16.check_store,
        given=(nb16.store_given, "20 tokens, W = 8: the buffer wraps at token 8: the outputs "
               "are right for the first 8 tokens and wrong from token 8 on: right until the "
               "buffer wraps"),
        not_rotated=(store_not_rotated, "6 tokens, W = 8: the buffer never fills: the output of "
                     "token 1 is wrong, before the buffer wraps"),
        last_slot=(store_last_slot, "20 tokens, W = 8: the buffer wraps at token 8: the outputs "
                   "are right for the first 8 tokens and wrong from token 8 on"),
        copies=(store_copy, "6 tokens, W = 8: the buffer never fills: after store(..., p = 0, "
                "...) k_buffer or v_buffer is as it was: write into the buffers it is given, in "
                "place"),
    ),
    *right(nb16.check_gather, worked=gather, blocks_first=gather_blocks_first),
    *wrong(
        nb16.check_gather,
        python_loop=(gather_loop, "it loops in Python"),
        column_loop=(gather_column_loop, "blocks of 2: it loops in Python"),
        comprehension=(gather_comprehension, "blocks of 2: it loops in Python"),
        no_zeros=(gather_no_zeros, "lengths 5, 1, 12: short tables padded with -1: values differ"),
        negative_index=(gather_negative_index, "lengths 5, 1, 12: short tables padded with -1: "
                        "values differ"),
    ),
]

test_checker = table_test(ROWS)
