"""One command for the GPU checks (``make gpu-check``): on a CUDA machine, in a few minutes,

1. the GPU-relevant tests (the Triton kernel against PyTorch on the GPU, the device and backend
   logic, tiled attention),
2. notebook 17 executed on the GPU (compiled Triton kernel, the TFLOP/s curve), into a temporary
   copy: the stored outputs are left alone,
3. ``benchmarks/attention.py --quick`` (CPU table, then the GPU table),

then a short report: the GPU, each step's result and time, the benchmark's GPU table.
Exits non-zero when a step fails, or when there is no CUDA GPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ["tests/test_triton_attention.py", "tests/test_triton_compile.py", "tests/test_env.py",
         "tests/test_tiled.py", "tests/test_attention.py"]
NOTEBOOK = "notebooks/17_complexity_and_tiled_attention.ipynb"


def step(name: str, command: list[str], env: dict[str, str]) -> tuple[str, bool, float, str]:
    print(f"\n=== {name}: {' '.join(command)}", flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    print(done.stdout[-6000:], done.stderr[-3000:] if done.returncode else "", flush=True)
    return name, done.returncode == 0, seconds, done.stdout


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print("gpu-check: no CUDA GPU here; nothing was measured")
        return 1
    major, minor = torch.cuda.get_device_capability()
    gpu = f"{torch.cuda.get_device_name(0)} (compute capability {major}.{minor})"
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_DEVICE", "TRITON_INTERPRET")}
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        results = [
            step("tests", [python, "-m", "pytest", "-q", "-x", *TESTS], env),
            step("notebook 17", [python, "-m", "jupyter", "nbconvert", "--to", "notebook",
                                 "--execute", "--output-dir", tmp, "--output", "17_gpu.ipynb",
                                 "--ExecutePreprocessor.timeout=300", NOTEBOOK], env),
            step("benchmark", [python, "benchmarks/attention.py", "--quick"], env),
        ]
    print(f"\n=== gpu-check report: {gpu}, torch {torch.__version__}")
    for name, ok, seconds, _ in results:
        print(f"{name:<12} {'passed' if ok else 'FAILED':<7} {seconds:6.1f} s")
    benchmark = results[-1][3]
    if "GPU" in benchmark:
        print(benchmark[benchmark.index("\nGPU"):].strip())
    return 0 if all(ok for _, ok, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
