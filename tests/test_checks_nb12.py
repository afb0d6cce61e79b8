"""Notebook 12's checkers: right answers pass, plausible mistakes fail with a reason."""

import functools
import math

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


def layer_norm_over_everything(x, gamma, beta, eps=1e-5):
    centred = x - x.mean()
    return gamma * centred / torch.sqrt(centred.pow(2).mean() + eps) + beta


def layer_norm_in_place(x, gamma, beta, eps=1e-5):
    x -= x.mean(dim=-1, keepdim=True)
    return gamma * x / torch.sqrt((x**2).mean(dim=-1, keepdim=True) + eps) + beta


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


def the_given_block(x, gamma, beta, w1, b1, w2, b2):
    return pre_ln_block(x, gamma, beta, w1, b1, w2, b2, dim=-2, add_normalized=True)


ROWS = [
    *right(nb12.check_layer_norm, worked=layer_norm),
    *wrong(
        nb12.check_layer_norm,
        functional=(lambda x, gamma, beta, eps=1e-5: F.layer_norm(x, x.shape[-1:], gamma, beta,
                                                                 eps),
                    "it calls F.layer_norm, a ready-made layer normalization"),
        module=(layer_norm_by_module, "it calls nn.LayerNorm"),
        native=(lambda x, gamma, beta, eps=1e-5: getattr(torch, "native_" + "layer_norm")(
            x, x.shape[-1:], gamma, beta, eps)[0], "it calls torch.native_layer_norm"),
        native_named=(lambda x, gamma, beta, eps=1e-5: torch.native_layer_norm(
            x, x.shape[-1:], gamma, beta, eps)[0], "it calls torch.native_layer_norm"),
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
                     "eps = 0.1 matters: values differ"),
        in_place=(layer_norm_in_place, "changed its argument `x` in place"),
        course_module=(layer_norm_by_course, "it calls the course's norms.LayerNorm, a "
                                             "ready-made layer normalization"),
        course_alias=(layer_norm_by_alias, "it calls the course's norms.LayerNorm"),
        group_norm=(layer_norm_by_group_norm, "it calls F.group_norm, a ready-made"),
        aten=(layer_norm_by_aten, "it calls PyTorch's layer_norm"),
        partial=(layer_norm_by_partial, "it calls PyTorch's layer_norm"),
        aten_rms_norm=(layer_norm_by_aten_rms_norm, "it calls PyTorch's rms_norm"),
        partial_rms_norm=(layer_norm_by_partial_rms_norm, "it calls PyTorch's rms_norm"),
        native_group_norm=(layer_norm_by_native_group_norm,
                           "it calls PyTorch's native_group_norm"),
        instance_norm=(layer_norm_by_instance_norm, "it calls F.instance_norm, a ready-made"),
        batch_norm=(layer_norm_by_batch_norm, "it calls F.batch_norm, a ready-made"),
        rms_norm=(layer_norm_by_rms_norm, "it calls F.rms_norm, a ready-made"),
    ),
    *right(nb12.check_llama_d_ff, worked=256 * math.ceil(2 * 4 * 4096 / 3 / 256)),
    *wrong(
        nb12.check_llama_d_ff,
        not_rounded=(8 * 4096 / 3, "is too low: that is (8/3) d_model itself; LLaMA rounds it up"),
        truncated=(10922, "that is (8/3) d_model itself"),
        rounded_down=(42 * 256, "LLaMA rounds up"),
        paper_width=(4 * 4096, "is too high: that is the paper's d_ff = 4 d_model"),
        upside_down=(6 * 4096, "the equation is upside down"),
        next_multiple_too_far=(44 * 256, "is too high: count the weights of both networks"),
        parameter_count=(3 * 4096 * 11008, "is too high: count the weights"),
        a_string=("11008", "expected a number, got str"),
        as_float=(11008.0, "11008.0 is a float: the exercise asks for an integer"),
    ),
    *right(nb12.check_pre_ln_block, worked=pre_ln_block, torch=pre_ln_block_by_torch),
    *wrong(
        nb12.check_pre_ln_block,
        the_given_code=(the_given_block, "two mistakes: LayerNorm runs over the tokens"),
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
              "(2, 5, 8), d_ff = 32: the feed-forward network applies GELU"),
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
