"""Attention speed and memory, side by side: naive, PyTorch's fused kernel, the course's tiled one.

    python benchmarks/attention.py            # N = 1,024 … 16,384, d = 64, float32, CPU
    python benchmarks/attention.py --quick    # N = 512 and 1,024: a smoke run of a few seconds
    python benchmarks/attention.py --tiles    # tiled forward and backward against the tile size
    python benchmarks/attention.py --targets  # N = 16,384 only, with the targets' verdicts
    ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 python benchmarks/attention.py --targets
                                              # the same on a second CPU class (AVX2)

Two tables per thread setting (one thread, then torch's default, unless ``--threads`` names one):
the forward pass, and the forward + backward pass (``torch.autograd.grad`` of the output: the
tiled ``autograd.Function`` against PyTorch's fused kernel). Each table also gives the fused and
tiled kernels' GFLOP/s and their share of this machine's matrix-multiply throughput, measured at
the start of the same table (``measure.matmul_flop_rate``): the distance to the limit.
Targets at N = 16,384: tiled forward at most 1.15× the fused kernel's time, forward +
backward at most 1.25×, tiled peak memory at most the fused kernel's.
Memory: the peak extra bytes of one call, each (method, N) in a fresh process
(``course_utils.attention_memory.peak_extra_memory``: VmHWM/ru_maxrss after resetting the peak).
Time: warm-up, then the best of ``--repeats`` calls, the methods interleaved round by round in one
process so that a busy machine slows all of them alike; quote the ratios. Naive attention is
skipped above ``--naive-max`` (its N×N matrices take 2 GiB at N = 16,384) and left out of the
forward + backward table.
On a CUDA GPU it also times the Triton kernel and PyTorch's fastest fused backend for that GPU in
float16 (batch 4, 16 heads) and reports TFLOP/s: FlashAttention from compute capability 8.0, the
memory-efficient kernel below (a T4); the table names the backend used.
"""

from __future__ import annotations

import argparse
import os
from functools import partial

import torch
import torch.nn.functional as F

from course_utils import attention_memory, costs, env, measure, tiled
from course_utils.attention import softmax_attention

CPU_METHODS = {
    "naive": lambda q, k, v: softmax_attention(q, k, v)[0],
    "fused": F.scaled_dot_product_attention,
    "tiled": lambda q, k, v: tiled.tiled_attention_forward(q, k, v)[0],
}
def _gradients(f, q, k, v, grad_out):
    return torch.autograd.grad(f(q, k, v), (q, k, v), grad_out)


BACKWARD_METHODS = {  # forward + backward: the gradients of q, k and v for a given grad_out
    "fused": F.scaled_dot_product_attention,
    "tiled": tiled.tiled_attention,
}


def cpu_table(sizes: list[int], d: int, repeats: int, naive_max: int, threads: int) -> dict:
    """The forward table; returns ``{N: (seconds, MiB)}`` per method."""
    results = {}
    torch.set_num_threads(threads)
    peak = matmul_peak(repeats)
    print(f"\nCPU forward, {_setting(d, threads)}; {_peak(peak)}")
    header = (f"{'N':>6} | {'naive s':>8} {'fused s':>8} {'tiled s':>8} | {'naive MiB':>9} "
              f"{'fused MiB':>9} {'tiled MiB':>9} | {'tiled/fused time':>16} "
              f"{'naive/tiled mem':>15} | {_RATE_HEADER}")
    print(header)
    print("-" * len(header))
    for n in sizes:
        names = [m for m in CPU_METHODS if m != "naive" or n <= naive_max]
        memory = {m: attention_memory.peak_extra_memory(m, n, d, threads=threads) / 2**20
                  for m in names}
        g = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(1, 1, n, d, generator=g) for _ in range(3))
        seconds = measure.best_times({m: partial(CPU_METHODS[m], q, k, v) for m in names}, repeats)
        del q, k, v

        def cell(table, m, fmt):
            return format(table[m], fmt) if m in table else "skipped"

        ratio_mem = (f"{memory['naive'] / memory['tiled']:>15.0f}" if "naive" in memory
                     else f"{'-':>15}")
        print(f"{n:>6} | {cell(seconds, 'naive', '8.3f'):>8} {seconds['fused']:>8.3f} "
              f"{seconds['tiled']:>8.3f} | {cell(memory, 'naive', '9.1f'):>9} "
              f"{memory['fused']:>9.1f} {memory['tiled']:>9.1f} | "
              f"{seconds['tiled'] / seconds['fused']:>16.2f} {ratio_mem} | "
              f"{_rates(costs.attention_flops(n, n, d), seconds, peak)}", flush=True)
        results[n] = (seconds, memory)
    print(f"(naive 2·N²·4 bytes at N = {sizes[-1]}: "
          f"{costs.naive_attention_bytes(sizes[-1], sizes[-1]) / 2**20:,.0f} MiB)")
    return results


def backward_table(sizes: list[int], d: int, repeats: int, threads: int) -> dict:
    """Forward + backward: the tiled autograd.Function against PyTorch's fused kernel; returns
    ``{N: (seconds, MiB)}`` per method."""
    results = {}
    torch.set_num_threads(threads)
    peak = matmul_peak(repeats)
    print(f"\nCPU forward + backward, {_setting(d, threads)}; {_peak(peak)}; FLOPs counted as "
          f"3.5 × the forward's (FlashAttention-2's convention)")
    header = (f"{'N':>6} | {'fused s':>8} {'tiled s':>8} | {'fused MiB':>9} {'tiled MiB':>9} | "
              f"{'tiled/fused time':>16} {'tiled/fused mem':>15} | {_RATE_HEADER}")
    print(header)
    print("-" * len(header))
    for n in sizes:
        memory = {m: attention_memory.peak_extra_memory(m, n, d, threads=threads,
                                                        backward=True) / 2**20
                  for m in BACKWARD_METHODS}
        g = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(1, 1, n, d, generator=g, requires_grad=True) for _ in range(3))
        grad_out = torch.randn(1, 1, n, d, generator=g)
        seconds = measure.best_times(
            {m: partial(_gradients, f, q, k, v, grad_out) for m, f in BACKWARD_METHODS.items()},
            repeats)
        del q, k, v, grad_out
        print(f"{n:>6} | {seconds['fused']:>8.3f} {seconds['tiled']:>8.3f} | "
              f"{memory['fused']:>9.1f} {memory['tiled']:>9.1f} | "
              f"{seconds['tiled'] / seconds['fused']:>16.2f} "
              f"{memory['tiled'] / memory['fused']:>15.2f} | "
              f"{_rates(3.5 * costs.attention_flops(n, n, d), seconds, peak)}", flush=True)
        results[n] = (seconds, memory)
    return results


_RATE_HEADER = f"{'fused GFLOP/s':>13} {'tiled GFLOP/s':>13} {'fused %mm':>9} {'tiled %mm':>9}"
TARGETS = {"forward": 1.15, "forward + backward": 1.25}  # tiled/fused time at N = 16,384


def matmul_peak(repeats: int) -> float:
    """This machine's float32 matrix-multiply throughput at the current thread count: the best
    of ``max(repeats, 5)`` 2048² products, so that one busy moment of the machine does not set
    it (a share above 100% in the table means the machine was busy while it was measured)."""
    return measure.matmul_flop_rate(2048, max(repeats, 5))


def _peak(rate: float) -> str:
    return f"matmul 2048² at {rate / 1e9:.0f} GFLOP/s (%mm: share of it)"


def _rates(flops: float, seconds: dict[str, float], peak: float) -> str:
    """GFLOP/s of the fused and tiled kernels and their share of the matmul throughput."""
    rate = {m: flops / seconds[m] for m in ("fused", "tiled")}
    return (f"{rate['fused'] / 1e9:>13.1f} {rate['tiled'] / 1e9:>13.1f} "
            f"{100 * rate['fused'] / peak:>8.0f}% {100 * rate['tiled'] / peak:>8.0f}%")


def report_targets(n: int, threads: int, forward: dict, both: dict) -> None:
    """The issue's targets at N: time ratios at most TARGETS, tiled peak memory at most fused's."""
    print(f"\nTargets at N = {n}, {_threads(threads)}:")
    for name, table in (("forward", forward), ("forward + backward", both)):
        seconds, memory = table[n]
        ratio, mem = seconds["tiled"] / seconds["fused"], memory["tiled"] / memory["fused"]
        verdict = "met" if ratio <= TARGETS[name] and mem <= 1.0 else "missed"
        print(f"  {name:<18} tiled/fused time {ratio:.2f} (target <= {TARGETS[name]:.2f}), "
              f"memory {mem:.2f} (target <= 1.00): {verdict}", flush=True)


def _setting(d: int, threads: int) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"float32, batch 1, 1 head, d = {d}, {_threads(threads)}, "
            f"load average {load:.1f} on {os.cpu_count()} cores at the start")


def _threads(threads: int) -> str:
    return f"{threads} thread{'s' * (threads > 1)}"


def tile_table(n: int, d: int, repeats: int, threads: int) -> None:
    """Tiled forward and backward times for several tile sizes, as ratios to each pass's
    default tiles (the forward holds one tile of scores per worker, the backward two)."""
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(n)
    q, k, v, grad_out = (torch.randn(1, 1, n, d, generator=g) for _ in range(4))
    out, lse = tiled.tiled_attention_forward(q, k, v)
    forward_default = (tiled.BLOCK_Q, tiled.BLOCK_K)
    backward_default = (tiled.BACKWARD_BLOCK_Q, tiled.BACKWARD_BLOCK_K)
    tiles = sorted({forward_default, backward_default, (128, 128), (256, 128), (512, 128),
                    (512, 256), (512, 512), (1024, 1024), (2048, 512)})
    tiles = [t for t in tiles if t[0] <= n and t[1] <= n]
    forward = measure.best_times(
        {t: partial(tiled.tiled_attention_forward, q, k, v, block_q=t[0], block_k=t[1])
         for t in tiles}, repeats)
    backward = measure.best_times(
        {t: partial(tiled.tiled_attention_backward, q, k, v, out, lse, grad_out, block_q=t[0],
                    block_k=t[1]) for t in tiles}, repeats)
    print(f"\nTiled attention against the tile size: N = {n}, d = {d}, {_threads(threads)} "
          f"(ratios to the defaults, forward {forward_default[0]} × {forward_default[1]}, "
          f"backward {backward_default[0]} × {backward_default[1]}; lower is faster)")
    print(f"{'block_q × block_k':>17} | {'scores MiB':>10} | {'forward s':>9} {'ratio':>6} | "
          f"{'backward s':>10} {'ratio':>6}")
    for t in tiles:
        print(f"{f'{t[0]} × {t[1]}':>17} | {t[0] * t[1] * 4 / 2**20:>10.2f} | "
              f"{forward[t]:>9.3f} {forward[t] / forward[forward_default]:>6.2f} | "
              f"{backward[t]:>10.3f} {backward[t] / backward[backward_default]:>6.2f}",
              flush=True)


def gpu_table(sizes: list[int], d: int, repeats: int) -> None:
    from course_utils import triton_attention as ta

    batch, heads = 4, 16
    capability = env.cuda_capability()
    backend = env.sdpa_backend(capability, torch.float16)
    use_triton = ta.triton_available() and torch.float16 in ta.supported_dtypes(capability)
    print(f"\nGPU {torch.cuda.get_device_name(0)} (compute capability "
          f"{capability[0]}.{capability[1]}), float16, batch {batch}, {heads} heads, d = {d}; "
          f"PyTorch's backend: {backend}")
    if not use_triton:
        print("(no Triton kernel here: triton missing, or a GPU older than compute capability 7.5)")
    torch_column = f"torch {backend} TFLOP/s"
    print(f"{'N':>6} | {'triton TFLOP/s':>14} {torch_column:>23} | {'triton/torch':>12}")

    def cuda_time(fn):
        return measure.best_time(fn, repeats, cuda=True)

    for n in sizes:
        q, k, v = (torch.randn(batch, heads, n, d, device="cuda", dtype=torch.float16)
                   for _ in range(3))
        flops = batch * heads * costs.attention_flops(n, n, d)
        with env.sdpa_kernel(backend):
            torch_rate = flops / cuda_time(
                lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v)) / 1e12
        if use_triton:
            triton_rate = flops / cuda_time(
                lambda q=q, k=k, v=v: ta.triton_attention_forward(q, k, v)) / 1e12
            print(f"{n:>6} | {triton_rate:>14.1f} {torch_rate:>23.1f} | "
                  f"{triton_rate / torch_rate:>12.2f}", flush=True)
        else:
            print(f"{n:>6} | {'-':>14} {torch_rate:>23.1f} | {'-':>12}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 512 and 1,024 only")
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--naive-max", type=int, default=16384,
                        help="largest N for naive attention (2·N²·4 bytes)")
    parser.add_argument("--threads", type=int, default=None,
                        help="one thread setting (default: 1, then torch's default)")
    parser.add_argument("--targets", action="store_true",
                        help="only N = 16,384, with the targets' verdicts")
    parser.add_argument("--tiles", action="store_true",
                        help="only the tile-size table (N = 16,384; 1,024 with --quick)")
    args = parser.parse_args()
    sizes = [512, 1024] if args.quick else [16384] if args.targets else [1024, 2048, 4096, 8192,
                                                                          16384]
    repeats = 1 if args.quick else args.repeats
    default = torch.get_num_threads()
    settings = [args.threads] if args.threads else sorted({1, default})
    for threads in settings:
        if args.tiles:
            tile_table(1024 if args.quick else 16384, args.d, repeats, threads)
            continue
        forward = cpu_table(sizes, args.d, repeats, args.naive_max, threads)
        both = backward_table(sizes, args.d, repeats, threads)
        if sizes[-1] >= 16384:
            report_targets(sizes[-1], threads, forward, both)
    torch.set_num_threads(default)
    if torch.cuda.is_available() and not args.tiles:
        gpu_table([1024, 2048] if args.quick else [1024, 2048, 4096, 8192, 16384], args.d, repeats)


if __name__ == "__main__":
    main()
