"""A decoder-only language model as built today: RoPE, RMSNorm, grouped-query attention, SwiGLU,
tied embeddings, and a KV cache for generation.

The encoder–decoder of :class:`course_utils.layers.Transformer` without the encoder and without
cross-attention. Each block is pre-norm::

    x = x + Attention(RMSNorm(x))        causal self-attention, RoPE on q and k, H_kv <= H heads
    x = x + SwiGLU(RMSNorm(x))

then a final RMSNorm and the output projection, which shares its matrix with the token embedding
(``tie_embeddings``): ``logits = RMSNorm(x) E^T``. There is no position table: positions enter
only through the rotation of queries and keys (:func:`course_utils.positional.apply_rope`).

``forward(ids, cache)`` returns the logits and a cache (:mod:`course_utils.kv_cache`) holding
every layer's keys and values so far; feeding it back with the next tokens continues the
sequence without recomputing the past, and gives the logits a full forward over all tokens would
give. A batch of prompts of different lengths is padded on the left and passed with an
``attention_mask`` (1 = real token): each prompt then gets the logits it gets alone.
:func:`generate` decodes greedily or samples (:mod:`course_utils.sampling`), with or without the
cache, and stops a sequence at an end-of-sequence token.

The options that make the model a Llama (Hugging Face's ``LlamaForCausalLM``): ``mlp_bias=False``,
``rope_layout="half"``, ``rope_theta`` and ``rope_scaling`` as in its configuration. Mistral 7B
v0.1 is ``sliding_window=4096``: each query sees its 4,096 most recent keys (itself included),
and generation keeps a rolling cache of that many positions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor, nn

from course_utils.attention import _attend, _merge_heads, _repeat_kv_heads, _split_heads
from course_utils.kv_cache import KVCache, PagedKVCache
from course_utils.layers import FeedForward
from course_utils.linalg import matmul_flops
from course_utils.norms import RMSNorm
from course_utils.positional import _rope_tables, _rotate, rope_frequencies
from course_utils.sampling import check_filters, filter_probs, sample, speculative_accept
from course_utils.validation import (
    check_bool,
    check_choice,
    check_generator,
    check_int,
    check_real,
    check_tensor,
)

__all__ = [
    "DecoderLM",
    "LMConfig",
    "SpeculativeStats",
    "forward_flops",
    "generate",
    "kv_cache_bytes",
    "speculative_generate",
]

Cache = KVCache | PagedKVCache  # the caches DecoderLM.forward takes (course_utils.kv_cache)

_INT_FIELDS = ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff", "max_len")


@dataclass(frozen=True, kw_only=True)
class LMConfig:
    """The hyper-parameters of a :class:`DecoderLM` (one place, as nanoGPT's ``GPTConfig``),
    every field passed by name.

    ``n_heads`` query heads of size ``head_dim = d_model / n_heads`` (even, for RoPE) share
    ``n_kv_heads`` key/value heads (``n_heads`` a multiple of it: equal is multi-head attention,
    1 is multi-query attention). ``d_ff`` is SwiGLU's hidden width, ``max_len`` the longest
    sequence the model accepts, ``eps`` RMSNorm's epsilon, ``mlp_bias`` whether the SwiGLU has
    biases (Llama's has none).

    RoPE: ``rope_theta`` its base (Hugging Face's name; Llama 3: 500,000), ``rope_scaling`` a
    Hugging Face ``rope_scaling`` dictionary or None
    (:func:`course_utils.positional.rope_frequencies`), ``rope_layout`` which features rotate
    together: ``"interleaved"`` pairs ``2i, 2i + 1`` (RoFormer, Meta's original Llama code),
    ``"half"`` pairs ``i, i + head_dim/2`` (Hugging Face's checkpoints). The two are the same
    model with the rows of ``W^Q`` and ``W^K`` permuted inside each head
    (:func:`course_utils.positional.layout_permutation`). ``sliding_window=W``: each
    query sees only its ``W`` most recent keys, itself included (None: every earlier key).
    """

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    max_len: int
    rope_theta: float = 10000.0
    rope_scaling: dict[str, object] | None = None
    rope_layout: str = "interleaved"
    sliding_window: int | None = None
    mlp_bias: bool = True
    eps: float = 1e-6
    tie_embeddings: bool = True

    def __post_init__(self) -> None:
        for name in _INT_FIELDS:  # NumPy scalars become Python numbers
            object.__setattr__(self, name, check_int(getattr(self, name), name))
        for name, low in (("rope_theta", 1.0), ("eps", 0.0)):
            value = check_real(getattr(self, name), name, low=low, low_open=True)
            object.__setattr__(self, name, value)
        for name in ("tie_embeddings", "mlp_bias"):
            object.__setattr__(self, name, check_bool(getattr(self, name), name))
        layout = check_choice(self.rope_layout, "rope_layout", ("interleaved", "half"))
        object.__setattr__(self, "rope_layout", layout)
        if self.sliding_window is not None:
            window = check_int(self.sliding_window, "sliding_window")
            object.__setattr__(self, "sliding_window", window)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim = d_model / n_heads = {self.head_dim} must be even "
                             "(RoPE rotates pairs of features)")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads={self.n_heads} must be a multiple of "
                             f"n_kv_heads={self.n_kv_heads}")
        if self.rope_scaling is not None:  # checked (TypeError/ValueError naming it), and copied
            try:
                rope_frequencies(self.head_dim, self.rope_theta, self.rope_scaling)
            except (TypeError, ValueError) as error:
                raise type(error)(f"rope_scaling: {error}") from None
            object.__setattr__(self, "rope_scaling", dict(self.rope_scaling))

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def kv_cache_bytes(n_layers: int, n_kv_heads: int, head_dim: int, n_tokens: int,
                   bytes_per_value: int = 2, batch_size: int = 1) -> int:
    """Memory of a KV cache: ``2 · layers · kv_heads · head_dim · tokens · bytes · batch``.

    The 2 counts keys and values; ``bytes_per_value`` is 2 for bfloat16/float16, 4 for float32.
    A 32-layer model with 8 KV heads of size 128 in bfloat16 needs 131,072 bytes (128 KiB) per
    token.
    """
    n = 2
    for name, value in (("n_layers", n_layers), ("n_kv_heads", n_kv_heads),
                        ("head_dim", head_dim), ("bytes_per_value", bytes_per_value),
                        ("batch_size", batch_size)):
        n *= check_int(value, name)
    return n * check_int(n_tokens, "n_tokens", minimum=0)


def forward_flops(config: LMConfig, n_new: int, n_past: int = 0) -> int:
    """Matrix-multiplication FLOPs of ``DecoderLM.forward`` on one sequence of ``n_new`` tokens
    after ``n_past`` cached ones (:func:`course_utils.linalg.matmul_flops` each, ``2·m·k·n``;
    multiply by the batch size for a batch). Per layer::

        projections  2·n·d·(2·d + 2·H_kv·d_head)    (W^Q, W^O; W^K, W^V)
        attention    4·n·(n_past + n)·d             (Q Kᵀ and A V over every cached key)
        SwiGLU       6·n·d·d_ff                     (gate, up, down)

    plus ``2·n·d·V`` for the logits. One generated token costs ``forward_flops(c, 1, N - 1)``
    with the cache, O(N·d) in the attention, and ``forward_flops(c, N)`` without, O(N²·d).
    Attention is counted over every cached key, as a grown or preallocated cache reads them (a
    rolling cache reads at most the window's).
    """
    if not isinstance(config, LMConfig):
        raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
    n, past = check_int(n_new, "n_new"), check_int(n_past, "n_past", minimum=0)
    c, d, kv = config, config.d_model, config.n_kv_heads * config.head_dim
    per_layer = (2 * matmul_flops(n, d, d) + 2 * matmul_flops(n, d, kv)
                 + 2 * c.n_heads * matmul_flops(n, c.head_dim, past + n)
                 + 3 * matmul_flops(n, d, c.d_ff))
    return c.n_layers * per_layer + matmul_flops(n, d, c.vocab_size)


class _Step(NamedTuple):
    """What every layer of one forward pass shares."""

    cache: Cache
    columns: Tensor  # their cache positions (columns of the padded batch), (L,)
    key_mask: Tensor | None  # (B, L_total) bool, True = real token; None: no padding
    rope: tuple[Tensor, Tensor]  # cos, sin of the new tokens' RoPE angles: (L, d_h/2) or
    #                              (B, 1, L, d_h/2) for positions per sequence; computed once


class GroupedQueryAttention(nn.Module):
    """Causal self-attention with RoPE and ``n_kv_heads`` key/value heads, no biases.

    ``forward(x, layer, step)``: ``x`` ``(B, L, d_model)``, the new tokens; their keys and values
    go into ``step.cache`` (layer ``layer``), and every query attends over the cached keys it
    may see: earlier or equal columns, real tokens (``step.key_mask``), and, with a sliding
    window W, only the last W columns. Returns ``(B, L, d_model)``.
    """

    def __init__(self, config: LMConfig):
        super().__init__()
        self.config = config
        d, kv = config.d_model, config.n_kv_heads * config.head_dim
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv, bias=False)
        self.v_proj = nn.Linear(d, kv, bias=False)
        self.out_proj = nn.Linear(d, d, bias=False)

    def _rope(self, x: Tensor, step: _Step) -> Tensor:
        cos, sin = step.rope
        if cos.dtype != x.dtype:  # under autocast the projections compute in a lower precision
            cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        return _rotate(x, cos, sin, self.config.rope_layout)

    def forward(self, x: Tensor, layer: int, step: _Step) -> Tensor:
        c = self.config
        q = self._rope(_split_heads(self.q_proj(x), c.n_heads), step)
        k = self._rope(_split_heads(self.k_proj(x), c.n_kv_heads), step)
        v = _split_heads(self.v_proj(x), c.n_kv_heads)  # q (B, H, L, d_h); k, v (B, H_kv, L, d_h)
        k, v, key_columns = step.cache._update(layer, k, v)  # every key attention may read
        mask = self._visible(step, key_columns)
        # without a mask: the bottom-right causal mask, the L new queries after the cached keys
        k, v = _repeat_kv_heads(q, k, v)  # query head h reads K/V head h // (H / H_kv)
        z, _ = _attend(q, k, v, mask, mask is None, 1 / math.sqrt(c.head_dim), 0.0)
        return self.out_proj(_merge_heads(z))

    def _visible(self, step: _Step, key_columns: Tensor) -> Tensor | None:
        """``(B, 1, L, L_k)`` bool, True where query i may see key j: ``col_j ≤ col_i``,
        ``col_j > col_i − W`` (sliding window) and key j a real token; None when only the causal
        rule applies (keys are then the columns 0, 1, … in order)."""
        window = self.config.sliding_window
        if step.key_mask is None and window is None:
            return None
        q_cols, k_cols = step.columns[:, None], key_columns[None, :]
        visible = k_cols <= q_cols
        if window is not None:
            visible = visible & (k_cols > q_cols - window)
        if step.key_mask is not None:
            visible = visible & step.key_mask[:, None, k_cols[0]]  # (B, L, L_k)
        return visible[:, None] if visible.ndim == 3 else visible


class DecoderBlock(nn.Module):
    """``x = x + Attention(RMSNorm(x)); x = x + SwiGLU(RMSNorm(x))`` (pre-norm)."""

    def __init__(self, config: LMConfig):
        super().__init__()
        self.norm1 = RMSNorm(config.d_model, config.eps)
        self.attn = GroupedQueryAttention(config)
        self.norm2 = RMSNorm(config.d_model, config.eps)
        self.feed_forward = FeedForward(config.d_model, config.d_ff, activation="swiglu",
                                        bias=config.mlp_bias)

    def forward(self, x: Tensor, layer: int, step: _Step) -> Tensor:
        x = x + self.attn(self.norm1._forward(x), layer, step)
        return x + self.feed_forward._forward(self.norm2._forward(x))


class DecoderLM(nn.Module):
    """A decoder-only Transformer language model (see the module docstring).

    ``forward(ids, cache=None, *, attention_mask=None, position_ids=None)``: ``ids`` int64
    ``(B, L)`` continuing the ``cache.length`` tokens of ``cache`` → ``(logits (B, L, V),
    cache)``; ``logits[:, t]`` scores the token that follows ``ids[:, t]``. Weights start as
    ``N(0, 0.02²)`` (GPT-2), biases at 0, RMSNorm gains at 1.

    - ``cache``: None starts at position 0 with a new cache grown by concatenation; a grown
      cache is left as it was and a new one returned (a prompt's cache can be continued twice);
      a preallocated, rolling or paged cache (:mod:`course_utils.kv_cache`) is written in
      place and returned.
    - ``attention_mask``: ``(B, cache.length + L)``, bool or 0/1 integers, 1 = real token
      (Hugging Face's convention), covering the cached tokens and the new ones; pad the prompts
      of a batch on the left. No query sees a padding key; a padding query, which then sees no
      key at all, gets attention output 0 (its logits are meaningless but finite).
    - ``position_ids``: ``(B, L)`` int64, RoPE's position of each new token; by default
      ``cumsum(attention_mask) − 1`` (the count of real tokens before it), or the cache column
      ``cache.length + t`` without a mask. A left-padded prompt thus gets the positions, and the
      logits, it gets alone.
    """

    def __init__(self, config: LMConfig):
        super().__init__()
        if not isinstance(config, LMConfig):
            raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
        self.config = config
        # RoPE's frequencies (float64, a plain array: .to(dtype) must not round them)
        self._rope_omega = rope_frequencies(config.head_dim, config.rope_theta,
                                            config.rope_scaling).numpy()
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(DecoderBlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.eps)
        self.output = nn.Linear(config.d_model, config.vocab_size, bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        if config.tie_embeddings:
            self.output.weight = self.embed.weight

    def _check(self, value: object, cache: object, attention_mask: object = None,
               position_ids: object = None, name: str = "ids") -> Tensor | None:
        """Validate the inputs; return the attention mask as bool (or None)."""
        ids = check_tensor(value, name, dtype=torch.long, what="tensor of token ids")
        if ids.ndim != 2 or ids.shape[1] == 0:
            raise ValueError(f"{name} must have shape (B, L) with L >= 1, got {tuple(ids.shape)}")
        if ids.min() < 0 or ids.max() >= self.config.vocab_size:
            raise ValueError(f"{name} must lie in [0, vocab_size={self.config.vocab_size})")
        batch, n_new = ids.shape
        start = 0 if cache is None else self._check_cache(cache, batch, n_new)
        if start + n_new > self.config.max_len:
            raise ValueError(f"{start} cached + {n_new} new tokens exceed max_len="
                             f"{self.config.max_len}")
        if position_ids is not None:
            positions = check_tensor(position_ids, "position_ids", dtype=torch.long)
            if positions.shape != ids.shape or positions.min() < 0:
                raise ValueError(f"position_ids must be (B, L) = {tuple(ids.shape)} integers >= 0,"
                                 f" got shape {tuple(positions.shape)}")
        if attention_mask is None:
            return None
        mask = check_tensor(attention_mask, "attention_mask", dtype=None)
        if mask.dtype.is_floating_point or mask.is_complex():
            raise TypeError(f"attention_mask must hold bools or 0/1 integers, got {mask.dtype}")
        if mask.shape != (batch, start + n_new) or ((mask != 0) & (mask != 1)).any():
            raise ValueError(f"attention_mask must be (B, cached + new) = ({batch}, "
                             f"{start + n_new}) of 0/1, got shape {tuple(mask.shape)}")
        return mask.bool()

    def _check_cache(self, cache: object, batch: int, n_new: int) -> int:
        """Validate a cache against the model and the batch; return its length."""
        if not isinstance(cache, (KVCache, PagedKVCache)):
            raise TypeError(f"cache must be a KVCache, a PagedKVCache or None, got "
                            f"{type(cache).__name__}")
        c, weight = self.config, self.embed.weight
        if (cache.n_layers, cache.n_kv_heads, cache.head_dim) != (c.n_layers, c.n_kv_heads,
                                                                  c.head_dim):
            raise ValueError(f"cache holds {cache.n_layers} layers of {cache.n_kv_heads} heads of"
                             f" {cache.head_dim}, the model has {c.n_layers} of {c.n_kv_heads} of"
                             f" {c.head_dim}")
        if cache.dtype != weight.dtype:
            raise ValueError(f"cache holds {cache.dtype}, the model computes in {weight.dtype}")
        if cache.batch_size != batch:
            raise ValueError(f"cache holds a batch of {cache.batch_size} sequences, ids has "
                             f"{batch}")
        window = getattr(cache, "window", None)
        if window is not None and (c.sliding_window is None or window < c.sliding_window):
            raise ValueError(f"cache is a rolling buffer of {window} positions, the model looks "
                             f"back {c.sliding_window or 'at every'} positions")
        room = cache.room(0)
        if room is not None and n_new > room:
            raise ValueError(f"cache has room for {room} more positions, ids has {n_new}")
        return cache.length

    def forward(self, ids: Tensor, cache: Cache | None = None, *,
                attention_mask: Tensor | None = None,
                position_ids: Tensor | None = None) -> tuple[Tensor, Cache]:
        mask = self._check(ids, cache, attention_mask, position_ids)
        return self._forward(ids, cache, mask, position_ids)

    def _forward(self, ids: Tensor, cache: Cache | None, key_mask: Tensor | None,
                 position_ids: Tensor | None) -> tuple[Tensor, Cache]:
        """``forward`` on checked inputs (``key_mask`` bool or None)."""
        c, weight = self.config, self.embed.weight
        if cache is None:
            cache = KVCache(c.n_layers, ids.shape[0], c.n_kv_heads, c.head_dim,
                            dtype=weight.dtype, device=weight.device)
        elif isinstance(cache, KVCache) and cache.grows:
            cache = cache.branch()  # leaves the caller's cache as it was
        start, n_new = cache.length, ids.shape[1]
        columns = torch.arange(start, start + n_new, device=ids.device)
        if position_ids is not None:
            positions = position_ids
        elif key_mask is not None:  # count the real tokens before each one
            positions = (key_mask.long().cumsum(-1) - 1).clamp(min=0)[:, start:]
        else:
            positions = columns
        rope = _rope_tables(positions.detach().cpu().numpy(), self._rope_omega, 4, weight.dtype,
                            weight.device)  # once per forward pass, shared by every layer
        step = _Step(cache, columns, key_mask, rope)
        x = self.embed(ids)  # (B, L, d_model)
        for layer, block in enumerate(self.blocks):
            x = block(x, layer, step)
        return self.output(self.norm._forward(x)), cache


def _new_cache(model: DecoderLM, batch: int, n_positions: int) -> KVCache:
    """The cache ``generate`` makes: preallocated to ``n_positions``, or a rolling buffer of the
    model's sliding window."""
    c, weight = model.config, model.embed.weight
    room = {"window": c.sliding_window} if c.sliding_window else {"max_len": n_positions}
    return KVCache(c.n_layers, batch, c.n_kv_heads, c.head_dim, **room, dtype=weight.dtype,
                   device=weight.device)


@torch.no_grad()
def generate(
    model: DecoderLM,
    prompt_ids: Tensor,
    max_new_tokens: int,
    use_cache: bool = True,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    *,
    eos_token_id: int | None = None,
    attention_mask: Tensor | None = None,
    cache: Cache | None = None,
) -> Tensor:
    """Continue ``prompt_ids`` ``(B, L)`` by up to ``max_new_tokens`` tokens; returns
    ``(B, L + n)`` int64, the prompt first, ``n <= max_new_tokens``.

    Each step scores the next token from the last position's logits and appends it:
    ``temperature = 0`` takes the argmax (greedy; top-k and top-p cannot change it), otherwise
    :func:`course_utils.sampling.sample` draws with ``temperature``, ``top_k``, ``top_p`` and
    ``generator``. With ``use_cache`` the prompt is processed once and every later step feeds
    one token against the cache: ``cache`` if given (empty, of any kind in
    :mod:`course_utils.kv_cache`), else a :class:`~course_utils.kv_cache.KVCache` preallocated
    to ``L + max_new_tokens`` positions (a rolling one of the window for a model with
    ``sliding_window``), written in place. Without the cache every step runs the model on the
    whole sequence again. Both give the same tokens (up to rounding of the logits).

    ``eos_token_id``: a sequence that has produced it is finished, and every later position of
    it holds ``eos_token_id`` too; the loop stops when every sequence is finished, so ``n`` may
    be less than ``max_new_tokens``. ``attention_mask`` ``(B, L)`` (1 = real token): prompts of
    different lengths padded on the left, as :meth:`DecoderLM.forward` takes them.
    """
    if not isinstance(model, DecoderLM):
        raise TypeError(f"model must be a DecoderLM, got {type(model).__name__}")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", minimum=0)
    use_cache = check_bool(use_cache, "use_cache")
    temperature = check_real(temperature, "temperature", low=0)
    top_k, top_p = check_filters(top_k, top_p)
    check_generator(generator)
    if eos_token_id is not None:
        eos_token_id = check_int(eos_token_id, "eos_token_id", minimum=0,
                                 maximum=model.config.vocab_size - 1)
    mask = model._check(prompt_ids, None, attention_mask, None, "prompt_ids")
    batch, length = prompt_ids.shape
    if length + max_new_tokens > model.config.max_len:
        raise ValueError(f"the prompt ({length} tokens) plus max_new_tokens="
                         f"{max_new_tokens} exceeds max_len={model.config.max_len}")
    if cache is not None:
        if not use_cache:
            raise ValueError("cache was given with use_cache=False")
        model._check_cache(cache, batch, length + max_new_tokens - 1)
        if cache.length:
            raise ValueError(f"cache must be empty, it holds {cache.length} positions")
    elif use_cache:
        cache = _new_cache(model, batch, length + max_new_tokens)
    was_training = model.training
    model.eval()
    ids, finished = prompt_ids, torch.zeros(batch, dtype=torch.bool, device=prompt_ids.device)
    logits, cache = model._forward(ids, cache, mask, None)
    for step in range(max_new_tokens):
        last = logits[:, -1]  # (B, V)
        if temperature == 0:
            next_id = last.argmax(dim=-1)
        else:
            next_id = sample(last, temperature, top_k, top_p, generator)
        if eos_token_id is not None:  # a finished sequence repeats eos
            next_id = next_id.masked_fill(finished, eos_token_id)
            finished |= next_id == eos_token_id
        ids = torch.cat([ids, next_id[:, None]], dim=1)
        if mask is not None:
            mask = torch.cat([mask, mask.new_ones(batch, 1)], dim=1)
        if step + 1 == max_new_tokens or bool(finished.all()):
            break
        logits, cache = (model._forward(next_id[:, None], cache, mask, None) if use_cache
                         else model._forward(ids, None, mask, None))
    model.train(was_training)
    return ids


@dataclass(frozen=True)
class SpeculativeStats:
    """What one :func:`speculative_generate` call did: ``target_passes`` forwards of the target,
    ``draft_tokens`` tokens the draft proposed, ``accepted`` of them kept, and ``rejections``:
    the rounds that ended at a rejected proposal (the proposals after it go untested)."""

    target_passes: int
    draft_tokens: int
    accepted: int
    rejections: int

    @property
    def acceptance_rate(self) -> float:
        """The estimated acceptance rate α: ``accepted / (accepted + rejections)``, the share of
        the proposals the target tested that it kept (0 when none was tested). ``accepted /
        draft_tokens`` would be biased low: after a rejection the rest of the round is thrown
        away untested."""
        tested = self.accepted + self.rejections
        return self.accepted / tested if tested else 0.0

    @property
    def tokens_per_pass(self) -> float:
        """New tokens per target pass: each pass keeps its accepted proposals and adds one token
        of its own, so ``(accepted + target_passes) / target_passes`` (0 without a pass)."""
        passes = self.target_passes
        return (self.accepted + passes) / passes if passes else 0.0


def _pick(logits: Tensor, temperature: float, generator: torch.Generator | None) -> int:
    """The next token from one position's logits ``(V,)``: the argmax at ``temperature = 0``,
    else a draw from ``softmax(logits / temperature)``."""
    if temperature == 0:
        return int(logits.argmax())
    return int(sample(logits, temperature, generator=generator))


@torch.no_grad()
def speculative_generate(
    target: DecoderLM,
    draft: DecoderLM,
    prompt_ids: Tensor,
    max_new_tokens: int,
    *,
    gamma: int = 4,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, SpeculativeStats]:
    """Speculative decoding (Leviathan et al. 2023; Chen et al. 2023): a small ``draft`` model
    proposes tokens, the ``target`` checks them all in one forward pass, and the output follows
    the target's own distribution at ``temperature``.

    Each round: the draft proposes ``k = min(gamma, n_left − 1)`` tokens one at a time, drawn
    from its distribution ``q`` at ``temperature``; the target runs once on the sequence plus
    the proposals, which gives its distribution ``p`` at each of them and after the last; the
    proposals are accepted in order by :func:`course_utils.sampling.speculative_accept` up to
    the first rejection, whose resampled token ends the round, and when all ``k`` are accepted
    one more token is drawn from ``p`` after the last (the "bonus" token). So every target pass
    adds 1 to ``k + 1`` tokens. ``temperature = 0`` is greedy: a proposal (the draft's argmax)
    is accepted while it equals the target's argmax, and the output equals
    :func:`generate` ``(target, prompt_ids, max_new_tokens)`` token for token.

    No cache: every forward runs on the whole sequence (``model(ids)``, as ``generate`` does with
    ``use_cache=False``). ``target`` and ``draft`` share the vocabulary; ``prompt_ids`` int64
    ``(1, L)`` (one sequence); ``gamma`` an int >= 1; ``temperature`` >= 0; ``generator`` a
    ``torch.Generator`` or None (torch's global one). Returns the ``(1, L + max_new_tokens)``
    ids, prompt first, and a :class:`SpeculativeStats`.
    """
    for name, model in (("target", target), ("draft", draft)):
        if not isinstance(model, DecoderLM):
            raise TypeError(f"{name} must be a DecoderLM, got {type(model).__name__}")
    vocab = target.config.vocab_size
    if draft.config.vocab_size != vocab:
        raise ValueError(f"draft must share the target's vocabulary of {vocab} tokens, it has "
                         f"{draft.config.vocab_size}")
    target._check(prompt_ids, None, name="prompt_ids")
    ids = prompt_ids
    if ids.shape[0] != 1:
        raise ValueError(f"prompt_ids must have shape (1, L) (one sequence), got "
                         f"{tuple(ids.shape)}")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", minimum=0)
    gamma = check_int(gamma, "gamma")
    temperature = check_real(temperature, "temperature", low=0)
    check_generator(generator)
    total = ids.shape[1] + max_new_tokens
    for name, model in (("target", target), ("draft", draft)):
        if total > model.config.max_len:
            raise ValueError(f"the prompt ({ids.shape[1]} tokens) plus max_new_tokens="
                             f"{max_new_tokens} exceeds the {name}'s max_len="
                             f"{model.config.max_len}")
    modes = target.training, draft.training
    target.eval()
    draft.eval()
    passes = proposed = accepted = rejections = 0
    while ids.shape[1] < total:
        k, start = min(gamma, total - ids.shape[1] - 1), ids.shape[1]
        extended, q = ids, []
        for _ in range(k):  # the draft proposes k tokens, one forward each
            last = draft(extended)[0][0, -1]  # (V,)
            if temperature > 0:
                q.append(filter_probs(last, temperature))
            extended = torch.cat([extended, ids.new_tensor([[_pick(last, temperature,
                                                                  generator)]])], dim=1)
        logits = target(extended)[0][0, start - 1:]  # (k + 1, V): row j scores proposal j
        passes, proposed = passes + 1, proposed + k
        n_ok = 0
        for j in range(k):
            x = int(extended[0, start + j])
            y = (int(logits[j].argmax()) if temperature == 0 else
                 speculative_accept(filter_probs(logits[j], temperature), q[j], x, generator))
            if y != x:  # rejected: y, the target's token, ends the round
                rejections += 1
                break
            n_ok += 1
        else:  # all k accepted: the bonus token from the target after the last one
            y = _pick(logits[k], temperature, generator)
        accepted += n_ok
        ids = torch.cat([extended[:, : start + n_ok], ids.new_tensor([[y]])], dim=1)
    target.train(modes[0])
    draft.train(modes[1])
    return ids, SpeculativeStats(passes, proposed, accepted, rejections)
