"""The course's DecoderLM against an independent implementation of the published architecture:
Hugging Face's ``transformers.LlamaForCausalLM``, built from a small ``LlamaConfig`` with random
weights (nothing is downloaded), its weights copied into a DecoderLM configured as Llama 3.1
(``mlp_bias=False``, ``rope_layout="half"``, ``rope_theta=500000``, the llama3 ``rope_scaling``,
grouped-query attention). The two give the same logits, the same greedy tokens with and without
a cache, and the same results on a left-padded batch; the interleaved layout with the rows of
W^Q and W^K permuted gives the same logits too."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import transformers

from course_utils import language_model as lm
from course_utils.positional import layout_permutation

# head_dim 16: 8 RoPE pairs of wavelengths 2π·500000^(i/8) = 6.3, 33, 170, 880, …; with an
# original context of 256 (low_freq_factor 1, high_freq_factor 4) pairs 0-1 keep their
# frequency, pair 2 lies in the smoothly interpolated band, pairs 3-7 are divided by 8
SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 256}
THETA, HEADS, KV_HEADS, D_MODEL = 500000.0, 4, 2, 64
HEAD_DIM = D_MODEL // HEADS
PAD = 0


def hf_llama(tie: bool, seed: int = 0) -> transformers.LlamaForCausalLM:
    config = transformers.LlamaConfig(
        vocab_size=97, hidden_size=D_MODEL, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=512,
        rms_norm_eps=1e-5, rope_parameters={"rope_theta": THETA, **SCALING},
        tie_word_embeddings=tie, bos_token_id=None, eos_token_id=None, pad_token_id=PAD)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # weights large enough for confident logits; gains away from 1
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            else:
                p.normal_(std=0.15)
    return model


def course_config(hf: transformers.LlamaForCausalLM, layout: str = "half") -> lm.LMConfig:
    c = hf.config
    return lm.LMConfig(vocab_size=c.vocab_size, d_model=c.hidden_size, n_layers=c.num_hidden_layers,
                       n_heads=c.num_attention_heads, n_kv_heads=c.num_key_value_heads,
                       d_ff=c.intermediate_size, max_len=c.max_position_embeddings,
                       rope_theta=THETA, rope_scaling=SCALING, rope_layout=layout,
                       mlp_bias=False, eps=c.rms_norm_eps, tie_embeddings=c.tie_word_embeddings)


@torch.no_grad()
def from_llama(hf: transformers.LlamaForCausalLM, config: lm.LMConfig,
               permute: bool | None = None) -> lm.DecoderLM:
    """A DecoderLM holding ``hf``'s weights; for the interleaved layout (``permute``: by
    default when ``config.rope_layout`` is) the rows of W^Q and W^K are permuted inside each
    head (layout_permutation)."""
    model = lm.DecoderLM(config).eval()
    sd = hf.state_dict()
    perm = layout_permutation(HEAD_DIM, "interleaved")

    def rows(w: torch.Tensor, heads: int) -> torch.Tensor:
        if not (config.rope_layout == "interleaved" if permute is None else permute):
            return w
        return w.view(heads, HEAD_DIM, -1)[:, perm].reshape(heads * HEAD_DIM, -1)

    pairs = [(model.embed.weight, sd["model.embed_tokens.weight"]),
             (model.norm.weight, sd["model.norm.weight"])]
    if not config.tie_embeddings:
        pairs.append((model.output.weight, sd["lm_head.weight"]))
    for i, block in enumerate(model.blocks):
        p = f"model.layers.{i}."
        pairs += [
            (block.norm1.weight, sd[p + "input_layernorm.weight"]),
            (block.attn.q_proj.weight, rows(sd[p + "self_attn.q_proj.weight"], HEADS)),
            (block.attn.k_proj.weight, rows(sd[p + "self_attn.k_proj.weight"], KV_HEADS)),
            (block.attn.v_proj.weight, sd[p + "self_attn.v_proj.weight"]),
            (block.attn.out_proj.weight, sd[p + "self_attn.o_proj.weight"]),
            (block.norm2.weight, sd[p + "post_attention_layernorm.weight"]),
            (block.feed_forward.gate.weight, sd[p + "mlp.gate_proj.weight"]),
            (block.feed_forward.linear1.weight, sd[p + "mlp.up_proj.weight"]),
            (block.feed_forward.linear2.weight, sd[p + "mlp.down_proj.weight"]),
        ]
    for mine, theirs in pairs:
        assert mine.shape == theirs.shape
        mine.copy_(theirs)
    # every parameter was set: the course's model has nothing Llama lacks (no biases)
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in hf.parameters())
    return model


def ids_for(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, 97, (batch, length), generator=g)


def close(mine: torch.Tensor, theirs: torch.Tensor) -> None:
    torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("tie", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_the_same_logits_as_llama(tie, layout) -> None:
    hf = hf_llama(tie)
    model = from_llama(hf, course_config(hf, layout))
    ids = ids_for(2, 40)
    with torch.no_grad():
        theirs = hf(ids).logits
        mine = model(ids)[0]
    assert theirs.abs().max() > 1  # logits far from uniform: the comparison means something
    close(mine, theirs)


def test_each_llama_option_matters() -> None:
    """Without the scaling, with the other layout, or another θ the logits differ from Llama's
    by far more than the tolerance, so the equality above tests each of them."""
    hf = hf_llama(tie=False)
    config = course_config(hf)
    ids = ids_for(1, 40)
    with torch.no_grad():
        theirs = hf(ids).logits
        for change in ({"rope_scaling": None}, {"rope_layout": "interleaved"},
                       {"rope_theta": 10000.0}):
            mine = from_llama(hf, dataclasses.replace(config, **change), permute=False)
            gap = (mine(ids)[0] - theirs).abs().max()
            assert gap > 1e-3, change


@pytest.mark.parametrize("use_cache", [True, False])
def test_the_same_greedy_tokens_as_llama(use_cache) -> None:
    hf = hf_llama(tie=False)
    model = from_llama(hf, course_config(hf))
    prompt = ids_for(2, 7, seed=3)
    theirs = hf.generate(prompt, max_new_tokens=20, do_sample=False, use_cache=use_cache)
    mine = lm.generate(model, prompt, 20, use_cache=use_cache)
    assert theirs.shape == (2, 27) and len(set(theirs[0, 7:].tolist())) > 3
    assert torch.equal(mine, theirs)


def left_padded(lengths: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    ids = ids_for(len(lengths), max(lengths), seed=4)
    mask = torch.ones_like(ids)
    for b, n in enumerate(lengths):
        ids[b, :max(lengths) - n], mask[b, :max(lengths) - n] = PAD, 0
    return ids, mask


def test_a_left_padded_batch_as_llama_with_its_attention_mask() -> None:
    hf = hf_llama(tie=True)
    model = from_llama(hf, course_config(hf))
    ids, mask = left_padded((5, 12, 8))
    positions = (mask.cumsum(1) - 1).clamp(min=0)  # as Hugging Face's generate computes them
    with torch.no_grad():
        theirs = hf(ids, attention_mask=mask, position_ids=positions).logits
        mine = model(ids, attention_mask=mask)[0]
    real = mask.bool()
    close(mine[real], theirs[real])
    assert torch.isfinite(mine).all()
    for use_cache in (True, False):
        out = hf.generate(ids, attention_mask=mask, max_new_tokens=12, do_sample=False,
                          use_cache=use_cache)
        assert torch.equal(lm.generate(model, ids, 12, use_cache=use_cache, attention_mask=mask),
                           out)
