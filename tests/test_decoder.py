"""Tests for the decoder side of course_utils.layers: DecoderLayer, Encoder, Decoder,
Transformer and the parameter count, against torch.nn's Transformer modules."""

from dataclasses import replace

import pytest
import torch
from torch import nn

from course_utils import layers
from course_utils.positional import sinusoidal_encoding

B, T, S, D, H, FF = 3, 5, 7, 16, 4, 32
CONFIG = layers.TransformerConfig(d_model=D, n_heads=H, d_ff=FF, dropout=0.0)


def _torch_masks(tgt_mask, mem_mask):
    """Course masks (True = real token) → PyTorch's (True = padding), plus its causal mask."""
    return ~tgt_mask, ~mem_mask, torch.ones(T, T, dtype=torch.bool).triu(1)


def _masks():
    tgt = torch.ones(B, T, dtype=torch.bool)
    tgt[1, 3:] = False
    mem = torch.ones(B, S, dtype=torch.bool)
    mem[0, 4:] = False
    mem[2, 6:] = False
    return tgt, mem


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_decoder_layer_equals_torch(norm_first, activation):
    torch.manual_seed(0)
    ref = nn.TransformerDecoderLayer(D, H, FF, dropout=0.1, activation=activation,
                                     batch_first=True, norm_first=norm_first).eval()
    with torch.no_grad():  # non-trivial LayerNorm parameters, so a swapped norm is caught
        for norm in (ref.norm1, ref.norm2, ref.norm3):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    mine = layers.DecoderLayer.from_torch(ref)
    assert not mine.training
    x, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    tgt_mask, mem_mask = _masks()
    tgt_pad, mem_pad, causal = _torch_masks(tgt_mask, mem_mask)
    expected = ref(x, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad,
                   memory_key_padding_mask=mem_pad)
    got = mine(x, memory, tgt_mask, mem_mask)
    real = tgt_mask[..., None].expand_as(got)  # PyTorch's outputs at padded queries differ
    torch.testing.assert_close(got[real], expected[real], rtol=1e-5, atol=1e-5)
    # without masks (and without causality)
    torch.testing.assert_close(mine(x, memory, causal=False), ref(x, memory),
                               rtol=1e-5, atol=1e-5)
    assert mine.cross_attention_weights.shape == (B, H, T, S)
    assert mine.self_attention_weights.shape == (B, H, T, T)


def test_decoder_layer_causality_and_cross_attention_rows():
    torch.manual_seed(1)
    layer = layers.DecoderLayer(CONFIG).eval()
    x, memory = torch.randn(1, T, D), torch.randn(1, S, D)
    out = layer(x, memory)
    changed = x.clone()
    changed[0, 3] += 5.0  # change target position 3
    out2 = layer(changed, memory)
    torch.testing.assert_close(out2[0, :3], out[0, :3])  # earlier positions unchanged
    assert not torch.allclose(out2[0, 3:], out[0, 3:])
    w = layer.self_attention_weights[0]
    assert torch.all(w.triu(1) == 0)
    torch.testing.assert_close(layer.cross_attention_weights.sum(-1), torch.ones(1, H, T))
    _, mem_mask = _masks()
    layer(torch.randn(B, T, D), torch.randn(B, S, D), memory_token_mask=mem_mask)
    assert torch.all(layer.cross_attention_weights[0, :, :, 4:] == 0)


def test_decoder_layer_bad_input():
    layer = layers.DecoderLayer(CONFIG)
    with pytest.raises(ValueError, match="memory must be a tensor of shape"):
        layer(torch.randn(B, T, D), torch.randn(B, S, D + 1))
    with pytest.raises(ValueError, match="same batch size"):
        layer(torch.randn(B, T, D), torch.randn(B + 1, S, D))
    with pytest.raises(TypeError, match="tgt_token_mask must be a boolean"):
        layer(torch.randn(B, T, D), torch.randn(B, S, D), torch.ones(B, T))
    with pytest.raises(ValueError, match="memory_token_mask must have shape"):
        layer(torch.randn(B, T, D), torch.randn(B, S, D), None, torch.ones(B, T, dtype=bool))
    with pytest.raises(TypeError, match="nn.TransformerDecoderLayer"):
        layers.DecoderLayer.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="batch_first"):
        layers.DecoderLayer.from_torch(nn.TransformerDecoderLayer(D, H, FF))


@pytest.mark.parametrize(("norm_first", "final_norm"), [(False, False), (True, True)])
def test_stacks_equal_torch(norm_first, final_norm):
    torch.manual_seed(2)
    kwargs = {"dropout": 0.0, "batch_first": True, "norm_first": norm_first}
    ref_encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(D, H, FF, **kwargs), 2,
        norm=nn.LayerNorm(D) if final_norm else None, enable_nested_tensor=False).eval()
    ref_decoder = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(D, H, FF, **kwargs), 2,
        norm=nn.LayerNorm(D) if final_norm else None).eval()
    encoder = layers.Encoder.from_torch(ref_encoder)
    decoder = layers.Decoder.from_torch(ref_decoder)
    assert (encoder.norm is None, decoder.norm is None) == (not final_norm, not final_norm)
    src, tgt = torch.randn(B, S, D), torch.randn(B, T, D)
    tgt_mask, mem_mask = _masks()
    tgt_pad, mem_pad, causal = _torch_masks(tgt_mask, mem_mask)
    memory = ref_encoder(src, src_key_padding_mask=mem_pad)
    expected = ref_decoder(tgt, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad,
                           memory_key_padding_mask=mem_pad)
    my_memory = encoder(src, mem_mask)
    real_src = mem_mask[..., None].expand_as(my_memory)
    torch.testing.assert_close(my_memory[real_src], memory[real_src], rtol=1e-5, atol=1e-5)
    got = decoder(tgt, my_memory, tgt_mask, mem_mask)
    real = tgt_mask[..., None].expand_as(got)
    torch.testing.assert_close(got[real], expected[real], rtol=1e-5, atol=1e-5)


def _reference_forward(model, src, tgt):
    """An independent forward pass of layers.Transformer written with torch.nn modules."""
    ref = nn.Transformer(D, H, 2, 2, FF, dropout=0.0, batch_first=True).eval()
    for mine, theirs in zip(model.encoder.layers, ref.encoder.layers, strict=True):
        _copy_encoder_layer(mine, theirs)
    for mine, theirs in zip(model.decoder.layers, ref.decoder.layers, strict=True):
        _copy_decoder_layer(mine, theirs)
    pe = torch.as_tensor(sinusoidal_encoding(64, D), dtype=torch.float32)
    src_x = model.src_embed.weight[src] * D**0.5 + pe[: src.shape[1]]
    tgt_x = model.tgt_embed.weight[tgt] * D**0.5 + pe[: tgt.shape[1]]
    memory = src_x
    for layer in ref.encoder.layers:
        memory = layer(memory)
    causal = torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool).triu(1)
    y = tgt_x
    for layer in ref.decoder.layers:
        y = layer(y, memory, tgt_mask=causal)
    return y @ model.output.weight.T


def _copy_attention(mine, theirs):
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([mine.q_proj.weight, mine.k_proj.weight,
                                               mine.v_proj.weight]))
        theirs.in_proj_bias.copy_(torch.cat([mine.q_proj.bias, mine.k_proj.bias,
                                             mine.v_proj.bias]))
        theirs.out_proj.weight.copy_(mine.out_proj.weight)
        theirs.out_proj.bias.copy_(mine.out_proj.bias)


def _copy_ffn_and_norms(mine, theirs, n_norms):
    with torch.no_grad():
        theirs.linear1.weight.copy_(mine.feed_forward.linear1.weight)
        theirs.linear1.bias.copy_(mine.feed_forward.linear1.bias)
        theirs.linear2.weight.copy_(mine.feed_forward.linear2.weight)
        theirs.linear2.bias.copy_(mine.feed_forward.linear2.bias)
        for i in range(1, n_norms + 1):
            getattr(theirs, f"norm{i}").weight.copy_(getattr(mine, f"norm{i}").weight)
            getattr(theirs, f"norm{i}").bias.copy_(getattr(mine, f"norm{i}").bias)


def _copy_encoder_layer(mine, theirs):
    _copy_attention(mine.self_attn, theirs.self_attn)
    _copy_ffn_and_norms(mine, theirs, 2)


def _copy_decoder_layer(mine, theirs):
    _copy_attention(mine.self_attn, theirs.self_attn)
    _copy_attention(mine.cross_attn, theirs.multihead_attn)
    _copy_ffn_and_norms(mine, theirs, 3)


@pytest.mark.parametrize("share", [False, True])
def test_transformer_forward_matches_reference(share):
    torch.manual_seed(3)
    config = replace(CONFIG, n_encoder_layers=2, n_decoder_layers=2, src_vocab_size=11,
                     tgt_vocab_size=11, tie_embeddings=share, max_len=64)
    model = layers.Transformer(config).eval()
    src, tgt = torch.randint(0, 11, (B, S)), torch.randint(0, 11, (B, T))
    expected = _reference_forward(model, src, tgt)
    torch.testing.assert_close(model(src, tgt), expected, rtol=1e-5, atol=1e-5)
    assert (model.output.weight is model.src_embed.weight) == share
    # teacher forcing = running the decoder one prefix at a time (causality)
    memory = model.encode(src)
    for t in range(1, T + 1):
        torch.testing.assert_close(model.decode(tgt[:, :t], memory)[:, -1], expected[:, t - 1],
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "vocab"),
    [
        ({}, (37, 37)),
        ({"tie_embeddings": True}, (37, 37)),
        ({"norm_first": True}, (37, 41)),
        ({"activation": "swiglu", "norm_first": True, "tie_embeddings": True}, (23, 23)),
    ],
)
def test_parameter_formula_equals_counting(kwargs, vocab):
    config = replace(CONFIG, n_encoder_layers=2, n_decoder_layers=3, src_vocab_size=vocab[0],
                     tgt_vocab_size=vocab[1], **kwargs)
    model = layers.Transformer(config)
    counted = sum(p.numel() for p in set(model.parameters()))
    assert layers.count_parameters(model) == counted
    assert layers.transformer_parameter_count(config) == counted


def test_parameter_count_of_the_base_model():
    # d_model 512, d_ff 2048, 6 + 6 layers, shared 37,000-token vocabulary: 63,082,496
    base = layers.TransformerConfig(src_vocab_size=37_000, tgt_vocab_size=37_000,
                                    tie_embeddings=True)
    n = layers.transformer_parameter_count(base)
    assert n == 63_082_496


def test_transformer_bad_input():
    config = replace(CONFIG, n_encoder_layers=1, n_decoder_layers=1, src_vocab_size=11,
                     tgt_vocab_size=13, max_len=8)
    model = layers.Transformer(config)
    with pytest.raises(ValueError, match="tie_embeddings needs one vocabulary"):
        replace(config, tie_embeddings=True)
    for missing in ("src_vocab_size", "tgt_vocab_size"):
        with pytest.raises(ValueError, match="needs config.src_vocab_size and config.tgt_vo"):
            layers.Transformer(replace(config, **{missing: None}))
        with pytest.raises(ValueError, match="needs config.src_vocab_size and config.tgt_vo"):
            layers.transformer_parameter_count(replace(config, **{missing: None}))
    with pytest.raises(TypeError, match="src must be an int64 tensor of token ids, got torch.f"):
        model.encode(torch.randn(2, 3))
    with pytest.raises(ValueError, match=r"src must have shape \(B, L\), got \(3,\)"):
        model.encode(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"tgt holds ids outside \[0, 13\)"):
        model(torch.zeros(1, 3, dtype=torch.long), torch.full((1, 2), 13))
    with pytest.raises(ValueError, match="longer than max_len=8"):
        model.encode(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(TypeError, match="model must be an nn.Module"):
        layers.count_parameters([1, 2])
    with pytest.raises(TypeError, match="config must be a TransformerConfig"):
        layers.transformer_parameter_count(5)


def test_stacks_refuse_the_wrong_torch_module() -> None:
    encoder_layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    with pytest.raises(TypeError, match="module must be an nn.TransformerDecoder, got"):
        encoder = nn.TransformerEncoder(encoder_layer, 1, enable_nested_tensor=False)
        layers.Decoder.from_torch(encoder)
    with pytest.raises(TypeError, match="module must be an nn.TransformerEncoder, got Linear"):
        layers.Encoder.from_torch(nn.Linear(2, 2))


def test_from_torch_reads_activation_functions_and_modules_alike() -> None:
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    for activation in (nn.GELU(), nn.ReLU()):
        ref = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                         batch_first=True).eval()
        mine = layers.DecoderLayer.from_torch(ref)
        causal = torch.ones(3, 3, dtype=torch.bool).triu(1)
        torch.testing.assert_close(mine(x, memory), ref(x, memory, tgt_mask=causal))
    tanh_gelu = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU(approximate="tanh"),
                                           batch_first=True)
    with pytest.raises(ValueError, match="ReLU or GELU"):
        layers.EncoderLayer.from_torch(tanh_gelu)


def test_the_encoder_decoder_checks_its_inputs_once_per_forward(validation_calls):
    """The door checks src, tgt and each padding mask once; the 6 + 6 layers call the
    attention, norm and feed-forward cores, which check nothing again."""
    model = layers.Transformer(layers.TransformerConfig(src_vocab_size=20, tgt_vocab_size=20))
    src, tgt = torch.randint(0, 20, (2, 7)), torch.randint(0, 20, (2, 5))
    src_mask, tgt_mask = torch.ones(2, 7, dtype=torch.bool), torch.ones(2, 5, dtype=torch.bool)
    src_mask[1, 5:], tgt_mask[0, 4:] = False, False
    validation_calls.clear()  # building the model checked its config
    with torch.no_grad():
        model(src, tgt, src_mask, tgt_mask)
    assert validation_calls == {"check_tensor": 4}  # src, tgt and their two masks
    validation_calls.clear()
    with torch.no_grad():
        model.decode(tgt, model.encode(src, src_mask), src_mask, tgt_mask)
    assert sum(validation_calls.values()) <= 12  # encode and decode are doors of their own
