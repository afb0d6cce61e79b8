"""Notebook 10's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import torch
import torch.nn.functional as F
from checker_table import right, table_test, wrong

from course_utils import attention
from course_utils.checks import nb10


def attention_weights(q, k, scale=None, dim=-1):
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same d_k, got {q.shape[-1]} and {k.shape[-1]}")
    scale = math.sqrt(q.shape[-1]) if scale is None else scale
    return torch.softmax(q @ k.transpose(-2, -1) / scale, dim=dim)


def causal_mask(lq, lk, shift=0):
    return torch.ones(lq, lk, dtype=torch.bool).tril(diagonal=lk - lq + shift)


def masked_attention(q, k, v, mask, fill=float("-inf"), nan_to_zero=True):
    scores = (q @ k.T / math.sqrt(q.shape[-1])).masked_fill(~mask, fill)
    weights = torch.softmax(scores, dim=-1)
    return (torch.nan_to_num(weights, nan=0.0) if nan_to_zero else weights) @ v


def masked_attention_by_torch(q, k, v, mask):
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return out.masked_fill(~mask.any(-1, keepdim=True), 0.0)


ROWS = [
    *right(nb10.check_attention_weights, worked=attention_weights),
    *wrong(
        nb10.check_attention_weights,
        unscaled=(lambda q, k: attention_weights(q, k, scale=1.0), "values differ"),
        over_queries=(lambda q, k: attention_weights(q, k, dim=-2), "values differ"),
        divides_by_d_k=(lambda q, k: attention_weights(q, k, scale=q.shape[-1]),
                        "one query, two keys: softmax([1, 0] / √2): values differ"),
        float32=(lambda q, k: attention_weights(q.float(), k.float()),
                 "dtype: expected torch.float64, got torch.float32"),
    ),
    *right(nb10.check_causal_mask, worked=causal_mask, course_utils=attention.causal_mask),
    *wrong(
        nb10.check_causal_mask,
        top_left=(lambda lq, lk: torch.ones(lq, lk, dtype=torch.bool).tril(),
                  "2 new queries after 3 cached keys: the last query sees all 5: values differ"),
        strict=(lambda lq, lk: causal_mask(lq, lk, shift=-1),
                "square: the lower triangle: values differ"),
        floats=(lambda lq, lk: causal_mask(lq, lk).float(),
                "dtype: expected bool entries (torch.bool), got torch.float32"),
        numpy=(lambda lq, lk: causal_mask(lq, lk).numpy(),
               "expected a torch.Tensor, got numpy.ndarray"),
    ),
    *right(nb10.check_masked_attention, worked=masked_attention, torch=masked_attention_by_torch),
    *wrong(
        nb10.check_masked_attention,
        minus_1e9=(lambda q, k, v, mask: masked_attention(q, k, v, mask, fill=-1e9),
                   "query 2 sees no key: its output row must be 0: values differ"),
        nan_rows=(lambda q, k, v, mask: masked_attention(q, k, v, mask, nan_to_zero=False),
                  "(2 are nan)"),
        inverted=(lambda q, k, v, mask: masked_attention(q, k, v, ~mask),
                  "the last two keys are padding: values differ"),
    ),
]

test_checker = table_test(ROWS)
