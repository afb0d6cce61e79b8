"""Tests for course_utils.language_model: the model against a functional PyTorch reference
(F.rms_norm, GPT-J's RoPE, F.scaled_dot_product_attention with enable_gqa, notebook 17's window
mask), every kind of KV cache against full forwards, left-padded batches against each prompt
alone, FLOPs against torch's FlopCounterMode, and generation. The model against Hugging Face's
Llama: test_llama.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from course_utils import language_model as lm
from course_utils import tiled
from course_utils.kv_cache import KVCache, PagedKVCache
from course_utils.layers import count_parameters

CONFIG = lm.LMConfig(vocab_size=13, d_model=24, n_layers=2, n_heads=6, n_kv_heads=2, d_ff=40,
                     max_len=64)


def make_model(config: lm.LMConfig = CONFIG, seed: int = 0) -> lm.DecoderLM:
    torch.manual_seed(seed)
    model = lm.DecoderLM(config).double().eval()
    with torch.no_grad():  # non-trivial norm gains and biases, so every parameter matters
        for name, p in model.named_parameters():
            if "norm" in name or "bias" in name:
                p.add_(0.3 * torch.randn_like(p))
    return model


def ids_for(batch: int, length: int, seed: int = 1, vocab: int = 13) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(seed))


def rope_every_two(x: torch.Tensor, base: float) -> torch.Tensor:
    """GPT-J's interleaved RoPE: x·cos + rotate_every_two(x)·sin, positions 0, 1, …"""
    d, n = x.shape[-1], x.shape[-2]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = (torch.arange(n, dtype=torch.float64)[:, None] * theta).repeat_interleave(2, -1)
    rotated = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
    return x * angles.cos().to(x.dtype) + rotated * angles.sin().to(x.dtype)


def reference_forward(model: lm.DecoderLM, ids: torch.Tensor) -> torch.Tensor:
    """The same model written with torch.nn.functional only (Llama's recipe); a sliding window
    through notebook 17's dense mask."""
    c = model.config
    b, n = ids.shape
    window = c.sliding_window
    mask = None if window is None else tiled.dense_mask(n, n, causal=True, window=window)
    x = F.embedding(ids, model.embed.weight)
    for block in model.blocks:
        h = F.rms_norm(x, (c.d_model,), block.norm1.weight, c.eps)
        a = block.attn
        q = F.linear(h, a.q_proj.weight).view(b, n, c.n_heads, c.head_dim).transpose(1, 2)
        k = F.linear(h, a.k_proj.weight).view(b, n, c.n_kv_heads, c.head_dim).transpose(1, 2)
        v = F.linear(h, a.v_proj.weight).view(b, n, c.n_kv_heads, c.head_dim).transpose(1, 2)
        q, k = rope_every_two(q, c.rope_theta), rope_every_two(k, c.rope_theta)
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None,
                                           enable_gqa=True)
        x = x + F.linear(z.transpose(1, 2).reshape(b, n, c.d_model), a.out_proj.weight)
        h = F.rms_norm(x, (c.d_model,), block.norm2.weight, c.eps)
        ff = block.feed_forward
        hidden = F.silu(F.linear(h, ff.gate.weight, ff.gate.bias)) * F.linear(
            h, ff.linear1.weight, ff.linear1.bias)
        x = x + F.linear(hidden, ff.linear2.weight, ff.linear2.bias)
    return F.linear(F.rms_norm(x, (c.d_model,), model.norm.weight, c.eps), model.output.weight)


# ------------------------------------------------------------------------------ the config


def test_config_accepts_numpy_integers_and_derives_head_dim() -> None:
    config = lm.LMConfig(vocab_size=np.int64(10), d_model=np.int32(16), n_layers=1, n_heads=4,
                         n_kv_heads=2, d_ff=32, max_len=8, rope_theta=np.float64(500.0),
                         sliding_window=np.int64(3))
    assert config.vocab_size == 10 and type(config.vocab_size) is int
    assert config.head_dim == 4 and config.rope_theta == 500.0
    assert config.sliding_window == 3 and type(config.sliding_window) is int
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.d_model = 8


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"vocab_size": 0}, ValueError, "vocab_size"),
        ({"d_model": 24.0}, TypeError, "d_model"),
        ({"n_layers": True}, TypeError, "n_layers"),
        ({"n_heads": 5}, ValueError, "not divisible by n_heads"),
        ({"n_heads": 8}, ValueError, "head_dim .* must be even"),
        ({"n_kv_heads": 4}, ValueError, "multiple of n_kv_heads"),
        ({"d_ff": -1}, ValueError, "d_ff"),
        ({"max_len": 0}, ValueError, "max_len"),
        ({"rope_theta": 1.0}, ValueError, "rope_theta"),
        ({"rope_theta": "1e4"}, TypeError, "rope_theta"),
        ({"rope_layout": "split"}, ValueError, "rope_layout"),
        ({"rope_layout": 2}, TypeError, "rope_layout"),
        ({"rope_scaling": "linear"}, TypeError, "rope_scaling"),
        ({"rope_scaling": {"rope_type": "yarn"}}, ValueError, "rope_scaling"),
        ({"rope_scaling": {"rope_type": "linear"}}, ValueError, "rope_scaling.*factor"),
        ({"sliding_window": 0}, ValueError, "sliding_window"),
        ({"sliding_window": 4.0}, TypeError, "sliding_window"),
        ({"mlp_bias": 0}, TypeError, "mlp_bias"),
        ({"eps": 0.0}, ValueError, "eps"),
        ({"tie_embeddings": 1}, TypeError, "tie_embeddings"),
    ],
)
def test_config_bad_values(changes, error, match) -> None:
    with pytest.raises(error, match=match):
        dataclasses.replace(CONFIG, **changes)


# ------------------------------------------------------------------------------- the model


@pytest.mark.parametrize("n_kv_heads", [6, 2, 1])
def test_forward_equals_functional_reference(n_kv_heads) -> None:
    model = make_model(dataclasses.replace(CONFIG, n_kv_heads=n_kv_heads))
    ids = ids_for(3, 11)
    logits, cache = model(ids)
    assert logits.shape == (3, 11, 13)
    torch.testing.assert_close(logits, reference_forward(model, ids), rtol=1e-10, atol=1e-12)
    assert all(k.shape == (3, n_kv_heads, 11, 4) for k in cache.keys + cache.values)


def test_float32_model_equals_reference() -> None:
    torch.manual_seed(0)
    model = lm.DecoderLM(CONFIG).eval()
    ids = ids_for(2, 9)
    torch.testing.assert_close(model(ids)[0], reference_forward(model, ids), rtol=1e-4, atol=1e-5)


def test_causal_a_later_token_never_changes_earlier_logits() -> None:
    model = make_model()
    ids = ids_for(2, 10)
    changed = ids.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % 13
    a, b = model(ids)[0], model(changed)[0]
    torch.testing.assert_close(a[:, :6], b[:, :6], rtol=0, atol=0)
    assert not torch.allclose(a[:, 6:], b[:, 6:])


def test_no_mlp_bias_drops_every_bias_and_still_equals_the_reference() -> None:
    with_bias, without = make_model(), make_model(dataclasses.replace(CONFIG, mlp_bias=False))
    assert not [name for name, _ in without.named_parameters() if "bias" in name]
    assert count_parameters(with_bias) - count_parameters(without) == 2 * (2 * 40 + 24)
    ids = ids_for(2, 9)
    torch.testing.assert_close(without(ids)[0], reference_forward(without, ids), rtol=1e-10,
                               atol=1e-12)


def test_weight_tying_shares_one_matrix() -> None:
    tied, untied = make_model(), make_model(dataclasses.replace(CONFIG, tie_embeddings=False))
    assert tied.output.weight is tied.embed.weight
    assert untied.output.weight is not untied.embed.weight
    assert count_parameters(untied) - count_parameters(tied) == 13 * 24
    c, d, kv = CONFIG, 24, 2 * 4
    per_layer = 2 * d * d + 2 * d * kv + 3 * d * c.d_ff + 2 * c.d_ff + d + 2 * d
    assert count_parameters(tied) == c.n_layers * per_layer + d + c.vocab_size * d


# ---------------------------------------------------------------------------- the KV cache


WINDOW = 5
WINDOWED = dataclasses.replace(CONFIG, sliding_window=WINDOW)
CACHE_KINDS = ("grow", "preallocated", "paged", "rolling")


def empty_cache(kind: str, batch: int, config: lm.LMConfig = CONFIG) -> KVCache | PagedKVCache:
    dims = (config.n_layers, batch, config.n_kv_heads, config.head_dim)
    if kind == "paged":
        return PagedKVCache(*dims, n_blocks=batch * 8, block_size=3, dtype=torch.float64)
    options = {"grow": {}, "preallocated": {"max_len": 24}, "rolling": {"window": WINDOW}}
    return KVCache(*dims, **options[kind], dtype=torch.float64)


def test_the_window_mask_is_the_band_of_the_last_w_keys() -> None:
    i, j = torch.arange(9)[:, None], torch.arange(9)[None, :]
    band = (j <= i) & (j > i - WINDOW)  # query i sees keys i - W + 1, ..., i
    assert torch.equal(tiled.dense_mask(9, 9, causal=True, window=WINDOW), band)


@pytest.mark.parametrize("window", [None, 1, WINDOW, 30])
def test_sliding_window_forward_equals_the_masked_reference(window) -> None:
    model = make_model(dataclasses.replace(CONFIG, sliding_window=window))
    ids = ids_for(2, 20)
    torch.testing.assert_close(model(ids)[0], reference_forward(model, ids), rtol=1e-10,
                               atol=1e-12)
    if window is not None and window < 20:  # the window changes the logits of late tokens
        assert not torch.allclose(model(ids)[0][:, window:], make_model()(ids)[0][:, window:])


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(CACHE_KINDS), windowed=st.booleans(),
       cuts=st.lists(st.integers(1, 19), max_size=5, unique=True), batch=st.integers(1, 3),
       seed=st.integers(0, 2**16))
def test_every_cache_gives_the_full_forward_logits(kind, windowed, cuts, batch, seed) -> None:
    """Grown, preallocated, paged (with or without a window) and rolling (with one) caches, fed
    the sequence in chunks, give the logits of one full forward, which is the reference's."""
    config = WINDOWED if windowed or kind == "rolling" else CONFIG
    model = make_model(config, seed=seed % 7)
    ids = ids_for(batch, 20, seed)
    full = reference_forward(model, ids)
    bounds = [0, *sorted(cuts), 20]
    cache, pieces = empty_cache(kind, batch, config), []
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        logits, returned = model(ids[:, start:end], cache)
        assert (returned is cache) == (kind != "grow")  # written in place, or a new cache
        cache = returned
        pieces.append(logits)
        assert cache.length == end
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, rtol=1e-10, atol=1e-12)
    _, whole = model(ids)  # the grown cache of one full forward holds every key
    kept = slice(20 - WINDOW, 20) if kind == "rolling" else slice(0, 20)
    for mine, theirs in zip(cache.keys + cache.values, whole.keys + whole.values, strict=True):
        torch.testing.assert_close(mine, theirs[:, :, kept], rtol=1e-10, atol=1e-12)


def test_the_rolling_cache_decodes_in_bounded_memory() -> None:
    model = make_model(dataclasses.replace(WINDOWED, max_len=200))
    ids = ids_for(1, 150)
    full = reference_forward(model, ids)
    logits, cache = model(ids[:, :3], empty_cache("rolling", 1, WINDOWED))
    bound = lm.kv_cache_bytes(2, 2, 4, WINDOW, bytes_per_value=8)
    for t in range(3, 150):
        logits, cache = model(ids[:, t:t + 1], cache)
        assert cache.nbytes == bound
        torch.testing.assert_close(logits[:, 0], full[:, t], rtol=1e-10, atol=1e-12)
    grown = model(ids)[1]
    assert grown.nbytes == lm.kv_cache_bytes(2, 2, 4, 150, bytes_per_value=8) == 30 * bound


# ---------------------------------------------------------------- batches of prompts


def left_padded(prompts: list[torch.Tensor], pad: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask = torch.zeros(len(prompts), width, dtype=torch.long)
    for b, p in enumerate(prompts):
        ids[b, width - len(p):], mask[b, width - len(p):] = p, 1
    return ids, mask


PROMPTS = [ids_for(1, n, seed=n)[0] for n in (4, 9, 1, 6)]


@pytest.mark.parametrize("config", [CONFIG, WINDOWED], ids=["full", "window"])
def test_a_left_padded_batch_gives_each_prompt_its_own_logits(config) -> None:
    model = make_model(config)
    ids, mask = left_padded(PROMPTS, pad=7)
    logits, cache = model(ids, attention_mask=mask)
    assert torch.isfinite(logits).all()  # padding queries see no key: output 0, not NaN
    nexts = ids_for(4, 3, seed=5)
    for t in range(3):  # then decode against the cache, the mask growing by one column
        mask = torch.cat([mask, torch.ones(4, 1, dtype=torch.long)], dim=1)
        step, cache = model(nexts[:, t:t + 1], cache, attention_mask=mask.bool())
        logits = torch.cat([logits, step], dim=1)
    for b, prompt in enumerate(PROMPTS):
        alone = reference_forward(model, torch.cat([prompt, nexts[b]])[None])[0]
        mine = logits[b, ids.shape[1] - len(prompt):]
        torch.testing.assert_close(mine, alone, rtol=1e-10, atol=1e-12)
    # the positions the mask implies, given explicitly
    explicit = (mask[:, :9].cumsum(1) - 1).clamp(min=0)
    torch.testing.assert_close(model(ids, attention_mask=mask[:, :9], position_ids=explicit)[0],
                               model(ids, attention_mask=mask[:, :9])[0], rtol=0, atol=0)
    # without the mask the padded prompts get other logits
    assert not torch.allclose(model(ids)[0][0, -1], logits[0, ids.shape[1] - 1])


def test_a_prompt_against_a_cache_needs_the_bottom_right_mask() -> None:
    model = make_model()
    ids = ids_for(1, 9)
    full = model(ids)[0]
    _, cache = model(ids[:, :5])
    logits, _ = model(ids[:, 5:], cache)  # 4 queries against 9 keys: query i sees keys <= 5 + i
    torch.testing.assert_close(logits, full[:, 5:], rtol=1e-10, atol=1e-12)


def test_cache_is_not_changed_in_place_and_can_branch() -> None:
    model = make_model()
    ids = ids_for(2, 8)
    _, cache = model(ids[:, :5])
    before = [k.clone() for k in cache.keys]
    first, _ = model(ids[:, 5:], cache)
    other, _ = model((ids[:, 5:] + 1) % 13, cache)
    again, _ = model(ids[:, 5:], cache)
    assert cache.length == 5 and all(torch.equal(a, b) for a, b in zip(before, cache.keys,
                                                                       strict=True))
    torch.testing.assert_close(first, again, rtol=0, atol=0)
    assert not torch.allclose(first, other)


def test_cache_bytes_formula_and_published_configurations() -> None:
    model = make_model()
    _, cache = model(ids_for(3, 10))
    assert cache.nbytes == lm.kv_cache_bytes(2, 2, 4, 10, bytes_per_value=8, batch_size=3)
    assert cache.nbytes == 2 * 2 * 2 * 4 * 10 * 8 * 3
    assert lm.kv_cache_bytes(32, 8, 128, 1) == 128 * 1024  # Llama 3 8B, bfloat16
    assert lm.kv_cache_bytes(32, 32, 128, 1) == 512 * 1024  # Llama 2 7B: 32 KV heads
    assert lm.kv_cache_bytes(80, 8, 128, 8192) == 80 * 2 * 8 * 128 * 2 * 8192
    assert lm.kv_cache_bytes(2, 2, 4, 0) == 0
    for bad, error in (((0, 8, 128, 1), ValueError), ((32, 8, 128, -1), ValueError),
                       ((32, 8.0, 128, 1), TypeError)):
        with pytest.raises(error):
            lm.kv_cache_bytes(*bad)


@pytest.mark.parametrize(
    ("make_call", "error", "match"),
    [
        (lambda m, c: m(ids_for(2, 3), KVCache(3, 2, 2, 4, dtype=torch.float64)), ValueError,
         "3 layers"),
        (lambda m, c: m(ids_for(2, 3), KVCache(2, 2, 2, 4)), ValueError, "float32"),
        (lambda m, c: m(ids_for(2, 3), KVCache(2, 2, 2, 4, window=4, dtype=torch.float64)),
         ValueError, "rolling"),
        (lambda m, c: m(ids_for(2, 3), KVCache(2, 2, 2, 4, max_len=2, dtype=torch.float64)),
         ValueError, "room for 2"),
        (lambda m, c: m(ids_for(3, 2), c), ValueError, "batch of 2"),
        (lambda m, c: m(ids_for(2, 2), c, attention_mask=torch.ones(2, 2)), TypeError, "0/1"),
        (lambda m, c: m(ids_for(2, 2), c, attention_mask=torch.ones(2, 2, dtype=torch.bool)),
         ValueError, r"\(2, 6\)"),
        (lambda m, c: m(ids_for(2, 2), attention_mask=2 * torch.ones(2, 2, dtype=torch.long)),
         ValueError, "0/1"),
        (lambda m, c: m(ids_for(2, 2), position_ids=torch.zeros(2, 2)), TypeError, "int64"),
        (lambda m, c: m(ids_for(2, 2), position_ids=torch.zeros(2, 3, dtype=torch.long)),
         ValueError, "position_ids"),
        (lambda m, c: m(ids_for(2, 2), (c.keys, c.values)), TypeError, "KVCache"),
        (lambda m, c: m(ids_for(2, 2), c, attention_mask=[[1, 1]]), TypeError, "attention_mask"),
        (lambda m, c: m(ids_for(2, 62), c), ValueError, "max_len=64"),
        (lambda m, c: m(ids_for(2, 3).int()), TypeError, "int64"),
        (lambda m, c: m([[1, 2]]), TypeError, "ids must be a torch.Tensor, got list"),
        (lambda m, c: m(torch.tensor([1, 2])), ValueError, r"\(B, L\)"),
        (lambda m, c: m(torch.zeros(2, 0, dtype=torch.long)), ValueError, r"\(B, L\)"),
        (lambda m, c: m(torch.tensor([[1, 13]])), ValueError, "vocab_size=13"),
        (lambda m, c: lm.DecoderLM({"vocab_size": 13}), TypeError, "LMConfig"),
    ],
)
def test_bad_inputs(make_call, error, match) -> None:
    model = make_model()
    _, cache = model(ids_for(2, 4))
    with pytest.raises(error, match=match):
        make_call(model, cache)


# ---------------------------------------------------------------------------------- cost


@pytest.mark.parametrize("n_kv_heads", [6, 2, 1])
@pytest.mark.parametrize(("n_new", "n_past"), [(7, 0), (1, 9), (3, 5)])
def test_forward_flops_equal_pytorch_flop_counter(n_kv_heads, n_new, n_past) -> None:
    config = dataclasses.replace(CONFIG, n_kv_heads=n_kv_heads)
    model = make_model(config)
    ids = ids_for(1, n_new + n_past)
    cache = model(ids[:, :n_past])[1] if n_past else None
    with FlopCounterMode(display=False) as counter:
        model(ids[:, n_past:], cache)
    assert counter.get_total_flops() == lm.forward_flops(config, n_new, n_past)


def test_flops_per_token_grow_linearly_with_cache_and_quadratically_without() -> None:
    c = CONFIG
    cached = [lm.forward_flops(c, 1, n - 1) for n in (100, 200, 300)]
    full = [lm.forward_flops(c, n) for n in (100, 200, 300)]
    assert cached[2] - cached[1] == cached[1] - cached[0] == 100 * 4 * c.d_model * c.n_layers
    assert (full[2] - full[1]) - (full[1] - full[0]) == 2 * 100**2 * 4 * c.d_model * c.n_layers
    with pytest.raises(TypeError, match="LMConfig"):
        lm.forward_flops(dataclasses.asdict(c), 1)
    with pytest.raises(ValueError, match="n_new"):
        lm.forward_flops(c, 0)


# ------------------------------------------------------------------------------ generation


def greedy_by_hand(model: lm.DecoderLM, prompt: torch.Tensor, n: int) -> torch.Tensor:
    ids = prompt
    for _ in range(n):
        ids = torch.cat([ids, reference_forward(model, ids)[:, -1].argmax(-1, keepdim=True)], 1)
    return ids


def test_greedy_generation_with_and_without_cache() -> None:
    model = make_model()
    prompt = ids_for(2, 3)
    expected = greedy_by_hand(model, prompt, 12)
    for use_cache in (True, False):
        out = lm.generate(model, prompt, 12, use_cache=use_cache)
        assert out.shape == (2, 15) and torch.equal(out, expected)
    # temperature 0 is greedy whatever top_k and top_p say
    assert torch.equal(lm.generate(model, prompt, 12, top_k=3, top_p=0.5), expected)
    assert torch.equal(lm.generate(model, prompt, 0), prompt)


@pytest.mark.parametrize("config", [CONFIG, WINDOWED], ids=["full", "window"])
def test_generation_is_the_same_with_every_cache_kind(config) -> None:
    model = make_model(config)
    prompt = ids_for(2, 3)
    expected = greedy_by_hand(model, prompt, 12)  # the reference, with notebook 17's window mask
    kinds = [k for k in CACHE_KINDS if k != "rolling" or config.sliding_window]
    outs = {"no cache": lm.generate(model, prompt, 12, use_cache=False),
            "default": lm.generate(model, prompt, 12),
            **{kind: lm.generate(model, prompt, 12, cache=empty_cache(kind, 2, config))
               for kind in kinds}}
    for name, out in outs.items():
        assert torch.equal(out, expected), name


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_left_padded_batch_generates_what_each_prompt_generates_alone(use_cache) -> None:
    model = make_model()
    ids, mask = left_padded(PROMPTS, pad=3)
    out = lm.generate(model, ids, 8, use_cache=use_cache, attention_mask=mask)
    assert torch.equal(out[:, :ids.shape[1]], ids)
    for b, prompt in enumerate(PROMPTS):
        assert torch.equal(out[b, ids.shape[1]:], greedy_by_hand(model, prompt[None], 8)[0, -8:])


def test_generation_stops_each_sequence_at_eos_and_the_loop_when_all_have() -> None:
    model = make_model()
    prompt = ids_for(3, 2, seed=2)
    free = greedy_by_hand(model, prompt, 20)[:, 2:]  # (3, 20), no eos
    eos = int(free[0, 4])
    firsts = [int((row == eos).nonzero()[0]) if (row == eos).any() else None for row in free]
    expected = free.clone()
    for b, first in enumerate(firsts):
        if first is not None:
            expected[b, first + 1:] = eos  # after eos a sequence repeats eos
    stop = 20 if None in firsts else max(firsts) + 1
    for use_cache in (True, False):
        out = lm.generate(model, prompt, 20, use_cache=use_cache, eos_token_id=eos)
        assert torch.equal(out, torch.cat([prompt, expected[:, :stop]], dim=1))
    # one sequence alone: the loop ends at its eos
    alone = lm.generate(model, prompt[:1], 20, eos_token_id=eos)
    assert alone.shape == (1, 2 + firsts[0] + 1) and alone[0, -1] == eos
    assert torch.equal(alone[0, 2:], free[0, :firsts[0] + 1])


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), [(1.0, None, None), (0.8, 5, 0.9)])
def test_sampled_generation_is_the_same_with_and_without_cache(temperature, top_k, top_p) -> None:
    model = make_model()
    prompt = ids_for(3, 2)
    outs = [lm.generate(model, prompt, 15, use_cache=use_cache, temperature=temperature,
                        top_k=top_k, top_p=top_p, generator=torch.Generator().manual_seed(4))
            for use_cache in (True, False)]
    assert torch.equal(*outs)
    assert torch.equal(outs[0][:, :2], prompt)
    greedy = lm.generate(model, prompt, 15)
    assert not torch.equal(outs[0], greedy)


def test_generate_restores_the_training_mode_and_checks_its_arguments() -> None:
    model = make_model().train()
    lm.generate(model, ids_for(1, 2), 3)
    assert model.training
    prompt = ids_for(1, 2)
    for kwargs, error, match in [
        ({"temperature": -0.5}, ValueError, "temperature"),
        ({"temperature": "hot"}, TypeError, "temperature"),
        ({"top_p": 0.0}, ValueError, "top_p"),
        ({"top_k": 0, "temperature": 1.0}, ValueError, "top_k"),
        ({"max_new_tokens": 63}, ValueError, "max_len=64"),
        ({"max_new_tokens": -1}, ValueError, "max_new_tokens"),
        ({"eos_token_id": 13}, ValueError, "eos_token_id"),
        ({"eos_token_id": 1.0}, TypeError, "eos_token_id"),
        ({"attention_mask": torch.ones(1, 3)}, TypeError, "attention_mask"),
        ({"attention_mask": torch.ones(1, 3, dtype=torch.bool)}, ValueError, "attention_mask"),
        ({"cache": empty_cache("grow", 1).update(0, *torch.zeros(2, 1, 2, 1, 4).double())},
         TypeError, "cache"),
        ({"cache": KVCache(2, 1, 2, 4)}, ValueError, "float32"),
        ({"cache": empty_cache("grow", 1), "use_cache": False}, ValueError, "use_cache"),
        ({"cache": KVCache(2, 1, 2, 4, max_len=3, dtype=torch.float64)}, ValueError,
         "room for 3"),
        ({"cache": model(prompt)[1]}, ValueError, "empty"),
    ]:
        call = {"max_new_tokens": 3, **kwargs}
        with pytest.raises(error, match=match):
            lm.generate(model, prompt, **call)
    with pytest.raises(TypeError, match="DecoderLM"):
        lm.generate(torch.nn.Linear(2, 2), prompt, 3)


def test_a_forward_pass_checks_once_and_computes_rope_tables_once(validation_calls, monkeypatch):
    """ids and the attention mask are checked at the door, RoPE's scaling never again after the
    config, and the cos/sin tables are computed once per forward pass for all layers."""
    from course_utils import language_model, positional

    config = lm.LMConfig(vocab_size=50, d_model=32, n_layers=4, n_heads=4, n_kv_heads=2,
                         d_ff=64, max_len=64, rope_scaling={"rope_type": "linear", "factor": 2.0})
    model = lm.DecoderLM(config).eval()
    tables, scalings = [], []
    monkeypatch.setattr(language_model, "_rope_tables",
                        lambda *a: tables.append(a) or positional._rope_tables(*a))
    monkeypatch.setattr(positional, "_check_scaling",
                        lambda *a: scalings.append(a) or None)
    ids, mask = torch.randint(0, 50, (2, 6)), torch.ones(2, 6, dtype=torch.long)
    mask[0, :2] = 0
    validation_calls.clear()  # building the model checked its config
    with torch.no_grad():
        model(ids, attention_mask=mask)
    assert len(tables) == 1 and not scalings
    assert validation_calls["check_tensor"] == 2  # ids and attention_mask
    assert sum(validation_calls.values()) <= 6  # and the new cache's sizes
