"""The Triton kernel compiles ahead of time for the GPUs learners meet: a T4 (compute capability
7.5, Colab's free GPU), an A100 (8.0) and an H100 (9.0), without a GPU here.

Triton compiles for a CUDA target on any Linux x86-64 machine (its wheel ships ``ptxas``).
Each target is compiled in a fresh process with ``TRITON_INTERPRET=0`` (compiled mode), for every
configuration the notebook and ``benchmarks/attention.py`` run, with the launch configuration
``triton_attention`` would use on that GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

pytest.importorskip("triton")

from course_utils import triton_attention as ta  # noqa: E402

# (dtype, head dimension, causal): notebook 17 (float32 d = 72, 48 causal and d = 64 not; float16
# d = 64 causal, and d = 64 not in its GPU benchmark) and benchmarks/attention.py (float16, d = 64).
USED = [("float32", 72, True), ("float32", 48, True), ("float32", 64, False),
        ("float16", 64, True), ("float16", 64, False), ("bfloat16", 64, False)]

SCRIPT = textwrap.dedent(
    """
    import json, sys, torch
    from course_utils import triton_attention as ta
    capability, configs = json.loads(sys.argv[1])
    report = {}
    for dtype, d, causal in configs:
        asm = ta.compile_ahead(tuple(capability), getattr(torch, dtype), d, causal)
        target = next(l for l in asm["ptx"].splitlines() if l.startswith(".target"))
        report[f"{dtype} {d} {causal}"] = [target, len(asm["cubin"]), asm["ptx"].count("mma.")]
    print(json.dumps(report))
    """
)


@pytest.mark.parametrize("capability", [(7, 5), (8, 0), (9, 0)], ids=["sm75", "sm80", "sm90"])
def test_kernel_compiles_for_the_gpu(capability):
    offered = [c for c in USED if getattr(torch, c[0]) in ta.supported_dtypes(capability)]
    env = {**os.environ, "TRITON_INTERPRET": "0", "TRITON_DEFAULT_FP_FUSION": "1"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps([capability, offered])],
        env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert len(report) == len(offered)
    arch = f"sm_{capability[0]}{capability[1]}"
    for config, (target, cubin_bytes, mma) in report.items():
        assert target.split()[1].startswith(arch), (config, target)
        assert cubin_bytes > 0, config
        # half precision on tensor cores (mma instructions) from sm80; float32 (exact "ieee"
        # products) and everything on sm75: plain FMAs
        half = not config.startswith("float32")
        assert (mma > 0) == (half and capability >= ta.TENSOR_CORE_CAPABILITY), (config, mma)


def test_bfloat16_is_offered_only_from_sm80():
    assert torch.bfloat16 not in ta.supported_dtypes((7, 5))
    assert torch.bfloat16 in ta.supported_dtypes((8, 0))
    assert ta.supported_dtypes((7, 0)) == ()  # older than Turing: not offered at all


def test_launch_config_by_gpu():
    assert ta.launch_config(torch.float16, 64, (7, 5))["block_q"] == 64  # FMAs: smaller tiles
    assert ta.launch_config(torch.float16, 64, (8, 0))["block_q"] == 128
    assert ta.launch_config(torch.float16, 128, (9, 0))["num_warps"] == 8
    assert ta.launch_config(torch.float32, 64, (8, 0))["block_q"] == 64
    assert ta.launch_config(torch.float32, 64, None) == {"block_q": 32, "block_k": 32}


@pytest.mark.parametrize(
    ("capability", "dtype", "error", "message"),
    [((7, 5), torch.bfloat16, TypeError, "needs compute capability 8.0"),
     ((7, 0), torch.float16, RuntimeError, "compute capability 7.5 or newer")],
)
def test_compile_ahead_refuses_what_a_gpu_cannot_run(capability, dtype, error, message):
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    code = (
        "import torch; from course_utils import triton_attention as ta\n"
        f"ta.compile_ahead({capability}, torch.{str(dtype).split('.')[1]}, 64, False)"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode != 0 and f"{error.__name__}: " in done.stderr and message in done.stderr


def test_compile_ahead_needs_compiled_mode():
    if not ta.interpreter_mode():
        pytest.skip("this process runs compiled (a GPU is present)")
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=0"):
        ta.compile_ahead((8, 0), torch.float16, 64, False)
