"""A decoder-only language model as built today: RoPE, RMSNorm, grouped-query attention, SwiGLU,
tied embeddings, and a KV cache for generation.

The encoder–decoder of :class:`course_utils.layers.Transformer` without the encoder and without
cross-attention. Each block is pre-norm::

    x = x + Attention(RMSNorm(x))        causal self-attention, RoPE on q and k, H_kv <= H heads
    x = x + SwiGLU(RMSNorm(x))

then a final RMSNorm and the output projection, which shares its matrix with the token embedding
(``tie_embeddings``): ``logits = RMSNorm(x) E^T``. There is no position table: positions enter
only through the rotation of queries and keys (:func:`course_utils.positional.apply_rope`).

``forward(ids, cache)`` returns the logits and a :class:`KVCache` holding every layer's keys and
values so far; feeding it back with the next tokens continues the sequence without recomputing
the past, and gives the logits a full forward over all tokens would give. :func:`generate`
decodes greedily or samples (:mod:`course_utils.sampling`), with or without the cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from course_utils.attention import merge_heads, softmax_attention, split_heads
from course_utils.layers import FeedForward, RMSNorm
from course_utils.linalg import matmul_flops
from course_utils.positional import apply_rope
from course_utils.sampling import check_filters, sample
from course_utils.validation import check_bool, check_int, check_real, check_tensor

__all__ = [
    "DecoderLM",
    "KVCache",
    "LMConfig",
    "forward_flops",
    "generate",
    "kv_cache_bytes",
]

_INT_FIELDS = ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff", "max_len")


@dataclass(frozen=True, kw_only=True)
class LMConfig:
    """The hyper-parameters of a :class:`DecoderLM` (one place, as nanoGPT's ``GPTConfig``),
    every field passed by name.

    ``n_heads`` query heads of size ``head_dim = d_model / n_heads`` (even, for RoPE) share
    ``n_kv_heads`` key/value heads (``n_heads`` a multiple of it: equal is multi-head attention,
    1 is multi-query attention). ``d_ff`` is SwiGLU's hidden width, ``max_len`` the longest
    sequence the model accepts, ``rope_base`` RoPE's base, ``eps`` RMSNorm's epsilon.
    """

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    max_len: int
    rope_base: float = 10000.0
    eps: float = 1e-6
    tie_embeddings: bool = True

    def __post_init__(self) -> None:
        for name in _INT_FIELDS:  # NumPy scalars become Python numbers
            object.__setattr__(self, name, check_int(getattr(self, name), name))
        for name, low in (("rope_base", 1.0), ("eps", 0.0)):
            value = check_real(getattr(self, name), name, low=low, low_open=True)
            object.__setattr__(self, name, value)
        tie = check_bool(self.tie_embeddings, "tie_embeddings")
        object.__setattr__(self, "tie_embeddings", tie)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim = d_model / n_heads = {self.head_dim} must be even "
                             "(RoPE rotates pairs of features)")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads={self.n_heads} must be a multiple of "
                             f"n_kv_heads={self.n_kv_heads}")

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
    """
    if not isinstance(config, LMConfig):
        raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
    n, past = check_int(n_new, "n_new"), check_int(n_past, "n_past", minimum=0)
    c, d, kv = config, config.d_model, config.n_kv_heads * config.head_dim
    per_layer = (2 * matmul_flops(n, d, d) + 2 * matmul_flops(n, d, kv)
                 + 2 * c.n_heads * matmul_flops(n, c.head_dim, past + n)
                 + 3 * matmul_flops(n, d, c.d_ff))
    return c.n_layers * per_layer + matmul_flops(n, d, c.vocab_size)


@dataclass(frozen=True)
class KVCache:
    """The keys and values of every layer for the tokens seen so far.

    ``keys[l]`` and ``values[l]``: ``(B, H_kv, L, head_dim)``, keys already rotated by RoPE at
    their positions. ``model`` is the :class:`DecoderLM` that made it: another model, or another
    batch size, is refused. A cache is never changed in place; ``forward`` returns a new one.
    """

    keys: tuple[Tensor, ...]
    values: tuple[Tensor, ...]
    model: nn.Module = field(repr=False)

    @property
    def length(self) -> int:
        """The number of cached positions L (the position of the next token)."""
        return self.keys[0].shape[-2]

    @property
    def batch_size(self) -> int:
        return self.keys[0].shape[0]

    @property
    def nbytes(self) -> int:
        """The bytes the cached tensors hold (see :func:`kv_cache_bytes`)."""
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values))


class GroupedQueryAttention(nn.Module):
    """Causal self-attention with RoPE and ``n_kv_heads`` key/value heads, no biases.

    ``forward(x, positions, past)``: ``x`` ``(B, L, d_model)`` at ``positions`` ``(L,)``;
    ``past`` the cached ``(k, v)`` of this layer or None. Returns the output ``(B, L, d_model)``
    and the keys and values ``(B, H_kv, L_past + L, head_dim)`` including the new ones.
    """

    def __init__(self, config: LMConfig):
        super().__init__()
        self.config = config
        d, kv = config.d_model, config.n_kv_heads * config.head_dim
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv, bias=False)
        self.v_proj = nn.Linear(d, kv, bias=False)
        self.out_proj = nn.Linear(d, d, bias=False)

    def forward(self, x: Tensor, positions: Tensor,
                past: tuple[Tensor, Tensor] | None) -> tuple[Tensor, Tensor, Tensor]:
        c = self.config
        q = apply_rope(split_heads(self.q_proj(x), c.n_heads), positions, c.rope_base)
        k = apply_rope(split_heads(self.k_proj(x), c.n_kv_heads), positions, c.rope_base)
        v = split_heads(self.v_proj(x), c.n_kv_heads)  # q (B, H, L, d_h); k, v (B, H_kv, L, d_h)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=-2), torch.cat([past[1], v], dim=-2)
        # bottom-right causal mask: the L new queries come after the L_past cached keys
        z, _ = softmax_attention(q, k, v, causal=True, enable_gqa=True)
        return self.out_proj(merge_heads(z)), k, v


class DecoderBlock(nn.Module):
    """``x = x + Attention(RMSNorm(x)); x = x + SwiGLU(RMSNorm(x))`` (pre-norm)."""

    def __init__(self, config: LMConfig):
        super().__init__()
        self.norm1 = RMSNorm(config.d_model, config.eps)
        self.attn = GroupedQueryAttention(config)
        self.norm2 = RMSNorm(config.d_model, config.eps)
        self.feed_forward = FeedForward(config.d_model, config.d_ff, activation="swiglu")

    def forward(self, x: Tensor, positions: Tensor,
                past: tuple[Tensor, Tensor] | None) -> tuple[Tensor, Tensor, Tensor]:
        out, k, v = self.attn(self.norm1(x), positions, past)
        x = x + out
        return x + self.feed_forward(self.norm2(x)), k, v


class DecoderLM(nn.Module):
    """A decoder-only Transformer language model (see the module docstring).

    ``forward(ids, cache=None)``: ``ids`` int64 ``(B, L)`` continuing the ``cache.length``
    tokens of ``cache`` (or starting at position 0) → ``(logits (B, L, V), new cache)``;
    ``logits[:, t]`` scores the token that follows ``ids[:, t]``. Weights start as
    ``N(0, 0.02²)`` (GPT-2), biases at 0, RMSNorm gains at 1.
    """

    def __init__(self, config: LMConfig):
        super().__init__()
        if not isinstance(config, LMConfig):
            raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
        self.config = config
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

    def _check(self, value: object, cache: object, name: str = "ids") -> int:
        """Validate the inputs; return the position of the first new token."""
        ids = check_tensor(value, name, dtype=torch.long, what="tensor of token ids")
        if ids.ndim != 2 or ids.shape[1] == 0:
            raise ValueError(f"{name} must have shape (B, L) with L >= 1, got {tuple(ids.shape)}")
        if ids.min() < 0 or ids.max() >= self.config.vocab_size:
            raise ValueError(f"{name} must lie in [0, vocab_size={self.config.vocab_size})")
        start = 0
        if cache is not None:
            if not isinstance(cache, KVCache):
                raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
            if cache.model is not self:
                raise ValueError("cache was made by a different model: its keys and values "
                                 "belong to that model's weights")
            if cache.batch_size != ids.shape[0]:
                raise ValueError(f"cache holds a batch of {cache.batch_size} sequences, ids has "
                                 f"{ids.shape[0]}")
            start = cache.length
        if start + ids.shape[1] > self.config.max_len:
            raise ValueError(f"{start} cached + {ids.shape[1]} new tokens exceed max_len="
                             f"{self.config.max_len}")
        return start

    def forward(self, ids: Tensor, cache: KVCache | None = None) -> tuple[Tensor, KVCache]:
        return self._forward(ids, cache, self._check(ids, cache))

    def _forward(self, ids: Tensor, cache: KVCache | None, start: int) -> tuple[Tensor, KVCache]:
        """``forward`` on checked inputs, the new tokens starting at position ``start``."""
        positions = torch.arange(start, start + ids.shape[1])
        x = self.embed(ids)  # (B, L, d_model)
        keys, values = [], []
        for i, block in enumerate(self.blocks):
            past = None if cache is None else (cache.keys[i], cache.values[i])
            x, k, v = block(x, positions, past)
            keys.append(k)
            values.append(v)
        return self.output(self.norm(x)), KVCache(tuple(keys), tuple(values), self)


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
) -> Tensor:
    """Continue ``prompt_ids`` ``(B, L)`` by ``max_new_tokens`` tokens; returns
    ``(B, L + max_new_tokens)`` int64, the prompt first.

    Each step scores the next token from the last position's logits and appends it:
    ``temperature = 0`` takes the argmax (greedy; top-k and top-p cannot change it), otherwise
    :func:`course_utils.sampling.sample` draws with ``temperature``, ``top_k``, ``top_p`` and
    ``generator``. With ``use_cache`` the prompt is processed once and every later step feeds
    one token against the :class:`KVCache`; without it every step runs the model on the whole
    sequence again. Both give the same tokens (up to rounding of the logits).
    """
    if not isinstance(model, DecoderLM):
        raise TypeError(f"model must be a DecoderLM, got {type(model).__name__}")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", minimum=0)
    use_cache = check_bool(use_cache, "use_cache")
    temperature = check_real(temperature, "temperature", low=0)
    top_k, top_p = check_filters(top_k, top_p)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got "
                        f"{type(generator).__name__}")
    model._check(prompt_ids, None, "prompt_ids")
    if prompt_ids.shape[1] + max_new_tokens > model.config.max_len:
        raise ValueError(f"the prompt ({prompt_ids.shape[1]} tokens) plus max_new_tokens="
                         f"{max_new_tokens} exceeds max_len={model.config.max_len}")
    was_training = model.training
    model.eval()
    ids = prompt_ids
    logits, cache = model._forward(ids, None, 0)
    for step in range(max_new_tokens):
        last = logits[:, -1]  # (B, V)
        if temperature == 0:
            next_id = last.argmax(dim=-1)
        else:
            next_id = sample(last, temperature, top_k, top_p, generator)
        ids = torch.cat([ids, next_id[:, None]], dim=1)
        if step + 1 < max_new_tokens:
            logits, cache = (model._forward(next_id[:, None], cache, cache.length) if use_cache
                             else model._forward(ids, None, 0))
    model.train(was_training)
    return ids
