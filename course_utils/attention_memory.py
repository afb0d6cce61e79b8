"""The peak memory of one attention call, measured in a fresh process: naive attention, the
course's tiled kernel and PyTorch's fused kernel, forward or forward and backward."""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from course_utils.attention import softmax_attention
from course_utils.tiled import tiled_attention, tiled_attention_forward
from course_utils.validation import check_bool, check_choice, check_int

CLEAR_REFS = "/proc/self/clear_refs"  # Linux: writing 5 resets the peak (VmHWM) to the RSS
MEMORY_METHODS = ("naive", "tiled", "fused")


def _attention_call(method: str, backward: bool) -> Callable:
    """``method``'s attention as ``call(q, k, v, grad_out)``: the output, or with ``backward``
    the gradients of q, k and v."""
    import torch

    forward = {
        "naive": lambda q, k, v: softmax_attention(q, k, v)[0],
        "tiled": (tiled_attention if backward
                  else lambda q, k, v: tiled_attention_forward(q, k, v)[0]),
        "fused": torch.nn.functional.scaled_dot_product_attention,
    }[method]
    if not backward:
        return lambda q, k, v, grad_out: forward(q, k, v)
    return lambda q, k, v, grad_out: torch.autograd.grad(forward(q, k, v), (q, k, v), grad_out)


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        match = re.search(field + r":\s+(\d+)", f.read())
    assert match is not None, field
    return int(match.group(1)) * 1024


def _sampled_peak(call: Callable[[], object]) -> tuple[object, int]:
    """``call()`` and the highest VmRSS a watching thread saw while it ran (every 0.2 ms)."""
    peak, done = [0], threading.Event()

    def watch() -> None:
        while not done.wait(0.0002):
            peak[0] = max(peak[0], _status_bytes("VmRSS"))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        return call(), peak[0]
    finally:
        done.set()
        watcher.join()


def _probe(method: str, ns: list[int], d: int, threads: int, backward: bool,
           reset: bool) -> list[int]:
    """In a fresh process: the peak extra bytes of one ``(1, 1, n, d)`` call per ``n``."""
    import torch

    torch.set_num_threads(threads)
    run = _attention_call(method, backward)
    g = torch.Generator().manual_seed(0)

    def make(n: int) -> list[torch.Tensor]:  # q, k, v and the gradient of the output
        return [torch.randn(1, 1, n, d, generator=g, requires_grad=backward and i < 3)
                for i in range(4)]

    run(*make(2048))  # warm-up: load the libraries, start the threads, touch their buffers
    extra = []
    for n in ns:
        tensors = make(n)
        before = _status_bytes("VmRSS")
        if reset:
            with open(CLEAR_REFS, "w") as f:
                f.write("5")  # the peak (VmHWM, what ru_maxrss reports) := the current RSS
            out = run(*tensors)
            peak = _status_bytes("VmHWM")
        else:  # no reset possible: sample the resident memory while the call runs (coarser)
            out, peak = _sampled_peak(functools.partial(run, *tensors))
        extra.append(max(0, peak - before))
        del tensors, out
    return extra


def peak_extra_memory(
    method: str, n: int | Sequence[int], d: int = 64, *, threads: int | None = None,
    backward: bool = False,
) -> int | list[int]:
    """Peak extra bytes of one ``(1, 1, n, d)`` float32 attention call, in a fresh process.

    ``method``: ``"naive"`` (:func:`course_utils.attention.softmax_attention`), ``"tiled"``
    (:func:`course_utils.tiled.tiled_attention_forward`; :func:`~course_utils.tiled.tiled_attention`
    with ``backward``) or ``"fused"`` (``torch.nn.functional.scaled_dot_product_attention``).
    With ``backward=True`` the call is forward and backward (``torch.autograd.grad`` with a given
    ``grad_out``): the gradients of q, k and v count as extra memory, as does the output.
    A list of lengths is measured one after the other in one process, and a list comes back.

    The process (``python -m course_utils.attention_memory``) warms the method up, builds its
    inputs, reads its resident memory (VmRSS), resets the kernel's peak counter (VmHWM, the number
    behind ``ru_maxrss``), calls the method and reports the new peak minus the reading
    (``tracemalloc`` cannot see PyTorch's allocations). Where the peak cannot be reset
    (``/proc/self/clear_refs`` not writable, as in some sandboxes) it warns and samples VmRSS
    every 0.2 ms instead: coarser. Linux only.
    """
    check_choice(method, "method", MEMORY_METHODS)
    ns = [n] if isinstance(n, (int, np.integer)) else list(n) if isinstance(n, Sequence) else None
    if ns is None:
        raise TypeError(f"n must be an int or a sequence of ints, got {type(n).__name__}")
    ns = [check_int(value, "n") for value in ns]
    d = check_int(d, "d")
    backward = check_bool(backward, "backward")
    if threads is None:
        import torch

        threads = torch.get_num_threads()
    threads = check_int(threads, "threads")
    if not os.path.exists("/proc/self/status"):
        raise RuntimeError("peak_extra_memory needs Linux (/proc/self/status)")
    reset = os.access(CLEAR_REFS, os.W_OK)
    if not reset:
        warnings.warn(f"{CLEAR_REFS} is not writable here: peak_extra_memory samples the "
                      "resident memory while the call runs instead of reading the kernel's peak "
                      "(coarser)", RuntimeWarning, stacklevel=2)
    # A fixed mmap threshold gives every large tensor its own mapping, returned to the system
    # when freed: memory freed earlier cannot hide a peak by being reused.
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}
    request = {"method": method, "ns": ns, "d": d, "threads": threads, "backward": backward,
               "reset": reset}
    command = [sys.executable, "-m", "course_utils.attention_memory", json.dumps(request)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"measuring {method} at n={n} failed:\n{done.stderr[-2000:]}")
    measured = json.loads(done.stdout)
    return measured[0] if isinstance(n, (int, np.integer)) else measured


if __name__ == "__main__":  # the fresh process of peak_extra_memory
    parser = argparse.ArgumentParser(description="peak extra memory of attention calls (JSON)")
    parser.add_argument("request", help="JSON: method, ns, d, threads, backward, reset")
    print(json.dumps(_probe(**json.loads(parser.parse_args().request))))
