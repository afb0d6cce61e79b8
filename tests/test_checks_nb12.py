"""Notebook 12's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import pytest
import torch
import torch.nn.functional as F
from checker_table import right, table_test, wrong

from course_utils.checks import nb12


def layer_norm(x, gamma, beta, eps=1e-5, dim=-1, correction=0, eps_place="inside"):
    mu = x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, keepdim=True, correction=correction)
    if eps_place == "inside":
        scale = torch.sqrt(var + eps)
    elif eps_place == "outside":
        scale = torch.sqrt(var) + eps
    else:
        scale = x.std(dim=dim, keepdim=True, correction=correction)
    return gamma * (x - mu) / scale + beta


def batch_norm(x, gamma, beta, eps=1e-5, dims=(0, 1), correction=0, eps_place="inside"):
    mu = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, keepdim=True, correction=correction)
    scale = torch.sqrt(var + eps) if eps_place == "inside" else torch.sqrt(var) + eps
    return gamma * (x - mu) / scale + beta


def batch_norm_by_var_mean(x, gamma, beta, eps=1e-5):
    var, mu = torch.var_mean(x, dim=(0, 1), keepdim=True, correction=0)
    return (x - mu) * torch.rsqrt(var + eps) * gamma + beta


def batch_norm_by_loops(x, gamma, beta, eps=1e-5):
    out = torch.empty_like(x)
    for j in range(x.shape[-1]):  # one feature at a time, over every token of the batch
        column = x[..., j]
        mu = column.sum() / column.numel()
        var = ((column - mu) ** 2).sum() / column.numel()
        out[..., j] = gamma[j] * (column - mu) / math.sqrt(var + eps) + beta[j]
    return out


def batch_norm_by_functional(x, gamma, beta, eps=1e-5):
    out = F.batch_norm(x.transpose(1, 2), None, None, gamma, beta, training=True, eps=eps)
    return out.transpose(1, 2)


def batch_norm_by_module(x, gamma, beta, eps=1e-5, train=True):
    norm = torch.nn.BatchNorm1d(x.shape[-1], eps=eps, dtype=x.dtype).train(train)
    with torch.no_grad():
        norm.weight.copy_(gamma)
        norm.bias.copy_(beta)
        return norm(x.transpose(1, 2)).transpose(1, 2)


def batch_norm_in_place(x, gamma, beta, eps=1e-5):
    x -= x.mean(dim=(0, 1), keepdim=True)
    return gamma * x / torch.sqrt((x**2).mean(dim=(0, 1), keepdim=True) + eps) + beta


def pre_ln_block(x, gamma, beta, w1, b1, w2, b2, dim=-1, add_normalized=False, post=False,
                 correction=0, eps=1e-5, activation=torch.relu):
    def norm(t):
        mu = t.mean(dim, keepdim=True)
        var = t.var(dim, keepdim=True, correction=correction)
        return gamma * (t - mu) / torch.sqrt(var + eps) + beta

    def ffn(t):
        return activation(t @ w1 + b1) @ w2 + b2

    if post:
        return norm(x + ffn(x))
    h = norm(x)
    return (h if add_normalized else x) + ffn(h)


def pre_ln_block_by_torch(x, gamma, beta, w1, b1, w2, b2):
    h = F.layer_norm(x, x.shape[-1:], gamma, beta, 1e-5)
    return x + F.linear(F.relu(F.linear(h, w1.T, b1)), w2.T, b2)


def pre_ln_block_by_own_layer_norm(x, gamma, beta, w1, b1, w2, b2):
    return x + torch.relu(layer_norm(x, gamma, beta) @ w1 + b1) @ w2 + b2  # Exercise 1's


def the_given_block(x, gamma, beta, w1, b1, w2, b2):
    return pre_ln_block(x, gamma, beta, w1, b1, w2, b2, dim=-2, add_normalized=True)


ROWS = [
    *right(nb12.check_batch_norm, worked=batch_norm, var_mean=batch_norm_by_var_mean,
           loops=batch_norm_by_loops, functional=batch_norm_by_functional,
           module=batch_norm_by_module),
    *wrong(
        nb12.check_batch_norm,
        layer_norm=(lambda *args, **kw: batch_norm(*args, **kw, dims=-1),
                    "a batch (3, 5, 6) with γ and β: that is LayerNorm"),
        torch_layer_norm=(lambda x, gamma, beta, eps=1e-5: F.layer_norm(x, x.shape[-1:], gamma,
                                                                       beta, eps),
                          "that is LayerNorm: μ and σ² over each token's own features"),
        over_the_batch=(lambda *args, **kw: batch_norm(*args, **kw, dims=0),
                        "μ and σ² are taken over the batch only (dim 0)"),
        over_positions=(lambda *args, **kw: batch_norm(*args, **kw, dims=1),
                        "μ and σ² are taken over each sentence's positions only (dim 1)"),
        over_everything=(lambda *args, **kw: batch_norm(*args, **kw, dims=None),
                         "μ and σ² are taken over the whole tensor"),
        unbiased=(lambda *args, **kw: batch_norm(*args, **kw, correction=1),
                  "the variance divides by B·N - 1"),
        eps_outside=(lambda *args, **kw: batch_norm(*args, **kw, eps_place="outside"),
                     "ε is outside the square root"),
        no_affine=(lambda x, gamma, beta, eps=1e-5: batch_norm(x, 1, 0, eps),
                   "a batch (3, 5, 6) with γ and β: γ and β are ignored"),
        ignores_eps=(lambda x, gamma, beta, eps=1e-5: batch_norm(x, gamma, beta),
                     "eps = 0.1 matters: it ignores the eps argument"),
        eval_mode=(lambda *args, **kw: batch_norm_by_module(*args, **kw, train=False),
                   "a batch (3, 5, 6) with γ and β: that is evaluation mode"),
        in_place=(batch_norm_in_place, "changed its argument `x` in place"),
    ),
    *right(nb12.check_llama_d_ff, worked=256 * math.ceil(2 * 4 * 4096 / 3 / 256), as_float=11008.0),
    *wrong(
        nb12.check_llama_d_ff,
        not_rounded=(8 * 4096 / 3, "is too low: that is (8/3) d_model itself; LLaMA rounds it up"),
        truncated=(10922, "that is (8/3) d_model itself"),
        rounded_down=(42 * 256, "LLaMA rounds up"),
        paper_width=(4 * 4096, "is too high: that is the paper's d_ff = 4 d_model"),
        upside_down=(6 * 4096, "the equation is upside down"),
        next_multiple_too_far=(44 * 256, "is too high: count both networks' weights"),
        parameter_count=(3 * 4096 * 11008, "is too high: count both networks' weights"),
        a_string=("11008", "expected a number, got str"),
    ),
    *right(nb12.check_pre_ln_block, worked=pre_ln_block, torch=pre_ln_block_by_torch,
           own_layer_norm=pre_ln_block_by_own_layer_norm),
    *wrong(
        nb12.check_pre_ln_block,
        the_given_code=(the_given_block, "still the bug: these are the given block's numbers"),
        over_tokens=(lambda *args: pre_ln_block(*args, dim=-2),
                     "LayerNorm runs over the tokens (dim=-2)"),
        adds_normalized=(lambda *args: pre_ln_block(*args, add_normalized=True),
                         "(2, 5, 8), d_ff = 32: the residual adds the normalized x"),
        adds_normalized_zero=(lambda *args: pre_ln_block(*args, add_normalized=True),
                              "zero weights: the block must be the identity: the output is LN(x), "
                              "which both post-LN, LN(x + FFN(x)), and a residual"),
        post_ln=(lambda *args: pre_ln_block(*args, post=True),
                 "(2, 5, 8), d_ff = 32: this is post-LN"),
        post_ln_zero=(lambda *args: pre_ln_block(*args, post=True),
                      "zero weights: the block must be the identity: the output is LN(x), which "
                      "both post-LN"),
        gelu=(lambda *args: pre_ln_block(*args, activation=F.gelu),
              "(2, 5, 8), d_ff = 32: the FFN applies GELU"),
        eps_1e6=(lambda *args: pre_ln_block(*args, eps=1e-6),
                 "(2, 5, 8), d_ff = 32: ε is 1e-6"),
        no_norm=(lambda x, gamma, beta, w1, b1, w2, b2: x + torch.relu(x @ w1 + b1) @ w2 + b2,
                 "(2, 5, 8), d_ff = 32: there is no LayerNorm"),
        unbiased=(lambda *args: pre_ln_block(*args, correction=1),
                  "(2, 5, 8), d_ff = 32: the variance divides by d_model - 1 (the unbiased one"),
        bert_eps=(lambda *args: pre_ln_block(*args, eps=1e-12),
                  "(2, 5, 8), d_ff = 32: ε is too small (1e-12, or none at all)"),
    ),
]

test_checker = table_test(ROWS)


@pytest.mark.parametrize("answer, called", [
    (batch_norm_by_functional, "batch_norm"), (batch_norm_by_module, "BatchNorm1d"),
    (batch_norm, None), (batch_norm_by_var_mean, None),
])
def test_a_library_norm_passes_with_a_note(answer, called, capsys):
    result = nb12.check_batch_norm(answer)
    assert result.passed
    assert result.note == (called and f"passes; it calls {called}, and the exercise is to write "
                                      "that step yourself")
