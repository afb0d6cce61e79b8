"""The learner's environment: which device to compute on, what its GPU supports, seeding, and a
version report."""

from __future__ import annotations

import os
import platform
import random
import sys
from importlib import metadata

import numpy as np

from course_utils.validation import check_capability, check_choice, check_int

DEVICE_ENV_VAR = "COURSE_DEVICE"
KNOWN_DEVICES = ("cuda", "mps", "cpu")


def in_colab() -> bool:
    """True inside Google Colab (its kernel imports ``google.colab`` at start-up)."""
    return "google.colab" in sys.modules


def pick_device(name: str | None = None) -> str:
    """Return the device to compute on: ``"cuda"`` when there is one, else ``"cpu"``.

    ``name`` (or else the environment variable ``COURSE_DEVICE``) forces one device; asking for
    an unknown name, or for one this machine does not have, raises ``ValueError``. Apple's
    ``"mps"`` is used only when asked for: it has given silently wrong results in attention
    operations (PyTorch issues 163597, 181133, 197636).
    """
    import torch

    available = {
        "cuda": torch.cuda.is_available(),
        "mps": hasattr(torch.backends, "mps") and torch.backends.mps.is_available(),
        "cpu": True,
    }
    source = "name"
    if name is None:
        name = os.environ.get(DEVICE_ENV_VAR) or None
        source = f"environment variable {DEVICE_ENV_VAR}"
    if name is None:
        return "cuda" if available["cuda"] else "cpu"
    if not isinstance(name, str):
        raise TypeError(f"name must be a str such as 'cpu', got {type(name).__name__}")
    wanted = check_choice(name.strip().lower(), source, KNOWN_DEVICES)
    if not available[wanted]:
        raise ValueError(f"{source} asks for {wanted!r}, but this machine has no {wanted} device")
    return wanted


# Compute capabilities (major, minor) of NVIDIA GPUs: 7.5 is Turing (Colab's free T4), 8.0 Ampere
# (A100), 9.0 Hopper (H100).
FLASH_ATTENTION_CAPABILITY = (8, 0)  # PyTorch's FlashAttention backend: sm80+, float16/bfloat16
BFLOAT16_CAPABILITY = (8, 0)  # bfloat16 arithmetic in hardware
SDPA_BACKENDS = ("flash", "efficient", "math")


def cuda_capability() -> tuple[int, int] | None:
    """The compute capability ``(major, minor)`` of the current CUDA GPU, or None without one."""
    import torch

    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability()
    return int(major), int(minor)


def supports_bfloat16(capability: tuple[int, int] | None) -> bool:
    """True when a GPU of this compute capability computes in bfloat16 (sm80+)."""
    capability = check_capability(capability)
    return capability is not None and capability >= BFLOAT16_CAPABILITY


def sdpa_backend(capability: tuple[int, int] | None, dtype) -> str | None:
    """The fastest backend of ``F.scaled_dot_product_attention`` a GPU of this compute
    capability offers for ``dtype``: ``"flash"`` (FlashAttention: sm80+, float16 or bfloat16),
    else ``"efficient"`` (memory-efficient attention, any CUDA GPU PyTorch supports); None for
    no GPU (``capability`` None: PyTorch picks its CPU kernel)."""
    import torch

    capability = check_capability(capability)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
    if capability is None:
        return None
    half = dtype in (torch.float16, torch.bfloat16)
    if dtype == torch.bfloat16 and not supports_bfloat16(capability):
        raise ValueError(f"bfloat16 needs compute capability 8.0+, this GPU has {capability}")
    return "flash" if half and capability >= FLASH_ATTENTION_CAPABILITY else "efficient"


def sdpa_kernel(backend: str | None):
    """A context manager that makes ``F.scaled_dot_product_attention`` use ``backend`` (one of
    ``SDPA_BACKENDS``; None: PyTorch's own choice)."""
    import contextlib

    from torch.nn.attention import SDPBackend
    from torch.nn.attention import sdpa_kernel as torch_sdpa_kernel

    if backend is None:
        return contextlib.nullcontext()
    check_choice(backend, "backend", SDPA_BACKENDS)
    names = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "math": "MATH"}
    return torch_sdpa_kernel(getattr(SDPBackend, names[backend]))


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python's ``random``, NumPy's global state and torch (CPU and GPU).

    Returns a fresh ``np.random.default_rng(seed)``, the generator the notebooks use.
    """
    seed = check_int(seed, "seed", minimum=0, maximum=2**32 - 1)
    import torch

    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - legacy global state, seeded for third-party code
    torch.manual_seed(seed)  # seeds the CPU and every GPU
    return np.random.default_rng(seed)


def setup_notebook(seed: int = 0, precision: int = 4) -> np.random.Generator:
    """The first lines of every notebook, as one call: seed everything, print rounded numbers,
    draw in the course's figure style.

    Seeds Python, NumPy and torch with :func:`seed_everything`, sets NumPy's and torch's print
    precision to ``precision`` digits (no scientific notation for small numbers), applies
    :func:`course_utils.plotting.use_course_style`, and returns ``np.random.default_rng(seed)``.
    """
    precision = check_int(precision, "precision", minimum=0)
    rng = seed_everything(seed)
    import torch

    from course_utils.plotting import use_course_style

    np.set_printoptions(precision=precision, suppress=True)
    torch.set_printoptions(precision=precision, sci_mode=False)
    use_course_style()
    return rng


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment_report() -> dict[str, str]:
    """Versions of Python, NumPy, PyTorch, Matplotlib (and Triton), the device, and Colab or not."""
    import torch

    device = pick_device()
    capability = cuda_capability()
    if device == "cuda" and capability is not None:
        major, minor = capability
        device = f"cuda ({torch.cuda.get_device_name(0)}, compute capability {major}.{minor})"
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "matplotlib": _version("matplotlib"),
        "triton": _version("triton"),
        "device": device,
        "colab": "yes" if in_colab() else "no",
    }


def print_environment_report() -> None:
    """Print :func:`environment_report` as an aligned table."""
    for key, value in environment_report().items():
        print(f"{key:<11} {value}")
