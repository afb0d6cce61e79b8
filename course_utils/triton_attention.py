"""A Triton kernel for tiled attention (the FlashAttention-2 forward pass).

One Triton *program* computes one block of ``BLOCK_Q`` query rows of one (batch, head): it loads
its queries once, walks over the keys and values in blocks of ``BLOCK_K`` with the running
max / running sum / rescaled accumulator of :func:`course_utils.tiled.tiled_attention_numpy`,
and writes the output block and its log-sum-exp. The semantics are those of
:func:`course_utils.tiled.tiled_attention_forward` (bottom-right causal alignment, sliding
windows, fully masked rows give 0 and ``−inf``, any lengths, float16 and bfloat16 accumulate in
float32; block-sparse masks are left to the PyTorch version), plus:

* head dimensions that are not powers of two (48, 72, 80, …) are padded inside the kernel to the
  next power of two (``tl.arange`` needs one) and the padding is masked out of loads and stores;
* the key loop is split in three: key blocks that every row of the query block may fully see run
  without masks, and only the blocks on the causal diagonal, at the end of the keys or at the
  near edge of a sliding window pay for masks; blocks entirely above the diagonal or before the
  window are never visited;
* float32 inputs use exact float32 products (``input_precision="ieee"``): a GPU would otherwise
  use TF32 and miss a 1e-5 tolerance.

Which GPUs: compute capability 7.5 (Turing: Colab's free T4) and newer. From 8.0 (Ampere) Triton
lowers ``tl.dot`` to tensor-core instructions; on 7.5 it lowers it to plain FMAs, so the kernel is
correct there but slow, and it uses smaller tiles (:func:`launch_config`). bfloat16 is offered
from 8.0 only (:func:`supported_dtypes`). :func:`compile_ahead` compiles the kernel for any of
these GPUs on a machine without one (the tests do, for 7.5, 8.0 and 9.0).

Where it runs — decided when this module is imported:

* a CUDA device is present: the kernel is compiled for it and the tensors must be on it;
* no CUDA device: the module sets ``TRITON_INTERPRET=1`` when it is imported, before its own
  lazy import of triton (triton reads the variable when *it* is imported), and the kernel runs
  in Triton's interpreter on CPU tensors — slow (use small sizes), but the same kernel code, so
  it can be run and checked on any laptop. The interpreter has no
  bfloat16 arithmetic, so bfloat16 inputs are computed in float32 there and cast back.

The kernels are JIT-wrapped only on first use, after the variable is set, so this works in one
process even when something (PyTorch's compiler stack, for one) imported triton earlier. For the
same reason the kernel uses only builtins (``tl.full``, ``tl.reduce`` with its own combine
functions): ``tl.zeros``, ``tl.max`` and ``tl.sum`` are JIT functions that triton wraps when it is
imported, in whichever mode was set then. Setting ``TRITON_INTERPRET=1`` yourself before
importing this module forces the interpreter even on a GPU machine; ``TRITON_INTERPRET=0``
forces compiled mode even without a GPU (for :func:`compile_ahead`). Where triton is not
installed, :func:`triton_available` is False and :func:`triton_attention_forward` raises
``ModuleNotFoundError`` saying so.
"""

from __future__ import annotations

import importlib.util
import math
import os
from typing import Any

import torch

from course_utils.env import cuda_capability, supports_bfloat16
from course_utils.validation import (
    check_attention_inputs,
    check_bool,
    check_capability,
    check_int,
    check_window,
)

_LN_2 = math.log(2.0)
_LOG2E = 1.0 / _LN_2
_STATE: dict[str, Any] = {}
tl: Any = None  # triton.language, bound by _kernel() when triton is first imported


def triton_available() -> bool:
    """True when the ``triton`` package can be imported."""
    return importlib.util.find_spec("triton") is not None


MIN_CAPABILITY = (7, 5)  # the oldest GPU the kernel is compiled for: Turing (a T4)
TENSOR_CORE_CAPABILITY = (8, 0)  # from here Triton's tl.dot uses tensor cores (mma)


def interpreter_mode() -> bool:
    """True when kernels run in Triton's CPU interpreter: TRITON_INTERPRET=1, or no CUDA device
    unless TRITON_INTERPRET=0 (compiled mode without a GPU, to compile ahead of time)."""
    flag = os.environ.get("TRITON_INTERPRET")
    return flag == "1" or (flag != "0" and not torch.cuda.is_available())


def supported_dtypes(capability: tuple[int, int] | None) -> tuple[torch.dtype, ...]:
    """The input dtypes the kernel accepts on a GPU of this compute capability (None: the
    interpreter, where bfloat16 is computed in float32)."""
    capability = check_capability(capability)
    if capability is not None and tuple(capability) < MIN_CAPABILITY:
        return ()
    dtypes: tuple[torch.dtype, ...] = (torch.float32, torch.float16)
    if capability is None or supports_bfloat16(capability):
        dtypes += (torch.bfloat16,)
    return dtypes


def launch_config(
    dtype: torch.dtype, head_dim: int, capability: tuple[int, int] | None
) -> dict[str, int]:
    """Default tiles and launch options: ``block_q``, ``block_k`` (and, on a GPU, ``num_warps``
    and ``num_stages``) for ``dtype`` and ``head_dim`` on a GPU of this compute capability (None:
    the interpreter, 32 × 32). Tensor-core GPUs take 128 × 64 tiles in half precision and
    64 × 32 in float32; a 7.5 GPU, whose tl.dot is plain FMAs, 64 × 32 for every dtype."""
    _check_dtype(dtype)
    head_dim = check_int(head_dim, "head_dim")
    capability = check_capability(capability)
    if capability is None:
        return {"block_q": 32, "block_k": 32}
    half = dtype in (torch.float16, torch.bfloat16)
    if half and tuple(capability) >= TENSOR_CORE_CAPABILITY:
        return {"block_q": 128, "block_k": 64, "num_warps": 8 if head_dim > 64 else 4,
                "num_stages": 3}
    return {"block_q": 64, "block_k": 32, "num_warps": 4, "num_stages": 2}


def _check_dtype(dtype: object) -> None:
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
    if dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"dtype must be float16, bfloat16 or float32, got {dtype}")


def _check_gpu(capability: tuple[int, int], dtype: torch.dtype) -> None:
    if tuple(capability) < MIN_CAPABILITY:
        raise RuntimeError(
            f"the Triton kernel needs a GPU of compute capability 7.5 or newer, this one has "
            f"{capability[0]}.{capability[1]}: use course_utils.tiled (the same algorithm)"
        )
    if dtype not in supported_dtypes(capability):
        raise TypeError(
            f"{dtype} needs compute capability 8.0 or newer, this GPU has "
            f"{capability[0]}.{capability[1]}: use float16 or float32"
        )


def _constexprs(dtype: torch.dtype, head_dim: int, block_q: int, block_k: int, causal: bool):
    """The kernel's compile-time constants (one compiled kernel per distinct set)."""
    return {
        "HEAD_DIM": head_dim,
        "D_PAD": max(16, 1 << (head_dim - 1).bit_length()),  # the next power of two, at least 16
        "BLOCK_Q": block_q,
        "BLOCK_K": block_k,
        "CAUSAL": bool(causal),
        "PRECISION": "ieee" if dtype == torch.float32 else "tf32",
    }


def compile_ahead(
    capability: tuple[int, int], dtype: torch.dtype, head_dim: int, causal: bool
) -> dict[str, Any]:
    """Compile the kernel for a GPU of this compute capability without needing one, with the
    launch configuration :func:`triton_attention_forward` would use there; returns Triton's assembly
    stages by name (``"ptx"``, ``"cubin"``, …). Needs compiled mode: set TRITON_INTERPRET=0
    before importing this module on a machine without a GPU."""
    checked = check_capability(capability)
    if checked is None:
        raise TypeError("capability must be a (major, minor) tuple, got None")
    capability = checked
    _check_dtype(dtype)
    head_dim = check_int(head_dim, "head_dim")
    check_bool(causal, "causal")
    if interpreter_mode():
        raise RuntimeError(
            "compile_ahead needs compiled mode: set TRITON_INTERPRET=0 before importing "
            "course_utils.triton_attention"
        )
    _check_gpu(capability, dtype)
    kernel = _kernel()
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    config = launch_config(dtype, head_dim, capability)
    element = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}[dtype]
    constexprs = _constexprs(dtype, head_dim, config["block_q"], config["block_k"], causal)
    signature = {}
    for name in kernel.arg_names:
        if name in constexprs:
            signature[name] = "constexpr"
        elif name in ("Q", "K", "V", "Out"):
            signature[name] = f"*{element}"
        else:
            signature[name] = {"Lse": "*fp32", "qk_scale": "fp32"}.get(name, "i32")
    major, minor = capability
    compiled = triton.compile(
        ASTSource(fn=kernel, signature=signature, constexprs=constexprs),
        target=GPUTarget("cuda", 10 * major + minor, 32),
        options={"num_warps": config["num_warps"], "num_stages": config["num_stages"]},
    )
    return compiled.asm


if interpreter_mode():
    os.environ["TRITON_INTERPRET"] = "1"  # before anyone's `import triton` (see the docstring)


def _kernel():
    """Import triton (interpreter first when there is no GPU) and JIT the kernel, once."""
    if "kernel" not in _STATE:
        if not triton_available():
            raise ModuleNotFoundError(
                "triton is not installed: `pip install triton` (Linux) to run "
                "triton_attention_forward; course_utils.tiled has the same algorithm in NumPy and "
                "PyTorch"
            )
        interpret = interpreter_mode()
        if interpret:
            os.environ["TRITON_INTERPRET"] = "1"  # must precede the import below
        import triton
        import triton.language

        # The kernels below are plain functions until now; they name `tl` and the helpers as
        # module globals, which are rebound here to triton.language and the JIT versions.
        module = globals()
        module["tl"] = triton.language
        for name in ("_max_combine", "_add_combine", "_attention_step", "_steps"):
            module[name] = triton.jit(module[name])
        _STATE["interpret"] = interpret
        _STATE["cdiv"] = triton.cdiv
        _STATE["kernel"] = triton.jit(_attention_forward_kernel)
    return _STATE["kernel"]


def _max_combine(a, b):
    return tl.maximum(a, b)


def _add_combine(a, b):
    return a + b


def _attention_step(
    acc,
    l_i,
    m_i,
    q,
    k_ptrs,
    v_ptrs,
    k_mask,
    v_mask,
    offs_q,
    offs_k,
    start_k,
    LQ,
    LK,
    WINDOW,
    qk_scale,
    MASKED: tl.constexpr,
    CAUSAL: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One key/value tile: scores, new running max, rescale, accumulate (log2 domain)."""
    k = tl.load(k_ptrs, mask=k_mask, other=0.0)  # (D_PAD, BLOCK_K): keys already transposed
    s = tl.dot(q, k, input_precision=PRECISION) * qk_scale  # scores · log2(e)
    if MASKED:
        cols = start_k + offs_k
        keep = cols[None, :] < LK
        if CAUSAL:  # j ≤ i + Lk − Lq, and j > i + Lk − Lq − W (W > Lq + Lk without a window)
            keep = keep & (cols[None, :] <= offs_q[:, None] + (LK - LQ))
            keep = keep & (cols[None, :] > offs_q[:, None] + (LK - LQ - WINDOW))
        s = tl.where(keep, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.reduce(s, 1, _max_combine))
    if MASKED:  # a row that has seen no key yet keeps m = -inf: shift by 0 to avoid inf - inf
        m_new_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    else:
        m_new_safe = m_new
    p = tl.math.exp2(s - m_new_safe[:, None])
    alpha = tl.math.exp2(m_i - m_new_safe)  # e^(m_old - m_new), in base 2
    l_i = l_i * alpha + tl.reduce(p, 1, _add_combine)
    v = tl.load(v_ptrs, mask=v_mask, other=0.0)  # (BLOCK_K, D_PAD)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=PRECISION)
    return acc, l_i, m_new


def _steps(
    acc,
    l_i,
    m_i,
    q,
    k_ptrs,
    v_ptrs,
    d_ok,
    offs_q,
    offs_k,
    lo,
    hi,
    stride_kn,
    stride_vn,
    LQ,
    LK,
    WINDOW,
    qk_scale,
    BLOCK_K: tl.constexpr,
    MASKED: tl.constexpr,
    CAUSAL: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """The key blocks in [lo, hi): with ``MASKED``, blocks that need masks (the ragged end of
    the keys, the causal diagonal, the near edge of a sliding window); without, blocks that
    every row of the query block sees whole."""
    for start_k in range(lo, hi, BLOCK_K):
        if MASKED:
            cols_ok = (start_k + offs_k) < LK
            k_mask = d_ok[:, None] & cols_ok[None, :]
            v_mask = cols_ok[:, None] & d_ok[None, :]
        else:
            k_mask = d_ok[:, None]
            v_mask = d_ok[None, :]
        acc, l_i, m_i = _attention_step(acc, l_i, m_i, q, k_ptrs + start_k * stride_kn,
                                        v_ptrs + start_k * stride_vn, k_mask, v_mask, offs_q,
                                        offs_k, start_k, LQ, LK, WINDOW, qk_scale, MASKED, CAUSAL,
                                        PRECISION)
    return acc, l_i, m_i


def _attention_forward_kernel(
    Q,
    K,
    V,
    Out,
    Lse,
    qk_scale,
    stride_qb,
    stride_qm,
    stride_qd,
    stride_kb,
    stride_kn,
    stride_kd,
    stride_vb,
    stride_vn,
    stride_vd,
    stride_ob,
    stride_om,
    stride_od,
    LQ,
    LK,
    WINDOW,
    HEAD_DIM: tl.constexpr,
    D_PAD: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    BLOCK_K: tl.constexpr,
    CAUSAL: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """Program (i, b): query rows [i·BLOCK_Q, (i+1)·BLOCK_Q) of batch·head b."""
    start_q = tl.program_id(0) * BLOCK_Q
    b = tl.program_id(1).to(tl.int64)
    offs_q = start_q + tl.arange(0, BLOCK_Q)
    offs_k = tl.arange(0, BLOCK_K)
    offs_d = tl.arange(0, D_PAD)
    d_ok = offs_d < HEAD_DIM  # the padding of the head dimension
    row_ok = offs_q < LQ
    q = tl.load(
        Q + b * stride_qb + offs_q[:, None] * stride_qm + offs_d[None, :] * stride_qd,
        mask=row_ok[:, None] & d_ok[None, :],
        other=0.0,
    )
    k_ptrs = K + b * stride_kb + offs_k[None, :] * stride_kn + offs_d[:, None] * stride_kd
    v_ptrs = V + b * stride_vb + offs_k[:, None] * stride_vn + offs_d[None, :] * stride_vd
    m_i = tl.full([BLOCK_Q], float("-inf"), dtype=tl.float32)
    l_i = tl.full([BLOCK_Q], 0.0, dtype=tl.float32)
    acc = tl.full([BLOCK_Q, D_PAD], 0.0, dtype=tl.float32)
    # keys [full_start, full_end): every row of this block sees all of them, so no mask is
    # needed; keys [lo, full_start) (a window's near edge) and [full_end, end) (the causal
    # diagonal, the ragged end of the keys) are masked; keys outside [lo, end) are never loaded.
    if CAUSAL:
        offset = LK - LQ
        end = tl.maximum(tl.minimum(LK, start_q + BLOCK_Q + offset), 0)
        full_end = tl.maximum(tl.minimum(LK, start_q + 1 + offset), 0) // BLOCK_K * BLOCK_K
        lo = tl.maximum(start_q + offset - WINDOW + 1, 0) // BLOCK_K * BLOCK_K
        full_start = tl.maximum(start_q + BLOCK_Q + offset - WINDOW, 0)  # rounded up below
        full_start = (full_start + BLOCK_K - 1) // BLOCK_K * BLOCK_K
        full_start = tl.minimum(tl.maximum(full_start, lo), end)
        full_end = tl.maximum(full_end, full_start)
    else:
        lo = 0
        full_start = 0
        end = LK
        full_end = LK // BLOCK_K * BLOCK_K
    pointers = (q, k_ptrs, v_ptrs, d_ok, offs_q, offs_k)
    sizes = (stride_kn, stride_vn, LQ, LK, WINDOW, qk_scale, BLOCK_K)
    acc, l_i, m_i = _steps(acc, l_i, m_i, *pointers, lo, full_start, *sizes, True, CAUSAL,
                           PRECISION)
    acc, l_i, m_i = _steps(acc, l_i, m_i, *pointers, full_start, full_end, *sizes, False, CAUSAL,
                           PRECISION)
    acc, l_i, m_i = _steps(acc, l_i, m_i, *pointers, full_end, end, *sizes, True, CAUSAL,
                           PRECISION)
    seen = l_i > 0.0
    l_safe = tl.where(seen, l_i, 1.0)
    out = acc / l_safe[:, None]  # rows that saw no key: acc = 0, so out = 0
    ln_2 = 0.6931471805599453  # back from base 2 to the natural log
    lse = tl.where(seen, (m_i + tl.math.log2(l_safe)) * ln_2, float("-inf"))
    tl.store(
        Out + b * stride_ob + offs_q[:, None] * stride_om + offs_d[None, :] * stride_od,
        out.to(Out.dtype.element_ty),
        mask=row_ok[:, None] & d_ok[None, :],
    )
    tl.store(Lse + b * LQ + offs_q, lse, mask=row_ok)


def triton_attention_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    window: int | None = None,
    scale: float | None = None,
    block_q: int | None = None,
    block_k: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention forward with the Triton kernel: ``(out (..., Lq, d), lse (..., Lq) float32)``.

    ``q (..., Lq, d)``, ``k`` and ``v (..., Lk, d)`` of one dtype (float16, bfloat16 or float32)
    on the CUDA device when the kernel is compiled, on the CPU in interpreter mode (see the
    module docstring). ``out = softmax(q kᵀ·scale [+ bottom-right causal mask]) v`` with
    ``scale = 1/√d`` by default; ``lse`` is the natural log-sum-exp of each row's scores.
    ``window=W`` (with ``causal=True``): each query sees its ``W`` most recent keys, and the
    key blocks outside that band are never loaded (as in
    :func:`course_utils.tiled.tiled_attention_forward`).
    ``block_q``, ``block_k`` (powers of two, at least 16), ``num_warps`` and ``num_stages``
    default to :func:`launch_config` for this GPU. On a GPU older than compute capability 7.5
    it raises RuntimeError; bfloat16 below 8.0 is a TypeError (:func:`supported_dtypes`).
    """
    lq, lk, d, scale = check_attention_inputs(
        q, k, v, scale, dtypes=(torch.float16, torch.bfloat16, torch.float32))
    window = check_window(window, causal)
    if v.shape[-1] != d:
        raise ValueError(f"v must have the same last axis as q ({d}), got {v.shape[-1]}")
    kernel = _kernel()
    interpret = _STATE["interpret"]
    wanted = "cpu" if interpret else "cuda"
    if q.device.type != wanted:
        mode = "Triton's interpreter (no CUDA device)" if interpret else "a CUDA device"
        raise ValueError(
            f"q, k and v must be on the {wanted} device to run on {mode}, got {q.device}"
        )
    capability = None if interpret else cuda_capability()
    if capability is not None:
        _check_gpu(capability, q.dtype)
    config = launch_config(q.dtype, d, capability)
    block_q = config["block_q"] if block_q is None else block_q
    block_k = config["block_k"] if block_k is None else block_k
    for name, value in (("block_q", block_q), ("block_k", block_k)):
        if check_int(value, name) < 16 or value & (value - 1):
            raise ValueError(f"{name} must be a power of two of at least 16, got {value!r}")
    block_q, block_k = int(block_q), int(block_k)
    for name, option in (("num_warps", num_warps), ("num_stages", num_stages)):
        if option is not None:
            check_int(option, name)

    dtype = q.dtype
    if interpret and dtype == torch.bfloat16:  # the interpreter cannot do bfloat16 arithmetic
        q, k, v = q.float(), k.float(), v.float()
    q3, k3, v3 = (t.reshape(-1, t.shape[-2], d) for t in (q, k, v))
    out = torch.empty_like(q3)
    lse = torch.empty(q3.shape[:2], dtype=torch.float32, device=q.device)
    grid = (_STATE["cdiv"](lq, block_q), q3.shape[0])
    options = {} if interpret else {
        "num_warps": num_warps or config["num_warps"],
        "num_stages": num_stages or config["num_stages"],
    }
    kernel[grid](
        q3,
        k3,
        v3,
        out,
        lse,
        scale * _LOG2E,
        *q3.stride(),
        *k3.stride(),
        *v3.stride(),
        *out.stride(),
        lq,
        lk,
        lq + lk + 1 if window is None else window,  # a window wider than every row: no window
        **_constexprs(q3.dtype, d, block_q, block_k, causal),
        **options,
    )
    return out.to(dtype).reshape(q.shape), lse.reshape(q.shape[:-1])
