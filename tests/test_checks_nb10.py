"""Notebook 10's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import torch
import torch.nn.functional as F
from checker_table import right, table_test, wrong
from torch import nn
from torch.nn.attention.bias import causal_lower_right, causal_upper_left

from course_utils import attention
from course_utils.checks import nb10


def causal_attention(q, k, v, keep_future=False, zero_empty=True, shift=1, fill=-math.inf):
    lq, lk = q.shape[-2], k.shape[-2]
    ahead = torch.ones(lq, lk, dtype=torch.bool).triu(diagonal=lk - lq + shift)
    logits = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
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


def output_only(q, k, v):
    return causal_attention(q, k, v)[0]


def padded_causal(q, k, v, lengths, keys=True, causal=True, padding=True, fill=-math.inf,
                  zero_empty=True, queries_too=False):
    n = q.shape[-2]
    real = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
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
    keep = attention.padding_mask(lengths, max_len=q.shape[-2])[:, None, :]
    return attention.softmax_attention(q, k, v, mask=keep, causal=True)


def causal_by_torch(q, k, v):
    """F.scaled_dot_product_attention with a mask from tril, as section 7 compared them."""
    lq, lk = q.shape[-2], k.shape[-2]
    keep = torch.ones(lq, lk, dtype=torch.bool).tril(diagonal=lk - lq)
    out = torch.nan_to_num(F.scaled_dot_product_attention(q, k, v, attn_mask=keep), nan=0.0)
    logits = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~keep, -math.inf)
    return out, torch.nan_to_num(torch.softmax(logits, -1), nan=0.0)


def causal_by_course_mask(q, k, v):
    keep = attention.causal_mask(q.shape[-2], k.shape[-2])
    logits = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~keep, -math.inf)
    weights = torch.nan_to_num(torch.softmax(logits, -1), nan=0.0)
    return weights @ v, weights


def padded_causal_by_torch(q, k, v, lengths):
    n = q.shape[-2]
    real = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
    keep = real[:, None, :] & torch.ones(n, n, dtype=torch.bool).tril()
    logits = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~keep, -math.inf)
    weights = torch.nan_to_num(torch.softmax(logits, -1), nan=0.0)
    out = torch.nan_to_num(F.scaled_dot_product_attention(q, k, v, attn_mask=keep), nan=0.0)
    return out, weights


def padded_causal_by_closure():
    """The course's functions held by a closure, under other names."""
    pm, sa = attention.padding_mask, attention.softmax_attention

    def padded(q, k, v, lengths):
        return sa(q, k, v, mask=pm(lengths, max_len=q.shape[-2])[:, None, :], causal=True)
    return padded


def causal_by_torch_bias(q, k, v):
    """PyTorch's ready-made bottom-right mask, turned into a boolean matrix."""
    keep = causal_lower_right(q.shape[-2], k.shape[-2])._materialize()
    logits = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~keep, -math.inf)
    weights = torch.nan_to_num(torch.softmax(logits, -1), nan=0.0)
    return weights @ v, weights


def padded_causal_by_torch_bias(q, k, v, lengths):
    """The causal half from PyTorch's top-left mask (N_q = N_k here), the padding half by hand."""
    n = q.shape[-2]
    real = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
    keep = real[:, None, :] & causal_upper_left(n, n)._materialize()
    logits = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~keep, -math.inf)
    weights = torch.nan_to_num(torch.softmax(logits, -1), nan=0.0)
    return weights @ v, weights


def causal_by_square_mask(q, k, v):
    """nn.Transformer's float mask (0 = attend, -inf = blocked), sliced to bottom-right."""
    n = max(q.shape[-2], k.shape[-2])
    bias = nn.Transformer.generate_square_subsequent_mask(n, dtype=q.dtype)[-q.shape[-2]:,
                                                                            -k.shape[-2]:]
    weights = torch.nan_to_num(torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
                                             + bias, -1), nan=0.0)
    return weights @ v, weights


def padded_causal_by_square_mask(q, k, v, lengths):
    """The causal half from nn.Transformer's float mask, the padding half by hand."""
    n = q.shape[-2]
    real = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
    logits = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    logits = (logits + nn.Transformer.generate_square_subsequent_mask(n, dtype=q.dtype))
    weights = torch.nan_to_num(torch.softmax(logits.masked_fill(~real[:, None, :], -math.inf),
                                             -1), nan=0.0)
    return weights @ v, weights


def causal_by_getattr(q, k, v):
    """The course's function under a name built at run time: no name of it in the code."""
    return getattr(attention, "softmax_" + "attention")(q, k, v, causal=True)


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


from course_utils.attention import softmax_attention as sa


def causal_by_alias(q, k, v):
    return sa(q, k, v, causal=True)


from torch.nn.attention.bias import causal_lower_right as lower_right


def causal_by_bias_alias(q, k, v):
    keep = lower_right(q.shape[-2], k.shape[-2])._materialize()
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
           own_helper_named_causal_mask=_LEARNER["causal_with_own_helper"]),
    *wrong(
        nb10.check_causal_attention,
        course_utils=(lambda q, k, v: attention.softmax_attention(q, k, v, causal=True),
                      "your code uses attention.softmax_attention, which builds the mask"),
        course_mask=(causal_by_course_mask, "your code uses attention.causal_mask"),
        torch_sdpa=(causal_by_torch, "your code uses F.scaled_dot_product_attention"),
        course_alias=(_LEARNER["causal_by_alias"], "your code uses attention.softmax_attention"),
        course_getattr=(causal_by_getattr, "your code uses attention.softmax_attention"),
        torch_causal_bias=(causal_by_torch_bias, "4 tokens: query i sees keys 0..i: your code "
                           "uses torch.nn.attention.bias.causal_lower_right, which builds the "
                           "mask"),
        square_subsequent_mask=(causal_by_square_mask, "your code uses "
                                "nn.Transformer.generate_square_subsequent_mask"),
        torch_causal_bias_alias=(_LEARNER["causal_by_bias_alias"],
                                 "your code uses torch.nn.attention.bias.causal_lower_right"),
        the_bug=(lambda q, k, v: causal_attention(q, k, v, keep_future=True),
                 "the map still looks into the future"),
        one_ahead=(lambda q, k, v: causal_attention(q, k, v, shift=2),
                   "the map still looks into the future"),
        strict=(lambda q, k, v: causal_attention(q, k, v, shift=0),
                "4 tokens: query i sees keys 0..i: output: values differ"),
        top_left=(top_left, "the last query sees all 5: output: values differ"),
        nan_rows=(lambda q, k, v: causal_attention(q, k, v, zero_empty=False), "are nan"),
        minus_1e9=(lambda q, k, v: causal_attention(q, k, v, fill=-1e9),
                   "their rows must be 0: output: values differ"),
        output_only=(output_only, "expected a tuple of 2 items (output, weights)"),
    ),
    *right(nb10.check_padded_causal_attention, worked=padded_causal),
    *wrong(
        nb10.check_padded_causal_attention,
        course_utils=(padded_causal_by_course, "your code uses attention.padding_mask"),
        torch_sdpa=(padded_causal_by_torch, "your code uses F.scaled_dot_product_attention"),
        course_in_closure=(padded_causal_by_closure(), "your code uses attention.padding_mask"),
        course_getattr=(lambda q, k, v, n: getattr(attention, "softmax_" + "attention")(
            q, k, v, causal=True), "your code uses attention.softmax_attention"),
        torch_causal_bias=(padded_causal_by_torch_bias,
                           "your code uses torch.nn.attention.bias.causal_upper_left"),
        square_subsequent_mask=(padded_causal_by_square_mask, "your code uses "
                                "nn.Transformer.generate_square_subsequent_mask"),
        causal_only=(lambda q, k, v, n: padded_causal(q, k, v, n, padding=False),
                     "keys 2 and 3 are padding: output: values differ"),
        padding_only=(lambda q, k, v, n: padded_causal(q, k, v, n, causal=False),
                      "the causal mask alone: output: values differ"),
        masks_queries=(lambda q, k, v, n: padded_causal(q, k, v, n, keys=False),
                       "keys 2 and 3 are padding: the rows of sentence 1's padded queries"),
        queries_and_keys=(lambda q, k, v, n: padded_causal(q, k, v, n, queries_too=True),
                          "padded queries (2 and after) are all 0: the padding mask is about "
                          "keys"),
        minus_1e9=(lambda q, k, v, n: padded_causal(q, k, v, n, fill=-1e9),
                   "sentence 1 is empty: every row sees nothing and must be 0: output"),
        nan_rows=(lambda q, k, v, n: padded_causal(q, k, v, n, zero_empty=False), "are nan"),
    ),
]

test_checker = table_test(ROWS)
