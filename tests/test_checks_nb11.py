"""Notebook 11's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import torch
import torch.nn.functional as F
from checker_table import right, table_test, wrong
from torch import nn

from course_utils import attention
from course_utils.checks import nb11


def split_heads(x, n_heads, transpose=True):
    b, n, d_model = x.shape
    if not transpose:
        return x.reshape(b, n_heads, n, d_model // n_heads)
    return x.reshape(b, n, n_heads, d_model // n_heads).transpose(1, 2)


def multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads, scale_by_d_model=False, use_w_o=True,
                         transpose=True, over_queries=False, merge_transpose=True):
    b, n, d_model = x.shape
    q, k, v = (split_heads(x @ w, n_heads, transpose) for w in (w_q, w_k, w_v))
    d = d_model if scale_by_d_model else q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    weights = torch.softmax(scores, dim=-2 if over_queries else -1)
    z = weights @ v
    z = (z.transpose(1, 2) if merge_transpose else z).reshape(b, n, d_model)
    return z @ w_o if use_w_o else z


def multi_head_attention_by_course(x, w_q, w_k, w_v, w_o, n_heads):
    q, k, v = (attention.split_heads(x @ w, n_heads) for w in (w_q, w_k, w_v))
    return attention.merge_heads(attention.softmax_attention(q, k, v)[0]) @ w_o


def multi_head_attention_by_torch(x, w_q, w_k, w_v, w_o, n_heads):
    """The split by hand, each head's attention by F.scaled_dot_product_attention."""
    b, n, d_model = x.shape
    q, k, v = (split_heads(x @ w, n_heads) for w in (w_q, w_k, w_v))
    z = F.scaled_dot_product_attention(q, k, v)
    return z.transpose(1, 2).reshape(b, n, d_model) @ w_o


def test_compare_with_heads_loop(capsys):
    """The helper of the exercise's cell: the buggy code agrees with one head only."""
    def buggy(x, w_q, w_k, w_v, w_o, n_heads):
        return multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads, scale_by_d_model=True,
                                    transpose=False)

    nb11.compare_with_heads_loop(buggy)
    nb11.compare_with_heads_loop(multi_head_attention, heads=(1, 2, 4))
    assert capsys.readouterr().out.splitlines() == [
        "n_heads = 1: equal to the per-head computation: True",
        "n_heads = 2: equal to the per-head computation: False",
        *(f"n_heads = {h}: equal to the per-head computation: True" for h in (1, 2, 4))]


def attention_parameters(d_model, n_heads, d_head, bias=True, q_bias=None, out_bias=None,
                         out_in=None):
    width = n_heads * d_head
    q_bias = width if q_bias is None else q_bias  # the length of each of W^Q, W^K, W^V's biases
    out_bias = d_model if out_bias is None else out_bias
    out_in = width if out_in is None else out_in  # the rows of W^O
    return 3 * d_model * width + out_in * d_model + (3 * q_bias + out_bias if bias else 0)


def attention_parameters_by_torch(d_model, n_heads, d_head, bias=True):
    width = n_heads * d_head
    projections = [nn.Linear(d_model, width, bias=bias, device="meta") for _ in range(3)]
    projections.append(nn.Linear(width, d_model, bias=bias, device="meta"))  # W^O
    return sum(p.numel() for layer in projections for p in layer.parameters())


def multi_head_attention_by_nn(x, w_q, w_k, w_v, w_o, n_heads, transpose=True):
    """torch's nn.MultiheadAttention with the given weights (nn.Linear stores W transposed)."""
    d_model = x.shape[-1]
    layer = nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True).double()
    t = (lambda w: w.T) if transpose else (lambda w: w)
    with torch.no_grad():
        layer.in_proj_weight.copy_(torch.cat([t(w_q), t(w_k), t(w_v)]))
        layer.out_proj.weight.copy_(t(w_o))
    return layer(x, x, x, need_weights=False)[0]


ROWS = [
    *right(nb11.check_multi_head_attention, worked=multi_head_attention,
           course_utils=multi_head_attention_by_course, torch_sdpa=multi_head_attention_by_torch,
           torch_nn=multi_head_attention_by_nn),
    *wrong(
        nb11.check_multi_head_attention,
        the_given_code=(lambda *args: multi_head_attention(*args, scale_by_d_model=True,
                                                           transpose=False),
                        "two heads, d_k = 4: still the bug: the heads are split by a plain "
                        "reshape, without the transpose: each 'head' mixes tokens; and the scores "
                        "are divided by √d_model"),
        scaled_by_d_model=(lambda *args: multi_head_attention(*args, scale_by_d_model=True),
                           "two heads, d_k = 4: the scores are divided by √d_model"),
        no_transpose=(lambda *args: multi_head_attention(*args, transpose=False),
                      "two heads, d_k = 4: the heads are split by a plain reshape"),
        over_queries=(lambda *args: multi_head_attention(*args, over_queries=True),
                      "one head: plain attention: the softmax runs over the queries"),
        merge_without_transpose=(lambda *args: multi_head_attention(*args,
                                                                    merge_transpose=False),
                                 "two heads, d_k = 4: the heads are merged by a plain reshape"),
        forgets_w_o=(lambda *args: multi_head_attention(*args, use_w_o=False),
                     "one head: plain attention: W^O is missing"),
        w_o_transposed=(lambda x, w_q, w_k, w_v, w_o, h: multi_head_attention(x, w_q, w_k, w_v,
                                                                            w_o.T, h),
                        "one head: plain attention: the merged heads are multiplied by W^O "
                        "transposed"),
        torch_nn_weights_not_transposed=(
            lambda *args: multi_head_attention_by_nn(*args, transpose=False),
            "one head: plain attention: all four matrices are used transposed"),
    ),
    *right(nb11.check_heads_match_projections, worked=2 * 512, as_float=1024.0),
    *wrong(
        nb11.check_heads_match_projections,
        scores_only=(4 * 512, "where Q_i K_iᵀ alone costs as much as the projections"),
        three_projections=(768, "the concatenated heads times W^O is a fourth"),
        one_head=(2 * 512 * 8, "the question sums over all h = 8 heads"),
        d_model_per_head=(128, "they have d_k = 64 terms"),
        d_model=(512, "512 is too low: write both counts as formulas in N"),
        a_string=("1024", "expected a number, got"),
    ),
    *right(nb11.check_attention_parameters, worked=attention_parameters,
           torch=attention_parameters_by_torch),
    *wrong(
        nb11.check_attention_parameters,
        section_5=(lambda d, h, d_head, bias=True: 4 * d * d + (4 * d if bias else 0),
                   "T5-11B: h·d_head = 16,384 > d_model, no biases: that is section 5's "
                   "4·d_model² + 4·d_model"),
        w_o_of_one_head=(lambda d, h, d_head, bias=True: attention_parameters(
            d, h, d_head, bias, out_in=d_head),
                         "T5-11B: h·d_head = 16,384 > d_model, no biases: W^O was counted as one "
                         "head's (d_head, d_model) matrix"),
        biases_of_d_model=(lambda d, h, d_head, bias=True: attention_parameters(
            d, h, d_head, bias, q_bias=d),
                           "16 heads of 64 on d_model = 512: about twice the base model's: the "
                           "weights are right, but the biases of W^Q, W^K and W^V were counted "
                           "with d_model entries each"),
        biases_of_h_d_head=(lambda d, h, d_head, bias=True: attention_parameters(
            d, h, d_head, bias, out_bias=h * d_head),
                            "h·d_head = 128 < d_model = 768: the weights are right, but W^O's bias "
                            "was counted with h·d_head entries: W^O outputs d_model features"),
        square_w_o=(lambda d, h, d_head, bias=True: attention_parameters(d, h, d_head, bias,
                                                                         out_in=d),
                    "T5-11B: h·d_head = 16,384 > d_model, no biases: W^O was counted as "
                    "(d_model, d_model)"),
        one_head=(lambda d, h, d_head, bias=True: attention_parameters(d, 1, d_head, bias),
                  "d_head = d_model / h: section 5's 4·64 + 4·8 = 288: that counts one head"),
        ignores_bias=(lambda d, h, d_head, bias=True: attention_parameters(d, h, d_head),
                      "the same without biases: values differ: expected 393216, got 394368"),
        a_float=(lambda *args, **kwargs: attention_parameters(*args, **kwargs) / 1,
                 "expected an integer, got float 288.0"),
    ),
]

test_checker = table_test(ROWS)
