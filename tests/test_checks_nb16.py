"""Notebook 16's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import torch
from checker_table import right, table_test, wrong

from course_utils import positional, sampling
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


def best_by_the_library(a, c):  # section 7's sampling.expected_tokens_per_pass, from k = 0
    return max(range(200), key=lambda k: sampling.expected_tokens_per_pass(a, k) / (k * c + 1))


def index_not_k(a, c):  # the argmax over an array of k that starts at 1: a position, not k
    ks = np.arange(1, 1000)
    return int(np.argmax((1 - a ** (ks + 1)) / ((1 - a) * (ks * c + 1))))


def target_pass_ignored(a, c):  # a round costed as k·c alone: k = 0 costs nothing
    ks = np.arange(0, 1000)
    with np.errstate(divide="ignore"):
        return int(ks[np.argmax((1 - a ** (ks + 1)) / ((1 - a) * (ks * c)))])


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


def store_value_rotated(k_buffer, v_buffer, p, k_p, v_p):  # the value turned as well
    slot = p % len(k_buffer)
    k_buffer[slot] = positional.apply_rope(k_p[None], [p])[0]
    v_buffer[slot] = positional.apply_rope(v_p[None], [p])[0]


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


def _flat_rows(tables, p, size):  # the learner's own helper: scanned, and it has no loop
    return tables[:, p // size] * size + p % size


def gather_with_a_helper(pool, tables, lengths):
    p = torch.arange(int(lengths.max()))
    valid = p[None, :] < lengths[:, None]
    return pool.flatten(0, 1)[torch.where(valid, _flat_rows(tables, p, pool.shape[1]), 0)] * (
        valid[..., None])


def gather_by_torch_gather(pool, tables, lengths):  # torch.gather: nothing forbids it
    size, d = pool.shape[1], pool.shape[2]
    p = torch.arange(int(lengths.max()))
    rows = tables.clamp(min=0)[:, p // size] * size + p % size
    flat = pool.flatten(0, 1).expand(len(tables), -1, -1)
    out = torch.gather(flat, 1, rows[..., None].expand(-1, -1, d))
    return out * (p[None, :] < lengths[:, None])[..., None]


def _one_sequence(pool, table, length, n_max):  # a helper with the loop in it
    keys = torch.cat([pool[block] for block in table.clamp(min=0)])[:n_max]
    return keys * (torch.arange(n_max) < length)[:, None]


def gather_with_a_looping_helper(pool, tables, lengths):
    n_max = int(lengths.max())
    return torch.stack([_one_sequence(pool, t, n, n_max) for t, n in zip(tables, lengths,
                                                                          strict=True)])


def gather_by_map(pool, tables, lengths):  # right numbers, a loop in map
    n_max = int(lengths.max())

    def one(b):
        keys = pool[tables[b].clamp(min=0)].flatten(0, 1)[:n_max]
        return keys * (torch.arange(n_max) < lengths[b])[:, None]

    return torch.stack(list(map(one, range(len(tables)))))


def gather_by_vectorize(pool, tables, lengths):  # right numbers, np.vectorize loops in Python
    size, n_max = pool.shape[1], int(lengths.max())

    def row(b, p):
        return int(tables[b, p // size]) * size + p % size if p < lengths[b] else 0

    b, p = np.meshgrid(np.arange(len(tables)), np.arange(n_max), indexing="ij")
    valid = torch.arange(n_max)[None, :] < lengths[:, None]
    return pool.flatten(0, 1)[torch.from_numpy(np.vectorize(row)(b, p))] * valid[..., None]


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
        not_rounded=(222.4, "that is not a whole number of sequences; at B = 222 the intensity is "
                     "200.3, still below 200.6: round up"),
        not_whole=(223.4, "223.4 is too high: that is not a whole number of sequences"),
        near_below=(219, "219 is too low: write the FLOPs and the bytes of B sequences"),
        near_above=(227, "227 is too high: write the FLOPs and the bytes of B sequences"),
        intensity_is_batch=(201, "201 is too low: that takes the intensity to be B itself"),
        ridge_rounded_down=(200, "200 is too low: that takes the intensity to be B itself, and "
                            "rounds the ridge down"),
        outputs_forgotten=(211, "211 is too low: that counts one set of the B vectors, not both: "
                           "the B inputs are read and the B results written"),
        outputs_forgotten_half=(445, "445 is too high: that counts one set of the B vectors, not "
                                "both, and half the intensity"),
        one=(1, "that is one sequence"),
        float32=(500, "that counts 4 bytes a number"),
        other=(100, "100 is too low: write the FLOPs and the bytes of B sequences"),
        string=("223 sequences", "expected a number, got str"),
    ),
    *right(nb16.check_best_draft_length, worked=best_draft_length, by_loop=best_by_loop,
           by_loop_through_ties=best_by_loop_ties, by_the_library=best_by_the_library),
    *wrong(
        nb16.check_best_draft_length,
        draft_cost_ignored=(draft_cost_ignored, "a = 0.8, c = 0.05: it leaves out the draft's "
                            "cost: its k passes of a round take time too; values differ: "
                            "expected 8, got"),
        no_bonus_token=(no_bonus_token, "the tokens are off by one: a round keeps the accepted "
                        "proposals and adds one token of the target's own, so k proposals give up "
                        "to k + 1 tokens; values differ: expected 8, got 9"),
        index_not_k=(index_not_k, "a = 0.8, c = 0.05: it returns a position in its array of k, "
                     "not k: the array starts at k = 1; values differ: expected 8, got 7"),
        target_pass_ignored=(target_pass_ignored, "a = 0.8, c = 0.05: it always returns 0: the "
                             "cost of a round leaves out the target's pass"),
        always_speculate=(from_one, "a = 0.5, c = 0.6: it never returns 0: when no k beats plain "
                          "decoding, do not speculate; values differ: expected 0, got 1"),
        one_pass_too_many=(one_pass_too_many, "a = 0.6, c = 0.3: it charges the draft one pass "
                           "too many: a round runs it k times"),
        float_answer=(lambda a, c: float(best_draft_length(a, c)), "expected an integer, got "
                      "float 8.0"),
    ),
    *right(nb16.check_store, worked=store),
    *wrong(
        nb16.check_store,
        given=(nb16.store_given, "20 tokens, W = 8: still the given function's numbers: right "
               "until the buffer wraps, wrong from token W on; values differ in 48 of 80 entries "
               "of shape (20, 4), the first at [8, 0]"),
        value_rotated=(store_value_rotated, "6 tokens, W = 8: the value is rotated too: RoPE "
                       "turns the queries and the keys"),
        not_rotated=(store_not_rotated, "6 tokens, W = 8: values differ in 20 of 24 entries of "
                     "shape (6, 4), the first at [1, 0]"),
        last_slot=(store_last_slot, "20 tokens, W = 8: values differ in 48 of 80 entries of shape "
                   "(20, 4), the first at [8, 0]"),
        copies=(store_copy, "6 tokens, W = 8: the buffers stay zero: write into k_buffer and "
                "v_buffer themselves, in place"),
    ),
    *right(nb16.check_gather, worked=gather, blocks_first=gather_blocks_first,
           with_a_helper=gather_with_a_helper, by_torch_gather=gather_by_torch_gather),
    *wrong(
        nb16.check_gather,
        python_loop=(gather_loop, "the rule: it has a for loop: the rule is no Python loop"),
        column_loop=(gather_column_loop, "the rule: it has a for loop: the rule is no Python "
                     "loop"),
        comprehension=(gather_comprehension, "the rule: it has a comprehension: the rule is no "
                       "Python loop"),
        looping_helper=(gather_with_a_looping_helper, "the rule: it has a comprehension"),
        by_map=(gather_by_map, "the rule: it calls map: the rule is no Python loop"),
        by_vectorize=(gather_by_vectorize, "the rule: it calls vectorize: the rule is no Python "
                      "loop"),
        no_zeros=(gather_no_zeros, "lengths 5, 1, 12: short tables padded with -1: values differ"),
        negative_index=(gather_negative_index, "lengths 5, 1, 12: short tables padded with -1: "
                        "values differ"),
    ),
]

test_checker = table_test(ROWS)
