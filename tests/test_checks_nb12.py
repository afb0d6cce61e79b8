"""Notebook 12's checkers: right answers pass, plausible mistakes fail with a reason."""

import functools
import math

import pytest
import torch
import torch.nn.functional as F
from checker_table import right, table_test, wrong

from course_utils import norms
from course_utils.checks import nb12

Norm = norms.LayerNorm  # the course's LayerNorm under another name


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


def layer_norm_by_own_helper(x, gamma, beta, eps=1e-5):
    return layer_norm(x, gamma, beta, eps)  # the learner's own layer_norm: no note


def layer_norm_over_everything(x, gamma, beta, eps=1e-5):
    centred = x - x.mean()
    return gamma * centred / torch.sqrt(centred.pow(2).mean() + eps) + beta


def layer_norm_in_place(x, gamma, beta, eps=1e-5):
    x -= x.mean(dim=-1, keepdim=True)
    return gamma * x / torch.sqrt((x**2).mean(dim=-1, keepdim=True) + eps) + beta


def layer_norm_by_functional(x, gamma, beta, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps)


def layer_norm_by_module_default_eps(x, gamma, beta, eps=1e-5):
    norm = torch.nn.LayerNorm(x.shape[-1], dtype=x.dtype)  # eps is left at 1e-5
    with torch.no_grad():
        norm.weight.copy_(gamma)
        norm.bias.copy_(beta)
    return norm(x).detach()


def layer_norm_by_fresh_module(x, gamma, beta, eps=1e-5):
    return torch.nn.LayerNorm(x.shape[-1], eps=eps, dtype=x.dtype)(x).detach()  # γ = 1, β = 0


def layer_norm_by_module(x, gamma, beta, eps=1e-5):
    norm = torch.nn.LayerNorm(x.shape[-1], eps=eps, dtype=x.dtype)
    with torch.no_grad():
        norm.weight.copy_(gamma)
        norm.bias.copy_(beta)
    return norm(x).detach()


def layer_norm_by_course(x, gamma, beta, eps=1e-5):
    norm = norms.LayerNorm(x.shape[-1], eps=eps).to(x.dtype)
    with torch.no_grad():
        norm.weight.copy_(gamma)
        norm.bias.copy_(beta)
        return norm(x)


def layer_norm_by_alias(x, gamma, beta, eps=1e-5):
    norm = Norm(x.shape[-1], eps=eps).to(x.dtype)  # names neither norms nor LayerNorm
    with torch.no_grad():
        norm.weight.copy_(gamma)
        norm.bias.copy_(beta)
        return norm(x)


def layer_norm_by_aten(x, gamma, beta, eps=1e-5):  # the operator itself, below any Python name
    return torch.ops.aten.layer_norm(x, [x.shape[-1]], gamma, beta, eps)


_partial_norm = functools.partial(torch.layer_norm)  # made before the checker patches any name


def layer_norm_by_partial(x, gamma, beta, eps=1e-5):  # an object no name or value gives away
    return _partial_norm(x, [x.shape[-1]], gamma, beta, eps)


_partial_rms = functools.partial(torch.rms_norm)


def layer_norm_by_aten_rms_norm(x, gamma, beta, eps=1e-5):  # an RMS norm of a centred x
    centred = x - x.mean(dim=-1, keepdim=True)
    return torch.ops.aten.rms_norm(centred, [x.shape[-1]], gamma, eps) + beta


def layer_norm_by_partial_rms_norm(x, gamma, beta, eps=1e-5):
    return _partial_rms(x - x.mean(dim=-1, keepdim=True), [x.shape[-1]], gamma, eps) + beta


def layer_norm_by_native_group_norm(x, gamma, beta, eps=1e-5):
    n, d = x.numel() // x.shape[-1], x.shape[-1]
    out = torch.native_group_norm(x.reshape(-1, 1, d), None, None, n, 1, d, 1, eps)[0]
    return gamma * out.reshape(x.shape) + beta


def layer_norm_by_group_norm(x, gamma, beta, eps=1e-5):
    d = x.shape[-1]  # one group holding all d features of each token: a layer norm
    return gamma * F.group_norm(x.reshape(-1, 1, d), 1, eps=eps).reshape(x.shape) + beta


def layer_norm_by_instance_norm(x, gamma, beta, eps=1e-5):
    d = x.shape[-1]  # each token a channel, normalized over its d features
    return gamma * F.instance_norm(x.reshape(1, -1, d), eps=eps).reshape(x.shape) + beta


def layer_norm_by_batch_norm(x, gamma, beta, eps=1e-5):
    d = x.shape[-1]  # (d, tokens): each token a channel, normalized over the d "examples"
    flat = F.batch_norm(x.reshape(-1, d).T, None, None, training=True, eps=eps)
    return gamma * flat.T.reshape(x.shape) + beta


def layer_norm_by_rms_norm(x, gamma, beta, eps=1e-5):
    centred = x - x.mean(dim=-1, keepdim=True)  # RMS norm of the centred x is a layer norm
    return gamma * F.rms_norm(centred, x.shape[-1:], eps=eps) + beta


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
    *right(nb12.check_layer_norm, worked=layer_norm, functional=layer_norm_by_functional,
           module=layer_norm_by_module, course_module=layer_norm_by_course,
           course_alias=layer_norm_by_alias, group_norm=layer_norm_by_group_norm,
           rms_norm=layer_norm_by_rms_norm, own_helper=layer_norm_by_own_helper),
    *wrong(
        nb12.check_layer_norm,
        unbiased=(lambda *args, **kw: layer_norm(*args, **kw, correction=1),
                  "the variance divides by d_model - 1"),
        eps_outside=(lambda *args, **kw: layer_norm(*args, **kw, eps_place="outside"),
                     "ε is outside the square root"),
        no_eps=(lambda *args, **kw: layer_norm(*args, **kw, eps_place="none"),
                "ε is missing"),
        over_the_batch=(lambda *args, **kw: layer_norm(*args, **kw, dim=0),
                        "μ and σ² are taken over dim 0, across the batch"),
        over_everything=(layer_norm_over_everything, "μ and σ² are taken over the whole tensor"),
        ignores_eps=(lambda x, gamma, beta, eps=1e-5: layer_norm(x, gamma, beta),
                     "eps = 0.1 matters: it ignores the eps argument"),
        in_place=(layer_norm_in_place, "changed its argument `x` in place"),
        functional_whole_shape=(lambda x, gamma, beta, eps=1e-5: F.layer_norm(x, x.shape, eps=eps)
                                * gamma + beta, "μ and σ² are taken over the whole tensor"),
        functional_shape_1=(lambda x, gamma, beta, eps=1e-5: gamma * F.layer_norm(
            x, x.shape[1:], eps=eps) + beta, "a batch (3, 5, 6) with γ and β: μ and σ² are taken "
            "over the last two dims"),
        functional_no_affine=(lambda x, gamma, beta, eps=1e-5: F.layer_norm(x, x.shape[-1:],
                                                                           eps=eps),
                              "a batch (3, 5, 6) with γ and β: γ and β are ignored"),
        module_default_eps=(layer_norm_by_module_default_eps,
                            "eps = 0.1 matters: it ignores the eps argument"),
        module_fresh=(layer_norm_by_fresh_module, "γ and β are ignored"),
        var_default=(lambda x, gamma, beta, eps=1e-5: gamma * (x - x.mean(-1, keepdim=True))
                     / torch.sqrt(x.var(-1, keepdim=True) + eps) + beta,
                     "the variance divides by d_model - 1 (torch.var's default)"),
        rms_not_centred=(lambda x, gamma, beta, eps=1e-5: F.rms_norm(x, x.shape[-1:], gamma, eps)
                         + beta, "a batch (3, 5, 6) with γ and β: values differ"),
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
    (layer_norm_by_functional, "layer_norm"), (layer_norm_by_module, "LayerNorm"),
    (layer_norm_by_alias, "LayerNorm"), (layer_norm_by_aten, "layer_norm"),
    (layer_norm_by_partial, "layer_norm"), (layer_norm_by_group_norm, "group_norm"),
    (layer_norm_by_instance_norm, "instance_norm"), (layer_norm_by_batch_norm, "batch_norm"),
    (layer_norm_by_rms_norm, "rms_norm"), (layer_norm, None), (layer_norm_by_own_helper, None),
])
def test_a_library_norm_passes_with_a_note(answer, called, capsys):
    result = nb12.check_layer_norm(answer)
    assert result.passed
    assert result.note == (called and f"passes; it calls {called}, and the exercise is to write "
                                      "that step yourself")
