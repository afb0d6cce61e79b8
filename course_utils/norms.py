"""Normalization layers: LayerNorm and RMSNorm.

Both normalize each token on its own, over its last dimension ``d_model``; ``from_torch`` copies
PyTorch's ``nn.LayerNorm`` or ``nn.RMSNorm`` (size, ``eps``, weights, dtype and device), so the
notebooks can check equal outputs.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from course_utils.validation import check_int, check_last_dim, check_real, check_torch_module

__all__ = ["LayerNorm", "RMSNorm"]


def _copy_norm(cls: Any, module: Any, torch_type: type[nn.Module],
               parameters: tuple[str, ...]) -> Any:
    """``cls`` built like the 1-D ``torch_type`` ``module`` (its size, ``eps``, dtype and device)
    with ``parameters`` copied; a clear error for anything else."""
    module = check_torch_module(module, torch_type)
    if (len(module.normalized_shape) != 1 or module.eps is None
            or any(getattr(module, name) is None for name in parameters)):
        raise ValueError(f"module must normalize one dimension, with an explicit eps and the "
                         f"learned {' and '.join(parameters)} (elementwise_affine=True)")
    new = cls(module.normalized_shape[0], eps=module.eps).to(module.weight)
    with torch.no_grad():
        for name in parameters:
            getattr(new, name).copy_(getattr(module, name))
    return new


class LayerNorm(nn.Module):
    """Layer normalization over the last dimension (each token on its own).

    ``LN(x) = γ ⊙ (x − μ) / √(σ² + ε) + β`` with ``μ = mean(x)`` and the *biased* variance
    ``σ² = mean((x − μ)²)`` over the ``d_model`` features; ``γ`` (``weight``) starts at 1 and
    ``β`` (``bias``) at 0. Shapes: ``(..., d_model) -> (..., d_model)``.
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = d_model = check_int(d_model, "d_model")
        self.eps = check_real(eps, "eps", low=0, low_open=True)
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: Tensor) -> Tensor:
        return self._forward(check_last_dim(x, self.d_model))

    def _forward(self, x: Tensor) -> Tensor:
        """The formula on a checked ``x`` (the layers that hold this norm call it)."""
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias

    @classmethod
    def from_torch(cls, module: nn.LayerNorm) -> LayerNorm:
        """A copy of a 1-D ``nn.LayerNorm(d_model)`` with affine weights and bias."""
        return _copy_norm(cls, module, nn.LayerNorm, ("weight", "bias"))


class RMSNorm(nn.Module):
    """Root-mean-square normalization over the last dimension (Zhang & Sennrich, 2019; Llama).

    ``RMSNorm(x) = γ ⊙ x / √(mean(x²) + ε)``: LayerNorm without subtracting the mean and without
    ``β``, so it costs one reduction instead of two. ``γ`` (``weight``) starts at 1. For float16
    and bfloat16 the whole formula is computed in float32 and rounded back once (a float16 square
    overflows above 256), as ``nn.RMSNorm`` does in recent PyTorch versions, those this course
    requires (2.11 or later) among them (Hugging Face's Llama rounds once more, before ``γ ⊙``);
    equal to ``nn.RMSNorm(d_model, eps=eps)`` in every dtype on those versions. Shapes:
    ``(..., d_model) -> (..., d_model)``.
    """

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.d_model = d_model = check_int(d_model, "d_model")
        self.eps = check_real(eps, "eps", low=0, low_open=True)
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: Tensor) -> Tensor:
        return self._forward(check_last_dim(x, self.d_model))

    def _forward(self, x: Tensor) -> Tensor:
        """The formula on a checked ``x`` (the blocks that hold this norm call it)."""
        dtype = torch.promote_types(x.dtype, self.weight.dtype)  # the result's
        wide = x.to(torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype)
        inv_rms = torch.rsqrt(wide.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (wide * inv_rms * self.weight.to(wide.dtype)).to(dtype)

    @classmethod
    def from_torch(cls, module: nn.RMSNorm) -> RMSNorm:
        """A copy of a 1-D ``nn.RMSNorm(d_model, eps=...)`` with an explicit ``eps`` and weight."""
        return _copy_norm(cls, module, nn.RMSNorm, ("weight",))
