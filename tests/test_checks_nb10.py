"""Notebook 10's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import torch
import torch.nn.functional as F
from checker_table import right, table_test, wrong

from course_utils import attention
from course_utils.checks import nb10


def causal_attention(q, k, v, keep_future=False, zero_empty=True, shift=1, fill=-math.inf,
                     scale=True):
    lq, lk = q.shape[-2], k.shape[-2]
    ahead = torch.ones(lq, lk, dtype=torch.bool).triu(diagonal=lk - lq + shift)
    logits = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scale else 1)
    weights = torch.softmax(logits.masked_fill(~ahead if keep_future else ahead, fill), -1)
    if zero_empty:
        weights = torch.nan_to_num(weights, nan=0.0)
    return weights @ v, weights


def top_left(q, k, v):
    lq, lk = q.shape[-2], k.shape[-2]
    keep = torch.ones(lq, lk, dtype=torch.bool).tril()
    logits = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~keep, -math.inf)
    weights = torch.nan_to_num(torch.softmax(logits, -1), nan=0.0)
    return weights @ v, weights


def buggy_causal_attention(q, k, v):
    """The exercise's given code, as it is."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    future = torch.ones(n_q, n_k, dtype=torch.bool).triu(diagonal=n_k - n_q + 1)
    weights = torch.softmax(scores.masked_fill(~future, float("-inf")), dim=-1)
    return weights @ v, weights


def causal_by_sdpa_is_causal(q, k, v):
    """F.scaled_dot_product_attention's is_causal=True, which aligns the mask top-left."""
    keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    logits = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~keep, -math.inf)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return out, torch.softmax(logits, -1)


def output_only(q, k, v):
    return causal_attention(q, k, v)[0]


def padded_causal(q, k, v, lengths, keys=True, causal=True, padding=True, fill=-math.inf,
                  zero_empty=True, queries_too=False, or_equal=False):
    n = q.shape[-2]
    key, length = torch.arange(n)[None, :], torch.tensor(lengths)[:, None]
    real = key <= length if or_equal else key < length
    visible = torch.ones(len(lengths), n, n, dtype=torch.bool)
    if padding:
        visible = visible & (real[:, None, :] if keys else real[:, :, None])
    if queries_too:
        visible = visible & real[:, :, None]
    if causal:
        visible = visible & torch.ones(n, n, dtype=torch.bool).tril()
    logits = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(logits.masked_fill(~visible, fill), dim=-1)
    if zero_empty:
        weights = torch.nan_to_num(weights, nan=0.0)
    return weights @ v, weights


def padded_causal_by_course(q, k, v, lengths):
    keep = attention.token_mask(lengths, max_len=q.shape[-2])[:, None, :]
    return attention.softmax_attention(q, k, v, mask=keep, causal=True)


def causal_by_torch(q, k, v):
    """F.scaled_dot_product_attention with a mask from tril, as section 7 compared them."""
    lq, lk = q.shape[-2], k.shape[-2]
    keep = torch.ones(lq, lk, dtype=torch.bool).tril(diagonal=lk - lq)
    out = torch.nan_to_num(F.scaled_dot_product_attention(q, k, v, attn_mask=keep), nan=0.0)
    logits = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~keep, -math.inf)
    return out, torch.nan_to_num(torch.softmax(logits, -1), nan=0.0)


def padded_causal_by_torch(q, k, v, lengths):
    n = q.shape[-2]
    real = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
    keep = real[:, None, :] & torch.ones(n, n, dtype=torch.bool).tril()
    logits = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~keep, -math.inf)
    weights = torch.nan_to_num(torch.softmax(logits, -1), nan=0.0)
    out = torch.nan_to_num(F.scaled_dot_product_attention(q, k, v, attn_mask=keep), nan=0.0)
    return out, weights


# The learner's code in a module of its own, as a notebook's __main__ is.
_LEARNER = {"__name__": "learner", "math": math, "torch": torch}
exec("""
def causal_mask(n_q, n_k):  # the learner's own helper, named like the course's: allowed
    return torch.ones(n_q, n_k, dtype=torch.bool).tril(diagonal=n_k - n_q)


def causal_with_own_helper(q, k, v):
    keep = causal_mask(q.shape[-2], k.shape[-2])
    logits = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~keep, -math.inf)
    weights = torch.nan_to_num(torch.softmax(logits, -1), nan=0.0)
    return weights @ v, weights

""", _LEARNER)


ROWS = [
    *right(nb10.check_saturated_weight, worked=3.4e-4, exact=1 / (1 + math.exp(8)),
           approx=math.exp(-8), rounded_down=3.3e-4),
    *wrong(
        nb10.check_saturated_weight,
        one_figure=(3e-4, "0.0003 is too low: that is one significant figure, and the question "
                    "asks for two"),
        rounded_up=(3.5e-4, "0.00035 is too high: only the difference of the two scores matters"),
        far_up=(3.7e-4, "0.00037 is too high"),
        scaled=(1 / (1 + math.e), "the weight with the scaling (a gap of 1)"),
        higher_key=(0.99966, "the weight of the higher key"),
        equal=(0.5, "the weight of two equal scores"),
        one_over_eight=(1 / 8, "0.125 is too high: only the difference of the two scores matters"),
        text=("3.4e-4", "expected a number, got str"),
    ),
    *right(nb10.check_causal_attention, worked=causal_attention,
           own_helper_named_causal_mask=_LEARNER["causal_with_own_helper"],
           course_utils=lambda q, k, v: attention.softmax_attention(q, k, v, causal=True),
           torch_sdpa=causal_by_torch),
    *wrong(
        nb10.check_causal_attention,
        the_given_code=(buggy_causal_attention, "still the bug: masked_fill(~future, ...)"),
        the_bug=(lambda q, k, v: causal_attention(q, k, v, keep_future=True),
                 "the map still looks into the future"),
        one_ahead=(lambda q, k, v: causal_attention(q, k, v, shift=2),
                   "the map still looks into the future"),
        strict=(lambda q, k, v: causal_attention(q, k, v, shift=0),
                "4 tokens: query i sees keys 0..i: output: values differ"),
        top_left=(top_left, "the last query sees all 5: the mask is aligned top-left"),
        sdpa_is_causal=(causal_by_sdpa_is_causal, "the mask is aligned top-left"),
        nan_rows=(lambda q, k, v: causal_attention(q, k, v, zero_empty=False), "are nan"),
        minus_1e9=(lambda q, k, v: causal_attention(q, k, v, fill=-1e9),
                   "their rows must be 0: output: values differ"),
        output_only=(output_only, "expected a tuple of 2 items (output, weights)"),
        unscaled=(lambda q, k, v: causal_attention(q, k, v, scale=False),
                  "4 tokens: query i sees keys 0..i: the mask is right, but the scores are not "
                  "divided by √d_k"),
    ),
    *right(nb10.check_padded_causal_attention, worked=padded_causal,
           course_utils=padded_causal_by_course, torch_sdpa=padded_causal_by_torch),
    *wrong(
        nb10.check_padded_causal_attention,
        course_causal_only=(lambda q, k, v, n: attention.softmax_attention(q, k, v, causal=True),
                            "keys 2 and 3 are padding: output: values differ"),
        causal_only=(lambda q, k, v, n: padded_causal(q, k, v, n, padding=False),
                     "keys 2 and 3 are padding: output: values differ"),
        padding_only=(lambda q, k, v, n: padded_causal(q, k, v, n, causal=False),
                      "the causal mask alone: output: values differ"),
        masks_queries=(lambda q, k, v, n: padded_causal(q, k, v, n, keys=False),
                       "keys 2 and 3 are padding: the rows of padded queries are all 0"),
        queries_and_keys=(lambda q, k, v, n: padded_causal(q, k, v, n, queries_too=True),
                          "the rows of padded queries are all 0: the padding mask is about keys"),
        minus_1e9=(lambda q, k, v, n: padded_causal(q, k, v, n, fill=-1e9),
                   "sentence 1 is empty: every row sees nothing and must be 0: output"),
        nan_rows=(lambda q, k, v, n: padded_causal(q, k, v, n, zero_empty=False), "are nan"),
        one_key_too_many=(lambda q, k, v, n: padded_causal(q, k, v, n, or_equal=True),
                          "keys 2 and 3 are padding: the padding mask keeps one key too many"),
    ),
]

test_checker = table_test(ROWS)
