"""Softmax (scaled dot-product) attention, masks, and multi-head attention (PyTorch).

Conventions used everywhere in the course:

* **Boolean masks, True = attend.** A mask entry ``mask[..., i, j]`` says whether query ``i``
  may look at key ``j``. (``torch.nn.functional.scaled_dot_product_attention`` uses the same
  meaning for a boolean ``attn_mask``; ``torch.nn.MultiheadAttention`` and
  ``nn.TransformerEncoderLayer`` use the *opposite*: True there means "masked out".) So that no
  parameter here shares a PyTorch name with the opposite meaning, :class:`MultiHeadAttention`
  takes ``key_mask`` (PyTorch: ``key_padding_mask``) and ``mask`` (PyTorch: ``attn_mask``).
* **Causal masks are aligned bottom-right**: with ``lq`` queries and ``lk`` keys, query ``i``
  sees keys ``j <= i + lk - lq`` — the last query sees every key, as when new queries are
  appended after ``lk - lq`` cached ones (``torch.nn.attention.bias.causal_lower_right``,
  FlashAttention). When ``lq == lk`` this is the usual lower triangle, equal to the top-left
  alignment of ``F.scaled_dot_product_attention(is_causal=True)``.
* **A fully masked query row gives weights 0 and output 0** (not NaN, and not the uniform
  average that the common ``masked_fill(mask == 0, -1e9)`` trick silently produces).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from course_utils.validation import (
    check_attention_inputs,
    check_bool,
    check_int,
    check_real,
    check_tensor,
)

__all__ = [
    "MultiHeadAttention",
    "causal_mask",
    "merge_heads",
    "token_mask",
    "softmax_attention",
    "split_heads",
]


def causal_mask(lq: int, lk: int, device: torch.device | str | None = None) -> Tensor:
    """Boolean causal mask of shape ``(lq, lk)``, True = attend, aligned bottom-right.

    ``mask[i, j] = j <= i + (lk - lq)``. For ``lq == lk`` it is the lower triangle including the
    diagonal. For ``lq > lk`` the first ``lq - lk`` query rows see no key at all (fully masked).
    """
    return _causal_mask(check_int(lq, "lq", minimum=0), check_int(lk, "lk", minimum=0), device)


def _causal_mask(lq: int, lk: int, device: torch.device | str | None) -> Tensor:
    return torch.ones(lq, lk, dtype=torch.bool, device=device).tril(diagonal=lk - lq)


def token_mask(lengths: Tensor | list[int], max_len: int | None = None) -> Tensor:
    """Boolean ``(B, max_len)`` mask, True = real token: ``mask[b, j] = j < lengths[b]``.

    ``max_len`` defaults to the longest length. Use it as ``key_mask`` of
    :class:`MultiHeadAttention` (True = attend); PyTorch's ``key_padding_mask`` is ``~`` of it.
    """
    if not isinstance(lengths, (Tensor, list, tuple)):
        raise TypeError(f"lengths must be a tensor or a list of ints, got {type(lengths).__name__}")
    lengths = torch.as_tensor(lengths)
    if lengths.ndim != 1 or lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
        raise TypeError(f"lengths must be a 1-D sequence of ints, got {lengths.dtype} "
                        f"of shape {tuple(lengths.shape)}")
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    max_len = longest if max_len is None else check_int(max_len, "max_len", minimum=0)
    if max_len < longest:
        raise ValueError(f"max_len={max_len} is shorter than the longest length {longest}")
    return torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]


def softmax_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    enable_gqa: bool = False,
) -> tuple[Tensor, Tensor]:
    """``Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V``, returning ``(output, weights)``.

    The course's dense attention (PyTorch's fused ``F.scaled_dot_product_attention`` computes the
    same output, returns no weights, and aligns ``is_causal`` top-left). Shapes: ``q``
    ``(..., Lq, d_k)``, ``k`` ``(..., Lk, d_k)``, ``v`` ``(..., Lk, d_v)`` (leading dimensions
    broadcast); ``output`` ``(..., Lq, d_v)``, ``weights`` ``(..., Lq, Lk)``.

    ``mask``: boolean, broadcastable to ``(..., Lq, Lk)``, True = attend. ``causal=True`` adds the
    bottom-right causal mask (:func:`causal_mask`); both may be given (they are combined with AND).
    Masked scores get weight exactly 0; a query row with no visible key gets weights 0 and
    output 0. ``scale`` replaces ``1/√d_k``; ``dropout_p`` drops weights (scaling the rest by
    ``1/(1-p)``) before they multiply ``v``, and the returned weights are those used.

    ``enable_gqa=True`` is grouped-query attention (as in PyTorch's function): ``q``
    ``(..., H_q, Lq, d_k)`` against ``k``, ``v`` ``(..., H_kv, Lk, d)`` with ``H_q`` a multiple
    of ``H_kv``; query head ``h`` reads key/value head ``h // (H_q / H_kv)``, so each K/V head
    serves a group of ``H_q / H_kv`` consecutive query heads (``H_kv = 1``: multi-query).
    ``output`` is ``(..., H_q, Lq, d_v)`` and ``weights`` ``(..., H_q, Lq, Lk)``.
    """
    lq, lk, _, scale = check_attention_inputs(q, k, v, scale, same_leading=False)
    causal = check_bool(causal, "causal")
    dropout_p = check_real(dropout_p, "dropout_p", low=0, high=1, high_open=True)
    if check_bool(enable_gqa, "enable_gqa"):
        k, v = _repeat_kv_heads(q, k, v)
    try:
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(f"leading dimensions of q {tuple(q.shape)}, k {tuple(k.shape)} and "
                         f"v {tuple(v.shape)} do not broadcast") from None
    scores_shape = (*batch, lq, lk)
    if mask is not None:
        check_tensor(mask, "mask", dtype=torch.bool, what="tensor (True = attend)")
        try:
            broadcast = torch.broadcast_shapes(mask.shape, scores_shape)
        except RuntimeError:
            broadcast = None
        if broadcast != torch.Size(scores_shape):
            raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to the "
                             f"scores shape (..., Lq, Lk) = {scores_shape}")
    return _attend(q, k, v, mask, causal, scale, dropout_p)


def _attend(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, causal: bool, scale: float,
            dropout_p: float) -> tuple[Tensor, Tensor]:
    """The formula of :func:`softmax_attention`, on inputs already checked."""
    if causal:
        causal_part = _causal_mask(q.shape[-2], k.shape[-2], q.device)
        mask = causal_part if mask is None else mask & causal_part
    scores = (q @ k.transpose(-2, -1)) * scale
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        # A softmax over the visible keys only: masked scores become -inf (exp -> 0); the row
        # maximum of a fully masked row is replaced by 0 so nothing becomes inf - inf = NaN,
        # and such a row's sum (0) is replaced by 1, so its weights stay 0.
        scores = scores.masked_fill(~mask, float("-inf"))
        row_max = scores.amax(dim=-1, keepdim=True)
        row_max = torch.where(torch.isneginf(row_max), torch.zeros_like(row_max), row_max)
        e = torch.exp(scores - row_max.detach())
        total = e.sum(dim=-1, keepdim=True)
        weights = e / torch.where(total > 0, total, torch.ones_like(total))
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights


def _repeat_kv_heads(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """``k``, ``v`` ``(..., H_kv, Lk, d)`` with each head repeated ``H_q / H_kv`` times in place
    (heads ``0, 0, 1, 1, …``), so head ``h`` of the result is K/V head ``h // (H_q / H_kv)``."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.ndim < 3:
            raise ValueError(f"enable_gqa needs {name} of shape (..., heads, L, d), got "
                             f"{tuple(t.shape)}")
    h_q, h_kv = q.shape[-3], k.shape[-3]
    if v.shape[-3] != h_kv:
        raise ValueError(f"k and v must have the same number of heads H_kv (dim -3), got "
                         f"{h_kv} and {v.shape[-3]}")
    if h_kv == 0 or h_q % h_kv:
        raise ValueError(f"grouped-query attention needs H_q a multiple of H_kv, got H_q={h_q} "
                         f"query heads and H_kv={h_kv} key/value heads")
    group = h_q // h_kv
    return k.repeat_interleave(group, dim=-3), v.repeat_interleave(group, dim=-3)


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """``(B, N, d_model) -> (B, h, N, d_k)`` with ``d_k = d_model / h``.

    Head ``i`` gets the feature slice ``[i·d_k, (i+1)·d_k)`` of every token.
    """
    x = check_tensor(x, "x", dtype=None)
    n_heads = check_int(n_heads, "n_heads")
    if x.ndim != 3:
        raise ValueError(f"x must have shape (B, N, d_model), got {tuple(x.shape)}")
    if x.shape[-1] % n_heads:
        raise ValueError(f"d_model={x.shape[-1]} is not divisible by n_heads={n_heads}")
    return _split_heads(x, n_heads)


def _split_heads(x: Tensor, n_heads: int) -> Tensor:
    b, n, d_model = x.shape
    return x.reshape(b, n, n_heads, d_model // n_heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """``(B, h, N, d_k) -> (B, N, h·d_k)``: the inverse of :func:`split_heads` (concatenation)."""
    x = check_tensor(x, "x", dtype=None)
    if x.ndim != 4:
        raise ValueError(f"x must have shape (B, h, N, d_k), got {tuple(x.shape)}")
    return _merge_heads(x)


def _merge_heads(x: Tensor) -> Tensor:
    b, h, n, d_k = x.shape
    return x.transpose(1, 2).reshape(b, n, h * d_k)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: ``concat(head_1, …, head_h) W^O`` with
    ``head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)`` and ``d_k = d_model / h``.

    The h per-head projections are stored as one ``nn.Linear(d_model, d_model)`` each for Q, K
    and V (head i owns output features ``[i·d_k, (i+1)·d_k)``), plus ``out_proj`` for ``W^O``:
    ``4·d_model² + 4·d_model`` parameters with bias. ``dropout`` drops attention weights in
    training mode (as ``nn.MultiheadAttention`` does).
    """

    def __init__(self, d_model: int, n_heads: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        d_model = check_int(d_model, "d_model")
        n_heads = check_int(n_heads, "n_heads")
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.dropout = check_real(dropout, "dropout", low=0, high=1, high_open=True)
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        *,
        key_mask: Tensor | None = None,
        mask: Tensor | None = None,
        causal: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """Attend from ``query`` ``(B, Lq, d_model)`` to ``key``/``value`` ``(B, Lk, d_model)``.

        Both masks are boolean with **True = attend**. ``key_mask``: ``(B, Lk)``, True = a real
        key (:func:`token_mask`); PyTorch's ``key_padding_mask`` is the opposite (True =
        padding), hence the different name. ``mask``: ``(Lq, Lk)``, ``(B, Lq, Lk)`` or
        ``(B, h, Lq, Lk)``, True = query i may attend to key j; ``nn.MultiheadAttention``'s
        boolean ``attn_mask`` is the opposite. ``causal`` adds the bottom-right causal mask.
        Returns ``out`` ``(B, Lq, d_model)`` and the per-head weights ``(B, h, Lq, Lk)``.
        The masks are keyword-only: a call ported positionally from ``nn.MultiheadAttention``
        (whose fourth argument is ``key_padding_mask``, True = padding) fails instead of
        attending to the padding.
        """
        causal = check_bool(causal, "causal")
        for name, t in (("query", query), ("key", key), ("value", value)):
            check_tensor(t, name)
            if t.ndim != 3 or t.shape[-1] != self.d_model:
                raise ValueError(f"{name} must have shape (B, L, d_model={self.d_model}), got "
                                 f"{tuple(t.shape)}")
        b, lq, lk = query.shape[0], query.shape[1], key.shape[1]
        if key.shape != value.shape:
            raise ValueError(f"key and value must have the same shape, got {tuple(key.shape)} "
                             f"and {tuple(value.shape)}")
        if key.shape[0] != b:
            raise ValueError(f"query and key must have the same batch size, got {b} and "
                             f"{key.shape[0]}")
        combined = None
        if key_mask is not None:
            check_tensor(key_mask, "key_mask", dtype=torch.bool, what="tensor (True = real key)")
            if key_mask.shape != (b, lk):
                raise ValueError(f"key_mask must have shape (B, Lk) = {(b, lk)}, got "
                                 f"{tuple(key_mask.shape)}")
            combined = key_mask[:, None, None, :]
        if mask is not None:
            check_tensor(mask, "mask", dtype=torch.bool, what="tensor (True = attend)")
            allowed = {2: (lq, lk), 3: (b, lq, lk), 4: (b, self.n_heads, lq, lk)}
            if allowed.get(mask.ndim) != tuple(mask.shape):
                raise ValueError(f"mask must have shape (Lq, Lk), (B, Lq, Lk) or "
                                 f"(B, h, Lq, Lk) = {allowed[2]}, {allowed[3]} or {allowed[4]}, "
                                 f"got {tuple(mask.shape)}")
            if mask.ndim == 3:
                mask = mask[:, None]
            combined = mask if combined is None else combined & mask
        return self._forward(query, key, value, combined, causal)

    def _forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None,
                 causal: bool) -> tuple[Tensor, Tensor]:
        """The formula on checked inputs; ``mask`` broadcasts to ``(B, h, Lq, Lk)`` (True =
        attend). The encoder and decoder layers call it with their checked padding masks."""
        q = _split_heads(self.q_proj(query), self.n_heads)
        k = _split_heads(self.k_proj(key), self.n_heads)
        v = _split_heads(self.v_proj(value), self.n_heads)
        dropout_p = self.dropout if self.training else 0.0
        z, weights = _attend(q, k, v, mask, causal, self.d_k**-0.5, dropout_p)
        return self.out_proj(_merge_heads(z)), weights

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """A copy of a batch-first ``nn.MultiheadAttention`` (same weights, dtype and device).

        PyTorch stores W^Q, W^K, W^V stacked in one ``in_proj_weight`` of shape
        ``(3·d_model, d_model)``; they are split into ``q_proj``, ``k_proj``, ``v_proj``.
        Remember to invert its masks: its ``key_padding_mask`` and boolean ``attn_mask`` mean
        True = "masked out"; pass ``~`` of them as ``key_mask`` and ``mask``.
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(f"module must be an nn.MultiheadAttention, got {type(module).__name__}")
        if not module.batch_first:
            raise ValueError("module must be built with batch_first=True")
        if not module._qkv_same_embed_dim or module.bias_k is not None or module.add_zero_attn:
            raise ValueError("module must use kdim = vdim = embed_dim, no add_bias_kv and no "
                             "add_zero_attn")
        bias = module.in_proj_bias is not None
        new = cls(module.embed_dim, module.num_heads, bias=bias, dropout=module.dropout)
        new = new.to(dtype=module.in_proj_weight.dtype, device=module.in_proj_weight.device)
        with torch.no_grad():
            w_q, w_k, w_v = module.in_proj_weight.chunk(3)
            for proj, w in ((new.q_proj, w_q), (new.k_proj, w_k), (new.v_proj, w_v)):
                proj.weight.copy_(w)
            new.out_proj.weight.copy_(module.out_proj.weight)
            if bias:
                b_q, b_k, b_v = module.in_proj_bias.chunk(3)
                for proj, b_ in ((new.q_proj, b_q), (new.k_proj, b_k), (new.v_proj, b_v)):
                    proj.bias.copy_(b_)
                new.out_proj.bias.copy_(module.out_proj.bias)
        new.train(module.training)
        return new
