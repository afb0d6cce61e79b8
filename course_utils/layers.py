"""The Transformer's building blocks besides attention: feed-forward, layer norm, encoder layer.

Every class is an ``nn.Module`` whose ``from_torch`` (where there is a PyTorch counterpart)
copies PyTorch's weights, so the notebooks can check equal outputs. Padding masks are boolean
with True = real token (PyTorch's ``src_key_padding_mask`` uses True = padding).
"""

from __future__ import annotations

import numbers

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from course_utils.attention import MultiHeadAttention

__all__ = ["EncoderLayer", "FeedForward", "LayerNorm"]

_ACTIVATIONS = ("relu", "gelu", "swiglu")


def _check_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def _check_dropout(p: object) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p < 1.0:
        raise ValueError(f"dropout must be a number in [0, 1), got {p!r}")
    return float(p)


def _check_last_dim(x: object, d_model: int, name: str = "x") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 1 or x.shape[-1] != d_model:
        raise ValueError(f"{name} must have last dimension d_model={d_model}, got shape "
                         f"{tuple(x.shape)}")
    return x


class FeedForward(nn.Module):
    """The position-wise feed-forward network, applied to each token independently.

    * ``"relu"`` (the paper): ``FFN(x) = max(0, x W₁ + b₁) W₂ + b₂``
    * ``"gelu"``: ``GELU(x W₁ + b₁) W₂ + b₂`` with the exact ``GELU(z) = z · Φ(z)``
    * ``"swiglu"``: ``(SiLU(x W_g + b_g) ⊙ (x W₁ + b₁)) W₂ + b₂`` with ``SiLU(z) = z · σ(z)``;
      the gate ``W_g`` (``gate``) adds a third ``d_model × d_ff`` matrix.

    Shapes: ``(..., d_model) -> (..., d_model)``; W₁ is ``linear1`` (d_model → d_ff), W₂ is
    ``linear2`` (d_ff → d_model). ``dropout`` acts on the hidden activations in training mode,
    as in ``nn.TransformerEncoderLayer``.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", dropout: float = 0.0):
        super().__init__()
        self.d_model, self.d_ff = _check_int(d_model, "d_model"), _check_int(d_ff, "d_ff")
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {_ACTIVATIONS}, got {activation!r}")
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff)
        self.gate = nn.Linear(d_model, d_ff) if activation == "swiglu" else None
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(_check_dropout(dropout))

    def forward(self, x: Tensor) -> Tensor:
        x = _check_last_dim(x, self.d_model)
        if self.activation == "relu":
            hidden = F.relu(self.linear1(x))
        elif self.activation == "gelu":
            hidden = F.gelu(self.linear1(x))
        else:
            hidden = F.silu(self.gate(x)) * self.linear1(x)
        return self.linear2(self.dropout(hidden))


class LayerNorm(nn.Module):
    """Layer normalization over the last dimension (each token on its own).

    ``LN(x) = γ ⊙ (x − μ) / √(σ² + ε) + β`` with ``μ = mean(x)`` and the *biased* variance
    ``σ² = mean((x − μ)²)`` over the ``d_model`` features; ``γ`` (``weight``) starts at 1 and
    ``β`` (``bias``) at 0. Shapes: ``(..., d_model) -> (..., d_model)``.
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = _check_int(d_model, "d_model")
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps > 0:
            raise ValueError(f"eps must be a positive number, got {eps!r}")
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: Tensor) -> Tensor:
        x = _check_last_dim(x, self.d_model)
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias

    @classmethod
    def from_torch(cls, module: nn.LayerNorm) -> LayerNorm:
        """A copy of a 1-D ``nn.LayerNorm(d_model)`` with affine weights and bias."""
        if not isinstance(module, nn.LayerNorm):
            raise TypeError(f"module must be an nn.LayerNorm, got {type(module).__name__}")
        if len(module.normalized_shape) != 1 or module.weight is None or module.bias is None:
            raise ValueError("module must normalize one dimension with elementwise_affine=True "
                             "and bias=True")
        new = cls(module.normalized_shape[0], eps=module.eps).to(module.weight)
        with torch.no_grad():
            new.weight.copy_(module.weight)
            new.bias.copy_(module.bias)
        return new


class EncoderLayer(nn.Module):
    """One Transformer encoder layer: self-attention and feed-forward, each with a residual.

    Post-LN (the paper, ``norm_first=False``)::

        x = LN₁(x + Dropout(MHA(x, x, x)));  x = LN₂(x + Dropout(FFN(x)))

    Pre-LN (``norm_first=True``)::

        x = x + Dropout(MHA(LN₁(x)));        x = x + Dropout(FFN(LN₂(x)))

    ``forward(x, padding_mask)``: ``x`` ``(B, N, d_model)``; ``padding_mask`` boolean ``(B, N)``,
    True = real token (padding keys get no attention; padded positions still get an output,
    which later layers ignore). Dropout (attention weights, FFN hidden, both residual branches)
    is active only in training mode.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        activation: str = "relu",
        norm_first: bool = False,
        eps: float = 1e-5,
    ):
        super().__init__()
        dropout = _check_dropout(dropout)
        self.norm_first = bool(norm_first)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, activation, dropout)
        self.norm1 = LayerNorm(d_model, eps)
        self.norm2 = LayerNorm(d_model, eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def _attend(self, x: Tensor, padding_mask: Tensor | None) -> Tensor:
        return self.dropout1(self.self_attn(x, x, x, key_padding_mask=padding_mask)[0])

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        d_model = self.norm1.d_model
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[-1] != d_model:
            shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"x must be a tensor of shape (B, N, d_model={d_model}), got {shape}")
        if padding_mask is not None and (
            not isinstance(padding_mask, Tensor) or padding_mask.dtype != torch.bool
        ):
            raise TypeError("padding_mask must be a boolean tensor (True = real token)")
        if padding_mask is not None and padding_mask.shape != x.shape[:2]:
            raise ValueError(f"padding_mask must have shape (B, N) = {tuple(x.shape[:2])}, got "
                             f"{tuple(padding_mask.shape)}")
        if self.norm_first:
            x = x + self._attend(self.norm1(x), padding_mask)
            return x + self.dropout2(self.feed_forward(self.norm2(x)))
        x = self.norm1(x + self._attend(x, padding_mask))
        return self.norm2(x + self.dropout2(self.feed_forward(x)))

    @classmethod
    def from_torch(cls, module: nn.TransformerEncoderLayer) -> EncoderLayer:
        """A copy of a batch-first ``nn.TransformerEncoderLayer`` (ReLU or GELU, with biases).

        Its ``src_key_padding_mask`` means True = padding; pass ``~mask`` to this layer.
        """
        if not isinstance(module, nn.TransformerEncoderLayer):
            raise TypeError("module must be an nn.TransformerEncoderLayer, got "
                            f"{type(module).__name__}")
        if not module.self_attn.batch_first:
            raise ValueError("module must be built with batch_first=True")
        activation = {1: "relu", 2: "gelu"}.get(module.activation_relu_or_gelu)
        if activation is None:
            raise ValueError("module's activation must be ReLU or GELU (F.relu / F.gelu)")
        if module.linear1.bias is None:
            raise ValueError("module must be built with bias=True")
        attn = MultiHeadAttention.from_torch(module.self_attn)
        new = cls(attn.d_model, attn.n_heads, module.linear1.out_features, module.dropout.p,
                  activation, module.norm_first, module.norm1.eps)
        new = new.to(module.linear1.weight)
        new.self_attn = attn
        new.norm1 = LayerNorm.from_torch(module.norm1)
        new.norm2 = LayerNorm.from_torch(module.norm2)
        with torch.no_grad():
            for mine, theirs in ((new.feed_forward.linear1, module.linear1),
                                 (new.feed_forward.linear2, module.linear2)):
                mine.weight.copy_(theirs.weight)
                mine.bias.copy_(theirs.bias)
        new.train(module.training)
        return new
