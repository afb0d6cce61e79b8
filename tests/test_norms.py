"""Tests for course_utils.norms (LayerNorm, RMSNorm) against torch.nn, torch.nn.functional and
Hugging Face ``transformers``' Llama RMSNorm."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn
from transformers.models.llama.modeling_llama import LlamaRMSNorm

from course_utils import norms

DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: {"rtol": 1e-5, "atol": 1e-5}, torch.float64: {"rtol": 1e-10, "atol": 1e-12}}


# ------------------------------------------------------------------------------- layer norm


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 4, 5)])
def test_layer_norm_equals_pytorch(dtype, shape) -> None:
    torch.manual_seed(1)
    theirs = nn.LayerNorm(5, eps=1e-3, dtype=dtype)
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    mine = norms.LayerNorm.from_torch(theirs)
    x = 3 * torch.randn(*shape, dtype=dtype) + 2
    torch.testing.assert_close(mine(x), theirs(x), **TOL[dtype])
    torch.testing.assert_close(
        mine(x), F.layer_norm(x, (5,), theirs.weight, theirs.bias, 1e-3), **TOL[dtype]
    )


@settings(max_examples=30, deadline=None)
@given(d=st.integers(2, 16), seed=st.integers(0, 2**16), shift=st.floats(-100, 100),
       scale=st.floats(0.1, 100))
def test_layer_norm_gives_mean_zero_variance_one(d, seed, shift, scale) -> None:
    g = torch.Generator().manual_seed(seed)
    x = scale * torch.randn(4, 3, d, generator=g, dtype=torch.float64) + shift
    eps = 1e-12
    y = norms.LayerNorm(d, eps=eps)(x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(4, 3, dtype=torch.float64), atol=1e-9,
                               rtol=0)
    var = x.var(-1, unbiased=False)  # var(y) = σ² / (σ² + ε): 1 unless the token is near-constant
    torch.testing.assert_close(y.var(-1, unbiased=False), var / (var + eps), atol=1e-9, rtol=1e-9)
    assert torch.all(y.var(-1, unbiased=False) <= 1 + 1e-9)


def test_layer_norm_gradient_equals_pytorch() -> None:
    x = torch.randn(3, 7, dtype=torch.float64)
    theirs = nn.LayerNorm(7, dtype=torch.float64)
    mine = norms.LayerNorm.from_torch(theirs)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    (mine(xs[0]) ** 3).sum().backward()
    (theirs(xs[1]) ** 3).sum().backward()
    torch.testing.assert_close(xs[0].grad, xs[1].grad)
    torch.testing.assert_close(mine.weight.grad, theirs.weight.grad)


def test_layer_norm_constant_input_gives_beta() -> None:
    ln = norms.LayerNorm(4)
    with torch.no_grad():
        ln.bias.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    torch.testing.assert_close(ln(torch.full((2, 4), 7.0)), ln.bias.expand(2, 4))

@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: norms.LayerNorm(4)(torch.randn(2, 3)), ValueError, "d_model=4"),
        (lambda: norms.LayerNorm(4, eps=0.0), ValueError, "eps"),
        (lambda: norms.LayerNorm(4)([1.0, 2.0]), TypeError, "torch.Tensor"),
        (lambda: norms.LayerNorm.from_torch(nn.LayerNorm((2, 3))), ValueError, "one dimension"),
    ],
)
def test_layer_norm_bad_inputs(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()


# ----------------------------------------------------------------------------- RMSNorm


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 4, 5)])
def test_rms_norm_equals_pytorch(dtype, shape) -> None:
    torch.manual_seed(0)
    theirs = nn.RMSNorm(5, eps=1e-6, dtype=dtype)
    with torch.no_grad():
        theirs.weight.copy_(torch.randn(5))
    mine = norms.RMSNorm.from_torch(theirs)
    assert mine.weight.dtype == dtype and mine.eps == 1e-6
    x = 3 * torch.randn(*shape, dtype=dtype) + 1
    torch.testing.assert_close(mine(x), theirs(x), **TOL[dtype])
    torch.testing.assert_close(mine(x), F.rms_norm(x, (5,), theirs.weight, eps=1e-6), **TOL[dtype])


LOW = [torch.float16, torch.bfloat16]


def _ulp(t: Tensor) -> Tensor:
    """The spacing of ``t``'s dtype at each entry (the gap to the next representable number)."""
    return torch.nextafter(t.abs(), torch.full_like(t, torch.inf)) - t.abs()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, *LOW])
def test_rms_norm_equals_pytorch_in_every_dtype(dtype) -> None:
    torch.manual_seed(1)
    theirs = nn.RMSNorm(64, eps=1e-5, dtype=dtype)
    with torch.no_grad():
        theirs.weight.copy_(1 + 0.5 * torch.randn(64))
    mine = norms.RMSNorm.from_torch(theirs)
    x = (4 * torch.randn(32, 64) + 1).to(dtype)
    out, expected = mine(x), theirs(x)
    assert out.dtype == dtype
    if dtype in LOW:  # computed in float32 and rounded once, as PyTorch does: the same bits
        torch.testing.assert_close(out, expected, rtol=0, atol=0)
    else:
        torch.testing.assert_close(out, expected, **TOL[dtype])


@pytest.mark.parametrize("dtype", LOW)
def test_rms_norm_within_one_ulp_of_llama(dtype) -> None:
    # Hugging Face's LlamaRMSNorm rounds x / rms to the input dtype before multiplying by γ
    theirs = LlamaRMSNorm(64, eps=1e-5).to(dtype)
    with torch.no_grad():
        theirs.weight.copy_(1 + 0.5 * torch.randn(64, generator=torch.Generator().manual_seed(2)))
    mine = norms.RMSNorm(64, eps=1e-5).to(dtype)
    mine.load_state_dict(theirs.state_dict())
    x = (4 * torch.randn(32, 64, generator=torch.Generator().manual_seed(3)) + 1).to(dtype)
    out, expected = mine(x), theirs(x)
    assert ((out - expected).abs() <= _ulp(expected)).all()
    assert (out != expected).any()  # one rounding fewer is not always the same number


@pytest.mark.parametrize("dtype", LOW)
def test_rms_norm_low_precision_does_not_overflow(dtype) -> None:
    # one feature of size 1000 in a float16 row: its square 10^6 is beyond float16's largest
    # finite number 65504, so a float16 mean of squares is inf and the output 0
    x = torch.full((8,), 0.5, dtype=dtype)
    x[3] = 1000.0
    out = norms.RMSNorm(8, eps=1e-6).to(dtype)(x)
    exact = x.double() / x.double().pow(2).mean().sqrt()  # 1000 / √(10^6/8 + ...) ≈ √8
    assert out.dtype == dtype and torch.isfinite(out).all() and (out != 0).all()
    torch.testing.assert_close(out.double(), exact, rtol=1e-2, atol=0)


def test_rms_norm_gradient_equals_pytorch() -> None:
    theirs = nn.RMSNorm(6, eps=1e-6, dtype=torch.float64)
    mine = norms.RMSNorm.from_torch(theirs)
    x = torch.randn(3, 6, dtype=torch.float64)
    grads = []
    for module in (mine, theirs):
        xi = x.clone().requires_grad_()
        (module(xi) ** 3).sum().backward()
        grads.append((xi.grad, module.weight.grad))
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


@settings(max_examples=30, deadline=None)
@given(d=st.integers(2, 16), seed=st.integers(0, 2**16), scale=st.floats(0.1, 100))
def test_rms_norm_is_layer_norm_without_the_mean(d, seed, scale) -> None:
    g = torch.Generator().manual_seed(seed)
    x = scale * torch.randn(4, d, dtype=torch.float64, generator=g) + 2.0
    rms, ln = norms.RMSNorm(d, eps=1e-5).double(), norms.LayerNorm(d, eps=1e-5).double()
    with torch.no_grad():
        out = rms(x)
        # LN(x) = RMSNorm(x - mean(x)) with γ = 1, β = 0 and the same ε
        torch.testing.assert_close(ln(x), rms(x - x.mean(-1, keepdim=True)))
        # with a negligible ε the output has root mean square 1, and scaling x changes nothing
        exact = norms.RMSNorm(d, eps=1e-30).double()
        rms_out = exact(x).pow(2).mean(-1).sqrt()
        torch.testing.assert_close(rms_out, torch.ones_like(rms_out))
        torch.testing.assert_close(exact(3 * x), exact(x))
        # but unlike LayerNorm it does not remove a shift
        assert not torch.allclose(rms(x + 5), out)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: norms.RMSNorm(4, eps=0.0), ValueError, "eps"),
        (lambda: norms.RMSNorm(4, eps=True), TypeError, "eps must be a real number, got bool"),
        (lambda: norms.RMSNorm(0), ValueError, "d_model"),
        (lambda: norms.RMSNorm(4)(torch.randn(2, 3)), ValueError, "d_model=4"),
        (lambda: norms.RMSNorm(4)([1.0, 2.0]), TypeError, "torch.Tensor"),
        (lambda: norms.RMSNorm.from_torch(nn.LayerNorm(4)), TypeError, "nn.RMSNorm"),
        (lambda: norms.RMSNorm.from_torch(nn.RMSNorm(4)), ValueError, "eps"),
        (lambda: norms.RMSNorm.from_torch(nn.RMSNorm((2, 3), eps=1e-6)), ValueError,
         "one dimension"),
    ],
)
def test_rms_norm_bad_inputs(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()
