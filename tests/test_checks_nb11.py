"""Notebook 11's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import torch
from checker_table import right, table_test, wrong
from torch import nn

from course_utils import attention
from course_utils.checks import nb11


def split_heads(x, n_heads, transpose=True):
    b, n, d_model = x.shape
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
    if not transpose:
        return x.reshape(b, n_heads, n, d_model // n_heads)
    return x.reshape(b, n, n_heads, d_model // n_heads).transpose(1, 2)


def split_heads_dropping_features(x, n_heads):
    b, n, d_model = x.shape
    d_k = d_model // n_heads  # 10 // 4 = 2: two features silently dropped
    return x[..., : n_heads * d_k].reshape(b, n, n_heads, d_k).transpose(1, 2)


def merge_heads(x):
    b, h, n, d_k = x.shape
    return x.transpose(1, 2).reshape(b, n, h * d_k)


def multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads, scale_by_d_model=False, use_w_o=True):
    q, k, v = (split_heads(x @ w, n_heads) for w in (w_q, w_k, w_v))
    d = x.shape[-1] if scale_by_d_model else q.shape[-1]
    z = merge_heads(torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1) @ v)
    return z @ w_o if use_w_o else z


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


ROWS = [
    *right(nb11.check_split_heads, course_utils=attention.split_heads, worked=split_heads),
    *wrong(
        nb11.check_split_heads,
        no_transpose=(lambda x, h: split_heads(x, h, transpose=False),
                      "arange: (1, 2, 6) into 2 heads: values differ"),
        drops_features=(split_heads_dropping_features,
                        "10 is not divisible by 4: should raise ValueError"),
        view_after_transpose=(lambda x, h: x.transpose(1, 2).reshape(x.shape[0], h, x.shape[1],
                                                                     -1),
                              "values differ"),
    ),
    *right(nb11.check_merge_heads, course_utils=attention.merge_heads, worked=merge_heads),
    *wrong(
        nb11.check_merge_heads,
        no_transpose=(lambda x: x.reshape(x.shape[0], x.shape[2], -1),
                      "arange: 2 heads, 2 tokens, d_k = 3: values differ"),
        sums_heads=(lambda x: x.sum(dim=1), "shape: expected (1, 2, 6), got (1, 2, 3)"),
        view=(lambda x: x.transpose(1, 2).view(x.shape[0], x.shape[2], -1),
              "raised RuntimeError: view size is not compatible"),
    ),
    *right(nb11.check_multi_head_attention, worked=multi_head_attention),
    *wrong(
        nb11.check_multi_head_attention,
        scaled_by_d_model=(lambda *args: multi_head_attention(*args, scale_by_d_model=True),
                           "two heads, d_k = 4: values differ"),
        forgets_w_o=(lambda *args: multi_head_attention(*args, use_w_o=False),
                     "one head: plain attention: values differ"),
        one_head=(lambda *args: multi_head_attention(*args[:5], 1),
                  "two heads, d_k = 4: values differ"),
    ),
    *right(nb11.check_attention_parameters, worked=attention_parameters,
           torch=attention_parameters_by_torch),
    *wrong(
        nb11.check_attention_parameters,
        section_5=(lambda d, h, d_head, bias=True: 4 * d * d + (4 * d if bias else 0),
                   "T5-11B: h·d_head = 16,384 > d_model, no biases: values differ: expected "
                   "67108864, got 4194304"),
        biases_of_d_model=(lambda d, h, d_head, bias=True: attention_parameters(
            d, h, d_head, bias, q_bias=d),
                           "16 heads of 64 on d_model = 512: about twice the base model's: "
                           "values differ: expected 2100736, got 2099200"),
        biases_of_h_d_head=(lambda d, h, d_head, bias=True: attention_parameters(
            d, h, d_head, bias, out_bias=h * d_head),
                            "h·d_head = 128 < d_model = 768: values differ: expected 394368, "
                            "got 393728"),
        square_w_o=(lambda d, h, d_head, bias=True: attention_parameters(d, h, d_head, bias,
                                                                         out_in=d),
                    "T5-11B: h·d_head = 16,384 > d_model, no biases: values differ: expected "
                    "67108864, got 51380224"),
        one_head=(lambda d, h, d_head, bias=True: attention_parameters(d, 1, d_head, bias),
                  "d_head = d_model / h: section 5's 4·64 + 4·8 = 288: values differ: expected "
                  "288, got 148"),
        ignores_bias=(lambda d, h, d_head, bias=True: attention_parameters(d, h, d_head),
                      "the same without biases: values differ: expected 393216, got 394368"),
        a_float=(lambda *args, **kwargs: attention_parameters(*args, **kwargs) / 1,
                 "expected an integer, got float 288.0"),
    ),
]

test_checker = table_test(ROWS)
