"""Tests for course_utils.layers against torch.nn modules, torch.nn.functional and Hugging Face
``transformers``' Llama MLP (the norms: tests/test_norms.py)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaMLP

from course_utils import attention, layers

DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: {"rtol": 1e-5, "atol": 1e-5}, torch.float64: {"rtol": 1e-10, "atol": 1e-12}}
SMALL = layers.TransformerConfig(d_model=8, n_heads=2, d_ff=16)


# ----------------------------------------------------------------------------- feed-forward


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ["relu", "gelu", "swiglu"])
def test_feed_forward_equals_functional(dtype, activation) -> None:
    torch.manual_seed(0)
    ffn = layers.FeedForward(6, 24, activation).to(dtype)
    x = torch.randn(2, 5, 6, dtype=dtype)
    l1, l2 = ffn.linear1, ffn.linear2
    if activation == "relu":
        hidden = F.relu(F.linear(x, l1.weight, l1.bias))
    elif activation == "gelu":
        hidden = F.gelu(F.linear(x, l1.weight, l1.bias))
    else:
        gate = F.linear(x, ffn.gate.weight, ffn.gate.bias)
        hidden = gate * torch.sigmoid(gate) * F.linear(x, l1.weight, l1.bias)
    torch.testing.assert_close(ffn(x), F.linear(hidden, l2.weight, l2.bias), **TOL[dtype])


def test_feed_forward_parameter_counts() -> None:
    d, d_ff = 8, 32
    for activation, matrices in (("relu", 2), ("gelu", 2), ("swiglu", 3)):
        ffn = layers.FeedForward(d, d_ff, activation)
        biases = d_ff + d + (d_ff if activation == "swiglu" else 0)
        assert sum(p.numel() for p in ffn.parameters()) == matrices * d * d_ff + biases
        no_bias = layers.FeedForward(d, d_ff, activation, bias=False)
        assert sum(p.numel() for p in no_bias.parameters()) == matrices * d * d_ff
        assert all(p.ndim == 2 for p in no_bias.parameters())


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feed_forward_without_bias_equals_functional(activation) -> None:
    torch.manual_seed(4)
    ffn = layers.FeedForward(6, 24, activation, bias=False).double()
    x = torch.randn(3, 6, dtype=torch.float64)
    act = F.relu if activation == "relu" else F.gelu
    expected = act(x @ ffn.linear1.weight.T) @ ffn.linear2.weight.T
    torch.testing.assert_close(ffn(x), expected, **TOL[torch.float64])


def test_swiglu_without_bias_equals_the_llama_mlp() -> None:
    config = LlamaConfig(hidden_size=8, intermediate_size=20, num_attention_heads=2,
                         hidden_act="silu", mlp_bias=False)
    torch.manual_seed(5)
    theirs = LlamaMLP(config).double()
    mine = layers.FeedForward(8, 20, "swiglu", bias=False).double()
    with torch.no_grad():
        for ours, name in ((mine.gate, "gate_proj"), (mine.linear1, "up_proj"),
                           (mine.linear2, "down_proj")):
            ours.weight.copy_(getattr(theirs, name).weight)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    torch.testing.assert_close(mine(x), theirs(x), **TOL[torch.float64])


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 6), seed=st.integers(0, 2**16), activation=st.sampled_from(
    ["relu", "gelu", "swiglu"]))
def test_feed_forward_is_position_wise(n, seed, activation) -> None:
    torch.manual_seed(seed)
    ffn = layers.FeedForward(4, 8, activation).double()
    x = torch.randn(2, n, 4, dtype=torch.float64)
    whole = ffn(x)
    for i in range(n):  # each token alone gives the same row
        torch.testing.assert_close(ffn(x[:, i]), whole[:, i])
    perm = torch.randperm(n)
    torch.testing.assert_close(ffn(x[:, perm]), whole[:, perm])


def test_feed_forward_dropout_only_in_training() -> None:
    torch.manual_seed(0)
    ffn = layers.FeedForward(4, 64, dropout=0.5)
    x = torch.randn(3, 4)
    ffn.eval()
    torch.testing.assert_close(ffn(x), ffn(x))
    ffn.train()
    assert not torch.allclose(ffn(x), ffn.eval()(x))


# ---------------------------------------------------------------------------- encoder layer


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_equals_pytorch(dtype, norm_first, activation) -> None:
    torch.manual_seed(2)
    theirs = nn.TransformerEncoderLayer(
        16, 4, 32, dropout=0.1, activation=activation, norm_first=norm_first, batch_first=True,
        layer_norm_eps=1e-6, dtype=dtype,
    )
    with torch.no_grad():
        theirs.self_attn.in_proj_bias.normal_()
        theirs.norm1.weight.normal_()
        theirs.norm2.bias.normal_()
    theirs.eval()
    mine = layers.EncoderLayer.from_torch(theirs)
    assert not mine.training and mine.norm_first == norm_first
    x = torch.randn(3, 5, 16, dtype=dtype)
    keep = attention.token_mask([5, 3, 1])
    torch.testing.assert_close(mine(x), theirs(x), **TOL[dtype])
    torch.testing.assert_close(mine(x, token_mask=keep),
                               theirs(x, src_key_padding_mask=~keep), **TOL[dtype])
    with torch.no_grad():  # PyTorch's inference fast path gives the same numbers
        torch.testing.assert_close(mine(x, token_mask=keep),
                                   theirs(x, src_key_padding_mask=~keep), **TOL[dtype])


def test_encoder_layer_parameter_count_and_dropout() -> None:
    theirs = nn.TransformerEncoderLayer(8, 2, 32, dropout=0.2, batch_first=True)
    mine = layers.EncoderLayer.from_torch(theirs)
    assert sum(p.numel() for p in mine.parameters()) == sum(p.numel() for p in theirs.parameters())
    assert mine.dropout1.p == mine.dropout2.p == mine.self_attn.dropout == 0.2
    x = torch.randn(2, 4, 8)
    mine.train()
    torch.manual_seed(0)
    train_out = mine(x)
    assert not torch.allclose(train_out, mine.eval()(x))


def test_padding_does_not_change_real_tokens() -> None:
    torch.manual_seed(4)
    layer = layers.EncoderLayer(replace(SMALL, activation="swiglu", norm_first=True)).eval()
    x = torch.randn(1, 3, 8)
    padded = torch.cat([x, torch.randn(1, 2, 8)], dim=1)
    keep = attention.token_mask([3], max_len=5)
    torch.testing.assert_close(layer(padded, token_mask=keep)[:, :3], layer(x))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: layers.FeedForward(4, 8, "tanh"), ValueError, "activation"),
        (lambda: layers.FeedForward(4, 8, dropout=1.0), ValueError, "dropout"),
        (lambda: layers.FeedForward(4, 8)(torch.randn(2, 5)), ValueError, "d_model=4"),
        (lambda: layers.TransformerConfig(d_model=10, n_heads=3), ValueError, "not divisible"),
        (lambda: layers.EncoderLayer(SMALL)(torch.randn(2, 8)), ValueError, r"x must .*\(B, L"),
        (lambda: layers.EncoderLayer(SMALL)(torch.randn(2, 3, 8), torch.ones(2, 3)),
         TypeError, "boolean"),
        (lambda: layers.EncoderLayer(SMALL)(torch.randn(2, 3, 8),
                                               torch.ones(3, 2, dtype=torch.bool)),
         ValueError, "token_mask must have shape"),
        (lambda: layers.EncoderLayer.from_torch(nn.TransformerEncoderLayer(8, 2, 16)),
         ValueError, "batch_first"),
        (lambda: layers.EncoderLayer.from_torch(nn.TransformerEncoderLayer(
            8, 2, 16, activation=nn.Tanh(), batch_first=True)), ValueError, "ReLU or GELU"),
    ],
)
def test_bad_inputs(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()


# ------------------------------------------------------------------------ TransformerConfig


def test_config_defaults_are_the_base_model_and_fields_go_by_name() -> None:
    base = layers.TransformerConfig()
    assert (base.d_model, base.n_heads, base.d_ff, base.dropout) == (512, 8, 2048, 0.1)
    assert (base.n_encoder_layers, base.n_decoder_layers, base.eps) == (6, 6, 1e-5)
    with pytest.raises(TypeError, match="positional"):
        layers.TransformerConfig(8, 2, 16)  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        base.d_model = 8  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "error", "match"),
    [
        ({"d_model": 8.0}, TypeError, "d_model must be an int"),
        ({"d_ff": 0}, ValueError, "d_ff must be at least 1"),
        ({"n_heads": 3}, ValueError, "d_model=512 is not divisible by n_heads=3"),
        ({"dropout": 1.0}, ValueError, "dropout must be in"),
        ({"eps": 0.0}, ValueError, "eps must be"),
        ({"activation": "tanh"}, ValueError, "activation"),
        ({"norm_first": 1}, TypeError, "norm_first"),
        ({"final_norm": "yes"}, TypeError, "final_norm"),
        ({"src_vocab_size": 0}, ValueError, "src_vocab_size"),
        ({"tie_embeddings": True, "src_vocab_size": 5, "tgt_vocab_size": 6}, ValueError,
         "tie_embeddings needs one vocabulary"),
    ],
)
def test_config_errors_name_the_field(fields, error, match) -> None:
    with pytest.raises(error, match=match):
        layers.TransformerConfig(**fields)


@pytest.mark.parametrize("cls", [layers.EncoderLayer, layers.DecoderLayer, layers.Encoder,
                                 layers.Decoder, layers.Transformer])
def test_blocks_take_only_a_config(cls) -> None:
    with pytest.raises(TypeError, match="config must be a TransformerConfig"):
        cls({"d_model": 8})
    with pytest.raises(TypeError):
        cls(8, 2, 16)


def test_from_torch_builds_the_config_of_the_pytorch_layer() -> None:
    theirs = nn.TransformerEncoderLayer(8, 2, 24, dropout=0.2, activation="gelu",
                                        norm_first=True, layer_norm_eps=1e-6, batch_first=True)
    config = layers.EncoderLayer.from_torch(theirs).config
    assert config == layers.TransformerConfig(d_model=8, n_heads=2, d_ff=24, dropout=0.2,
                                              activation="gelu", norm_first=True, eps=1e-6)
    stack = layers.Encoder.from_torch(nn.TransformerEncoder(theirs, 3, enable_nested_tensor=False))
    assert stack.config.n_encoder_layers == len(stack.layers) == 3
    assert stack.config.final_norm is False and stack.norm is None
