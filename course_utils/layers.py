"""The Transformer's building blocks besides attention and normalization: feed-forward, encoder
and decoder layers, their stacks and the encoder–decoder model (the LayerNorm they use is
:class:`course_utils.norms.LayerNorm`).

Every class is an ``nn.Module`` whose ``from_torch`` (where there is a PyTorch counterpart)
copies PyTorch's weights, so the notebooks can check equal outputs. Padding masks are boolean
with True = real token, i.e. True = attend (PyTorch's ``src_key_padding_mask`` uses True =
padding); their names (``token_mask``, ``src_token_mask``, ...) are none of PyTorch's.

The hyper-parameters of the encoder and decoder blocks and of the whole model live in one
:class:`TransformerConfig` (as nanoGPT's ``GPTConfig``): ``EncoderLayer(config)``,
``Encoder(config)``, ``Transformer(config)``, so a swapped pair of numbers cannot pass unnoticed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from course_utils.attention import MultiHeadAttention
from course_utils.norms import LayerNorm
from course_utils.positional import sinusoidal_encoding
from course_utils.validation import (
    check_bool,
    check_choice,
    check_int,
    check_last_dim,
    check_real,
    check_tensor,
    check_torch_module,
)

__all__ = [
    "Decoder",
    "DecoderLayer",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "Transformer",
    "TransformerConfig",
    "count_parameters",
    "transformer_parameter_count",
]

_ACTIVATIONS = ("relu", "gelu", "swiglu")
_INT_FIELDS = ("d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers", "max_len")


@dataclass(frozen=True, kw_only=True)
class TransformerConfig:
    """The hyper-parameters of the encoder–decoder blocks and model (one place, as nanoGPT's
    ``GPTConfig``); the defaults are the base model of "Attention Is All You Need". Every field
    is passed by name (``TransformerConfig(d_model=32, n_heads=4, d_ff=64)``), so two numbers
    cannot be swapped by position.

    Every block reads what it needs: a layer (:class:`EncoderLayer`, :class:`DecoderLayer`)
    ``d_model``, ``n_heads`` (dividing ``d_model``), ``d_ff``, ``dropout``, ``activation``
    (``"relu"``, ``"gelu"`` or ``"swiglu"``), ``norm_first`` (pre-LN) and ``eps`` (LayerNorm's
    epsilon); a stack (:class:`Encoder`, :class:`Decoder`) also ``n_encoder_layers`` or
    ``n_decoder_layers`` and ``final_norm`` (a LayerNorm after the last layer; None: only for
    pre-LN); :class:`Transformer` also ``src_vocab_size`` and ``tgt_vocab_size`` (None for a
    config that builds only blocks), ``tie_embeddings`` (one matrix for both embeddings and the
    output projection: then the two vocabularies are equal) and ``max_len`` (the longest
    sequence, the size of the positional table).
    """

    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    dropout: float = 0.1
    activation: str = "relu"
    norm_first: bool = False
    eps: float = 1e-5
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    final_norm: bool | None = None
    src_vocab_size: int | None = None
    tgt_vocab_size: int | None = None
    tie_embeddings: bool = False
    max_len: int = 512

    def __post_init__(self) -> None:
        def normalize(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        for name in _INT_FIELDS:  # NumPy scalars become Python numbers
            normalize(name, check_int(getattr(self, name), name))
        for name in ("src_vocab_size", "tgt_vocab_size"):
            if getattr(self, name) is not None:
                normalize(name, check_int(getattr(self, name), name))
        normalize("dropout", check_real(self.dropout, "dropout", low=0, high=1, high_open=True))
        normalize("eps", check_real(self.eps, "eps", low=0, low_open=True))
        normalize("activation", check_choice(self.activation, "activation", _ACTIVATIONS))
        for name in ("norm_first", "tie_embeddings"):
            normalize(name, check_bool(getattr(self, name), name))
        if self.final_norm is not None:
            normalize("final_norm", check_bool(self.final_norm, "final_norm"))
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.tie_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError("tie_embeddings needs one vocabulary: src_vocab_size="
                             f"{self.src_vocab_size} differs from tgt_vocab_size="
                             f"{self.tgt_vocab_size}")


def _check_config(config: object) -> TransformerConfig:
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
    return config


def _config_from_torch(module: Any, activation: str) -> TransformerConfig:
    """The layer fields of a PyTorch encoder or decoder layer (``_check_torch_layer`` first)."""
    return TransformerConfig(
        d_model=module.self_attn.embed_dim, n_heads=module.self_attn.num_heads,
        d_ff=module.linear1.out_features, dropout=module.dropout.p, activation=activation,
        norm_first=module.norm_first, eps=module.norm1.eps,
    )


class FeedForward(nn.Module):
    """The position-wise feed-forward network, applied to each token independently.

    * ``"relu"`` (the paper): ``FFN(x) = max(0, x W₁ + b₁) W₂ + b₂``
    * ``"gelu"``: ``GELU(x W₁ + b₁) W₂ + b₂`` with the exact ``GELU(z) = z · Φ(z)``
    * ``"swiglu"``: ``(SiLU(x W_g + b_g) ⊙ (x W₁ + b₁)) W₂ + b₂`` with ``SiLU(z) = z · σ(z)``;
      the gate ``W_g`` (``gate``) adds a third ``d_model × d_ff`` matrix.

    Shapes: ``(..., d_model) -> (..., d_model)``; W₁ is ``linear1`` (d_model → d_ff), W₂ is
    ``linear2`` (d_ff → d_model). ``dropout`` acts on the hidden activations in training mode,
    as in ``nn.TransformerEncoderLayer``; ``bias=False`` drops every ``b`` (Llama's MLP).
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", dropout: float = 0.0,
                 *, bias: bool = True):
        super().__init__()
        self.d_model = d_model = check_int(d_model, "d_model")
        self.d_ff = d_ff = check_int(d_ff, "d_ff")
        self.activation = check_choice(activation, "activation", _ACTIVATIONS)
        bias = check_bool(bias, "bias")
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.gate: nn.Linear | None = (nn.Linear(d_model, d_ff, bias=bias)
                                       if activation == "swiglu" else None)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(check_real(dropout, "dropout", low=0, high=1, high_open=True))

    def forward(self, x: Tensor) -> Tensor:
        return self._forward(check_last_dim(x, self.d_model))

    def _forward(self, x: Tensor) -> Tensor:
        """The formula on a checked ``x`` (the layers that hold this block call it)."""
        if self.activation == "relu":
            hidden = F.relu(self.linear1(x))
        elif self.activation == "gelu":
            hidden = F.gelu(self.linear1(x))
        else:
            assert self.gate is not None  # built for "swiglu"
            hidden = F.silu(self.gate(x)) * self.linear1(x)
        return self.linear2(self.dropout(hidden))


def _check_token_mask(value: object, shape: tuple[int, ...], name: str) -> Tensor | None:
    if value is None:
        return None
    mask = check_tensor(value, name, dtype=torch.bool, what="tensor (True = real token)")
    if tuple(mask.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(mask.shape)}")
    return mask


def _keys(token_mask: Tensor | None) -> Tensor | None:
    """A checked ``(B, L_k)`` padding mask as the attention core's mask ``(B, 1, 1, L_k)``."""
    return None if token_mask is None else token_mask[:, None, None, :]


def _check_sequence(value: object, d_model: int, name: str) -> Tensor:
    x = check_tensor(value, name)
    if x.ndim != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{name} must be a tensor of shape (B, L, d_model={d_model}), got "
                         f"{tuple(x.shape)}")
    return x


def _check_encoder_inputs(x: object, token_mask: object, d_model: int,
                          names: tuple[str, str] = ("x", "token_mask")
                          ) -> tuple[Tensor, Tensor | None]:
    x = _check_sequence(x, d_model, names[0])
    return x, _check_token_mask(token_mask, x.shape[:2], names[1])


def _check_decoder_inputs(x: object, memory: object, tgt_token_mask: object,
                          memory_token_mask: object, d_model: int, x_name: str = "x"
                          ) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
    x = _check_sequence(x, d_model, x_name)
    memory = _check_sequence(memory, d_model, "memory")
    if memory.shape[0] != x.shape[0]:
        raise ValueError(f"{x_name} and memory must have the same batch size, got {x.shape[0]} "
                         f"and {memory.shape[0]}")
    tgt_token_mask = _check_token_mask(tgt_token_mask, x.shape[:2], "tgt_token_mask")
    names = "memory_token_mask" if x_name == "x" else "src_token_mask"
    memory_token_mask = _check_token_mask(memory_token_mask, memory.shape[:2], names)
    return x, memory, tgt_token_mask, memory_token_mask


def _copy_feed_forward(feed_forward: FeedForward, module: Any) -> None:
    """Copy a PyTorch layer's ``linear1`` and ``linear2`` (weights and biases) into ours."""
    with torch.no_grad():
        for mine, theirs in ((feed_forward.linear1, module.linear1),
                             (feed_forward.linear2, module.linear2)):
            mine.weight.copy_(theirs.weight)
            mine.bias.copy_(theirs.bias)


def _check_torch_layer(module: Any, torch_type: type[nn.Module]) -> str:
    """What ``from_torch`` can copy: a batch-first ``torch_type`` with biases and an exact ReLU or
    GELU activation (function or module). Returns the activation's name."""
    module = check_torch_module(module, torch_type)
    if not module.self_attn.batch_first:
        raise ValueError("module must be built with batch_first=True")
    act = module.activation
    if act is F.relu or isinstance(act, nn.ReLU):
        activation = "relu"
    elif act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
        activation = "gelu"
    else:
        raise ValueError("module's activation must be ReLU or GELU (F.relu / F.gelu)")
    if module.linear1.bias is None:
        raise ValueError("module must be built with bias=True")
    return activation


class EncoderLayer(nn.Module):
    """One Transformer encoder layer: self-attention and feed-forward, each with a residual.

    Post-LN (the paper, ``norm_first=False``)::

        x = LN₁(x + Dropout(MHA(x, x, x)));  x = LN₂(x + Dropout(FFN(x)))

    Pre-LN (``norm_first=True``)::

        x = x + Dropout(MHA(LN₁(x)));        x = x + Dropout(FFN(LN₂(x)))

    ``forward(x, token_mask)``: ``x`` ``(B, N, d_model)``; ``token_mask`` boolean ``(B, N)``,
    True = real token (padding keys get no attention; padded positions still get an output,
    which later layers ignore). Dropout (attention weights, FFN hidden, both residual branches)
    is active only in training mode. ``config``: a :class:`TransformerConfig` (its layer fields
    ``d_model``, ``n_heads``, ``d_ff``, ``dropout``, ``activation``, ``norm_first``, ``eps``).
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = _check_config(config)
        self.norm_first = c.norm_first
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, dropout=c.dropout)
        self.feed_forward = FeedForward(c.d_model, c.d_ff, c.activation, c.dropout)
        self.norm1 = LayerNorm(c.d_model, c.eps)
        self.norm2 = LayerNorm(c.d_model, c.eps)
        self.dropout1 = nn.Dropout(c.dropout)
        self.dropout2 = nn.Dropout(c.dropout)

    def _self_block(self, x: Tensor, token_mask: Tensor | None) -> Tensor:
        return self.dropout1(self.self_attn._forward(x, x, x, _keys(token_mask), False)[0])

    def forward(self, x: Tensor, token_mask: Tensor | None = None) -> Tensor:
        return self._forward(*_check_encoder_inputs(x, token_mask, self.norm1.d_model))

    def _forward(self, x: Tensor, token_mask: Tensor | None) -> Tensor:
        norm1, norm2 = self.norm1._forward, self.norm2._forward
        feed_forward = self.feed_forward._forward
        if self.norm_first:
            x = x + self._self_block(norm1(x), token_mask)
            return x + self.dropout2(feed_forward(norm2(x)))
        x = norm1(x + self._self_block(x, token_mask))
        return norm2(x + self.dropout2(feed_forward(x)))

    @classmethod
    def from_torch(cls, module: nn.TransformerEncoderLayer) -> EncoderLayer:
        """A copy of a batch-first ``nn.TransformerEncoderLayer`` (ReLU or GELU, with biases).

        Its ``src_key_padding_mask`` means True = padding; pass ``~mask`` to this layer.
        """
        activation = _check_torch_layer(module, nn.TransformerEncoderLayer)
        new = cls(_config_from_torch(module, activation)).to(module.linear1.weight)
        new.self_attn = MultiHeadAttention.from_torch(module.self_attn)
        new.norm1 = LayerNorm.from_torch(module.norm1)
        new.norm2 = LayerNorm.from_torch(module.norm2)
        _copy_feed_forward(new.feed_forward, module)
        new.train(module.training)
        return new


# --- The decoder side and the full encoder–decoder model ------------------------------------


class DecoderLayer(nn.Module):
    """One Transformer decoder layer: masked self-attention, cross-attention, feed-forward.

    Post-LN (the paper, ``norm_first=False``), with ``m`` the encoder output ("memory")::

        x = LN₁(x + Dropout(MHA_self(x, x, x, causal)))
        x = LN₂(x + Dropout(MHA_cross(x, m, m)))       # Q from the decoder, K and V from m
        x = LN₃(x + Dropout(FFN(x)))

    Pre-LN (``norm_first=True``) normalizes the input of each sublayer instead:
    ``x = x + Dropout(sublayer(LN(x)))``.

    ``forward(x, memory, tgt_token_mask, memory_token_mask, causal=True)``: ``x``
    ``(B, T, d_model)``, ``memory`` ``(B, S, d_model)`` (S may differ from T), padding masks
    ``(B, T)`` and ``(B, S)`` boolean with True = real token. ``causal`` (default on) lets
    position t see target positions ≤ t only. After each call the per-head attention weights
    are kept (detached) in ``self_attention_weights`` ``(B, h, T, T)`` and
    ``cross_attention_weights`` ``(B, h, T, S)`` for plotting. ``config``: a
    :class:`TransformerConfig` (its layer fields, as for :class:`EncoderLayer`).
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = _check_config(config)
        self.norm_first = c.norm_first
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, dropout=c.dropout)
        self.cross_attn = MultiHeadAttention(c.d_model, c.n_heads, dropout=c.dropout)
        self.feed_forward = FeedForward(c.d_model, c.d_ff, c.activation, c.dropout)
        self.norm1 = LayerNorm(c.d_model, c.eps)
        self.norm2 = LayerNorm(c.d_model, c.eps)
        self.norm3 = LayerNorm(c.d_model, c.eps)
        self.dropout1 = nn.Dropout(c.dropout)
        self.dropout2 = nn.Dropout(c.dropout)
        self.dropout3 = nn.Dropout(c.dropout)
        self.self_attention_weights: Tensor | None = None
        self.cross_attention_weights: Tensor | None = None

    def _self_block(self, x: Tensor, token_mask: Tensor | None, causal: bool) -> Tensor:
        out, weights = self.self_attn._forward(x, x, x, _keys(token_mask), causal)
        self.self_attention_weights = weights.detach()
        return self.dropout1(out)

    def _cross_block(self, x: Tensor, memory: Tensor,
                     memory_token_mask: Tensor | None) -> Tensor:
        out, weights = self.cross_attn._forward(x, memory, memory, _keys(memory_token_mask),
                                                False)
        self.cross_attention_weights = weights.detach()
        return self.dropout2(out)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        tgt_token_mask: Tensor | None = None,
        memory_token_mask: Tensor | None = None,
        causal: bool = True,
    ) -> Tensor:
        checked = _check_decoder_inputs(x, memory, tgt_token_mask, memory_token_mask,
                                        self.norm1.d_model)
        return self._forward(*checked, check_bool(causal, "causal"))

    def _forward(self, x: Tensor, memory: Tensor, tgt_token_mask: Tensor | None,
                 memory_token_mask: Tensor | None, causal: bool) -> Tensor:
        norm1, norm2, norm3 = self.norm1._forward, self.norm2._forward, self.norm3._forward
        feed_forward = self.feed_forward._forward
        if self.norm_first:
            x = x + self._self_block(norm1(x), tgt_token_mask, causal)
            x = x + self._cross_block(norm2(x), memory, memory_token_mask)
            return x + self.dropout3(feed_forward(norm3(x)))
        x = norm1(x + self._self_block(x, tgt_token_mask, causal))
        x = norm2(x + self._cross_block(x, memory, memory_token_mask))
        return norm3(x + self.dropout3(feed_forward(x)))

    @classmethod
    def from_torch(cls, module: nn.TransformerDecoderLayer) -> DecoderLayer:
        """A copy of a batch-first ``nn.TransformerDecoderLayer`` (ReLU or GELU, with biases).

        PyTorch's masks mean True = *masked out*: its ``tgt_key_padding_mask`` and
        ``memory_key_padding_mask`` are ``~`` of this layer's, and its causal ``tgt_mask`` is
        ``nn.Transformer.generate_square_subsequent_mask(T)`` (−inf above the diagonal).
        """
        activation = _check_torch_layer(module, nn.TransformerDecoderLayer)
        new = cls(_config_from_torch(module, activation)).to(module.linear1.weight)
        new.self_attn = MultiHeadAttention.from_torch(module.self_attn)
        new.cross_attn = MultiHeadAttention.from_torch(module.multihead_attn)
        new.norm1 = LayerNorm.from_torch(module.norm1)
        new.norm2 = LayerNorm.from_torch(module.norm2)
        new.norm3 = LayerNorm.from_torch(module.norm3)
        _copy_feed_forward(new.feed_forward, module)
        new.train(module.training)
        return new


class _LayerStack(nn.Module):
    """``config.<n_layers_field>`` copies of ``layer_type``, then a final :class:`LayerNorm` when
    ``config.final_norm`` (None, the default: only for pre-LN, whose last residual sum is
    otherwise never normalized)."""

    layer_type: Any  # EncoderLayer or DecoderLayer
    torch_type: type[nn.Module]
    n_layers_field: str  # "n_encoder_layers" or "n_decoder_layers"

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = _check_config(config)
        n_layers = getattr(c, self.n_layers_field)
        self.layers = nn.ModuleList(self.layer_type(c) for _ in range(n_layers))
        final_norm = c.norm_first if c.final_norm is None else c.final_norm
        self.norm = LayerNorm(c.d_model, c.eps) if final_norm else None

    @classmethod
    def from_torch(cls, module: Any) -> _LayerStack:
        """A copy of the PyTorch stack (its layers and its optional final ``norm``)."""
        module = check_torch_module(module, cls.torch_type)
        layers = [cls.layer_type.from_torch(layer) for layer in module.layers]
        first = layers[0]
        config = replace(first.config, **{cls.n_layers_field: len(layers)},
                         final_norm=module.norm is not None)
        new = cls(config)
        new.layers = nn.ModuleList(layers)
        if module.norm is not None:
            new.norm = LayerNorm.from_torch(module.norm)
        return new.to(first.norm1.weight).train(module.training)


class Encoder(_LayerStack):
    """A stack of ``config.n_encoder_layers`` :class:`EncoderLayer` s (see :class:`_LayerStack`);
    ``from_torch`` copies an ``nn.TransformerEncoder``.
    ``forward(x, token_mask)``: ``(B, S, d_model) -> (B, S, d_model)``."""

    layer_type = EncoderLayer
    torch_type = nn.TransformerEncoder
    n_layers_field = "n_encoder_layers"

    def forward(self, x: Tensor, token_mask: Tensor | None = None) -> Tensor:
        return self._forward(*_check_encoder_inputs(x, token_mask, self.config.d_model))

    def _forward(self, x: Tensor, token_mask: Tensor | None) -> Tensor:
        for layer in cast(list[EncoderLayer], self.layers):
            x = layer._forward(x, token_mask)
        return x if self.norm is None else self.norm._forward(x)


class Decoder(_LayerStack):
    """A stack of ``config.n_decoder_layers`` causal :class:`DecoderLayer` s (see
    :class:`_LayerStack`); ``from_torch`` copies an ``nn.TransformerDecoder``.
    ``forward(x, memory, tgt_token_mask, memory_token_mask)``: ``(B, T, d_model)`` and
    ``(B, S, d_model) -> (B, T, d_model)``."""

    layer_type = DecoderLayer
    torch_type = nn.TransformerDecoder
    n_layers_field = "n_decoder_layers"

    def forward(self, x: Tensor, memory: Tensor, tgt_token_mask: Tensor | None = None,
                memory_token_mask: Tensor | None = None) -> Tensor:
        return self._forward(*_check_decoder_inputs(x, memory, tgt_token_mask,
                                                    memory_token_mask, self.config.d_model))

    def _forward(self, x: Tensor, memory: Tensor, tgt_token_mask: Tensor | None,
                 memory_token_mask: Tensor | None) -> Tensor:
        for layer in cast(list[DecoderLayer], self.layers):
            x = layer._forward(x, memory, tgt_token_mask, memory_token_mask, True)
        return x if self.norm is None else self.norm._forward(x)


class Transformer(nn.Module):
    """The encoder–decoder Transformer of "Attention Is All You Need".

    ``src`` (B, S) ids → embedding · √d_model + sinusoidal PE → dropout → :class:`Encoder` →
    memory (B, S, d). ``tgt`` (B, T) ids → the same embedding recipe → :class:`Decoder` (masked
    self-attention, cross-attention to the memory) → linear output projection → logits
    (B, T, V_tgt). The output projection has no bias. ``tie_embeddings=True`` uses one matrix
    (V, d) for the source embedding, the target embedding and the output projection, as the
    paper does with its shared vocabulary (then ``src_vocab_size == tgt_vocab_size``).
    Padding masks are (B, L) boolean, True = real token. Matrices start Xavier-uniform.
    ``config``: a :class:`TransformerConfig` with ``src_vocab_size`` and ``tgt_vocab_size`` set;
    ``TransformerConfig(src_vocab_size=V, tgt_vocab_size=V)`` is the paper's base model.
    """

    positional_encoding: Tensor  # a buffer (max_len, d_model)

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = _check_config(config)
        if c.src_vocab_size is None or c.tgt_vocab_size is None:
            raise ValueError("a Transformer needs config.src_vocab_size and "
                             "config.tgt_vocab_size")
        self.d_model = d_model = c.d_model
        self.tie_embeddings = c.tie_embeddings
        self.src_embed = nn.Embedding(c.src_vocab_size, d_model)
        self.tgt_embed = self.src_embed if c.tie_embeddings else nn.Embedding(c.tgt_vocab_size,
                                                                                d_model)
        self.encoder = Encoder(c)
        self.decoder = Decoder(c)
        self.output = nn.Linear(d_model, c.tgt_vocab_size, bias=False)
        self.dropout = nn.Dropout(c.dropout)
        pe = torch.as_tensor(sinusoidal_encoding(c.max_len, d_model),
                             dtype=torch.get_default_dtype())
        self.register_buffer("positional_encoding", pe, persistent=False)
        for p in self.parameters():
            if p.ndim > 1:
                nn.init.xavier_uniform_(p)
        if c.tie_embeddings:
            self.output.weight = self.tgt_embed.weight

    def _embed(self, ids: Tensor, table: nn.Embedding, name: str) -> Tensor:
        if check_tensor(ids, name, dtype=torch.long, what="tensor of token ids").ndim != 2:
            raise ValueError(f"{name} must have shape (B, L), got {tuple(ids.shape)}")
        if ids.numel() and (ids.min() < 0 or ids.max() >= table.num_embeddings):
            raise ValueError(f"{name} holds ids outside [0, {table.num_embeddings})")
        if ids.shape[1] > self.positional_encoding.shape[0]:
            raise ValueError(f"{name} is {ids.shape[1]} tokens long, longer than max_len="
                             f"{self.positional_encoding.shape[0]}")
        x = table(ids) * self.d_model**0.5 + self.positional_encoding[: ids.shape[1]]
        return self.dropout(x)

    def encode(self, src: Tensor, src_token_mask: Tensor | None = None) -> Tensor:
        """Source ids (B, S) → memory (B, S, d_model)."""
        x = self._embed(src, self.src_embed, "src")
        mask = _check_token_mask(src_token_mask, x.shape[:2], "src_token_mask")
        return self.encoder._forward(x, mask)

    def decode(self, tgt: Tensor, memory: Tensor, src_token_mask: Tensor | None = None,
               tgt_token_mask: Tensor | None = None) -> Tensor:
        """Target ids (B, T) read so far, and the memory → logits (B, T, V_tgt) for the next
        token at every position (causal: position t sees target tokens ≤ t)."""
        checked = _check_decoder_inputs(self._embed(tgt, self.tgt_embed, "tgt"), memory,
                                        tgt_token_mask, src_token_mask, self.d_model, "tgt")
        return self.output(self.decoder._forward(*checked))

    def forward(self, src: Tensor, tgt: Tensor, src_token_mask: Tensor | None = None,
                tgt_token_mask: Tensor | None = None) -> Tensor:
        """Teacher forcing: logits (B, T, V_tgt) for every target position in one pass."""
        x, y = self._embed(src, self.src_embed, "src"), self._embed(tgt, self.tgt_embed, "tgt")
        src_mask = _check_token_mask(src_token_mask, x.shape[:2], "src_token_mask")
        tgt_mask = _check_token_mask(tgt_token_mask, y.shape[:2], "tgt_token_mask")
        memory = self.encoder._forward(x, src_mask)
        return self.output(self.decoder._forward(y, memory, tgt_mask, src_mask))


def count_parameters(model: nn.Module) -> int:
    """The number of trainable numbers in ``model`` (a shared tensor counts once)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def transformer_parameter_count(config: TransformerConfig) -> int:
    """The closed-form parameter count of ``Transformer(config)`` (it does not depend on
    ``n_heads``)::

        attention  A = 4·d² + 4·d                 (W^Q, W^K, W^V, W^O and their biases)
        FFN        F = 2·d·d_ff + d_ff + d        (SwiGLU: 3·d·d_ff + 2·d_ff + d)
        LayerNorm  L = 2·d                        (γ and β)
        encoder layer = A + F + 2L,   decoder layer = 2A + F + 3L
        embeddings = V·d when shared, else V_src·d + V_tgt·d (embedding) + V_tgt·d (output)
        final norms = 2L with final_norm (by default for pre-LN)
    """
    c = _check_config(config)
    if c.src_vocab_size is None or c.tgt_vocab_size is None:
        raise ValueError("the count needs config.src_vocab_size and config.tgt_vocab_size")
    d, ff = c.d_model, c.d_ff
    attention = 4 * d * d + 4 * d
    ffn = 3 * d * ff + 2 * ff + d if c.activation == "swiglu" else 2 * d * ff + ff + d
    norm = 2 * d
    layers = (c.n_encoder_layers * (attention + ffn + 2 * norm)
              + c.n_decoder_layers * (2 * attention + ffn + 3 * norm))
    v_src, v_tgt = c.src_vocab_size, c.tgt_vocab_size
    embeddings = v_src * d if c.tie_embeddings else (v_src + 2 * v_tgt) * d
    final_norm = c.norm_first if c.final_norm is None else c.final_norm
    return layers + embeddings + (2 * norm if final_norm else 0)
