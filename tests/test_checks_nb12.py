"""Notebook 12's checkers: right answers pass, plausible mistakes fail with a reason."""

import torch
import torch.nn.functional as F
from checker_table import right, table_test, wrong

from course_utils.checks import nb12


def feed_forward(x, w1, b1, w2, b2, activation=torch.relu, use_b2=True):
    out = activation(x @ w1 + b1) @ w2
    return out + b2 if use_b2 else out


def layer_norm(x, gamma, beta, eps=1e-5, dim=-1, correction=0, eps_inside=True):
    mu = x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, keepdim=True, correction=correction)
    scale = torch.sqrt(var + eps) if eps_inside else torch.sqrt(var) + eps
    return gamma * (x - mu) / scale + beta


def layer_norm_in_place(x, gamma, beta, eps=1e-5):
    x -= x.mean(dim=-1, keepdim=True)
    return gamma * x / torch.sqrt((x**2).mean(dim=-1, keepdim=True) + eps) + beta


def swiglu(x, w_gate, w_up, w_down, gate=F.silu):
    return (gate(x @ w_gate) * (x @ w_up)) @ w_down


ROWS = [
    *right(nb12.check_feed_forward, worked=feed_forward,
           clamp=lambda x, w1, b1, w2, b2: torch.clamp(x @ w1 + b1, min=0) @ w2 + b2),
    *wrong(
        nb12.check_feed_forward,
        no_relu=(lambda *args: feed_forward(*args, activation=lambda h: h),
                 "by hand: hidden [1, -1.5, -3] -> ReLU [1, 0, 0]: values differ"),
        relu_at_the_end=(lambda x, w1, b1, w2, b2: torch.relu(feed_forward(x, w1, b1, w2, b2)),
                         "values differ"),
        forgets_b2=(lambda *args: feed_forward(*args, use_b2=False),
                    "by hand: hidden [1, -1.5, -3] -> ReLU [1, 0, 0]: values differ: expected "
                    "[[1.1, 0.2]], got [[1., 0.]]"),
        gelu=(lambda *args: feed_forward(*args, activation=F.gelu), "values differ"),
    ),
    *right(nb12.check_layer_norm, worked=layer_norm,
           torch=lambda x, gamma, beta, eps=1e-5: F.layer_norm(x, x.shape[-1:], gamma, beta, eps)),
    *wrong(
        nb12.check_layer_norm,
        unbiased=(lambda *args, **kw: layer_norm(*args, **kw, correction=1),
                  "[1, 2, 3, 4]: mean 2.5, variance 1.25: values differ"),
        eps_outside=(lambda *args, **kw: layer_norm(*args, **kw, eps_inside=False),
                     "eps = 0.1 matters: values differ"),
        over_the_batch=(lambda *args, **kw: layer_norm(*args, **kw, dim=0),
                        "a batch (3, 5, 6) with γ and β: values differ"),
        ignores_eps=(lambda x, gamma, beta, eps=1e-5: layer_norm(x, gamma, beta),
                     "eps = 0.1 matters: values differ"),
        in_place=(layer_norm_in_place, "changed its argument `x` in place"),
    ),
    *right(nb12.check_swiglu, worked=swiglu,
           by_sigmoid=lambda x, wg, wu, wd: swiglu(x, wg, wu, wd,
                                                   gate=lambda z: z * torch.sigmoid(z))),
    *wrong(
        nb12.check_swiglu,
        gate_and_up_swapped=(lambda x, wg, wu, wd: swiglu(x, wu, wg, wd),
                             "by hand: SiLU(2)·3 = 5.2848: values differ"),
        glu=(lambda x, wg, wu, wd: swiglu(x, wg, wu, wd, gate=torch.sigmoid),
             "by hand: SiLU(2)·3 = 5.2848: values differ"),
        relu_gate=(lambda x, wg, wu, wd: swiglu(x, wg, wu, wd, gate=torch.relu),
                   "5 tokens, d_model = 4, d_ff = 12: values differ"),
    ),
]

test_checker = table_test(ROWS)
