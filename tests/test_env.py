"""course_utils.env: device choice, seeding, the environment report."""

import random
import subprocess
import sys

import numpy as np
import pytest
import torch

from course_utils import env


def test_pick_device_default_is_cuda_else_cpu_never_mps(monkeypatch):
    monkeypatch.delenv(env.DEVICE_ENV_VAR, raising=False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert env.pick_device() == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert env.pick_device() == "cpu"  # MPS only when asked for


def test_mps_is_used_when_asked_for(monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setenv(env.DEVICE_ENV_VAR, "mps")
    assert env.pick_device() == "mps"
    assert env.pick_device("mps") == "mps"
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(ValueError, match="no mps device"):
        env.pick_device()


def fake_gpu(monkeypatch, capability):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *_: capability)


@pytest.mark.parametrize(
    ("capability", "dtype", "backend"),
    [
        ((7, 5), torch.float16, "efficient"),  # a T4: no FlashAttention kernel below sm80
        ((7, 5), torch.float32, "efficient"),
        ((8, 0), torch.float16, "flash"),  # an A100
        ((8, 0), torch.float32, "efficient"),  # FlashAttention takes only half precision
        ((9, 0), torch.bfloat16, "flash"),  # an H100
        ((8, 6), torch.bfloat16, "flash"),
    ],
)
def test_sdpa_backend_follows_the_faked_gpu(monkeypatch, capability, dtype, backend):
    fake_gpu(monkeypatch, capability)
    assert env.cuda_capability() == capability
    assert env.sdpa_backend(env.cuda_capability(), dtype) == backend


def test_no_bfloat16_below_sm80(monkeypatch):
    fake_gpu(monkeypatch, (7, 5))
    assert not env.supports_bfloat16(env.cuda_capability())
    with pytest.raises(ValueError, match="bfloat16 needs compute capability 8.0"):
        env.sdpa_backend((7, 5), torch.bfloat16)
    assert env.supports_bfloat16((8, 0)) and env.supports_bfloat16((9, 0))


def test_without_a_gpu_pytorch_chooses(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert env.cuda_capability() is None
    assert env.sdpa_backend(None, torch.float16) is None
    assert not env.supports_bfloat16(None)


def test_sdpa_kernel_enables_only_the_chosen_backend():
    with env.sdpa_kernel("flash"):
        assert torch.backends.cuda.flash_sdp_enabled()
        assert not torch.backends.cuda.mem_efficient_sdp_enabled()
    with env.sdpa_kernel("efficient"):
        assert torch.backends.cuda.mem_efficient_sdp_enabled()
        assert not torch.backends.cuda.flash_sdp_enabled()
    with env.sdpa_kernel(None):
        assert torch.backends.cuda.flash_sdp_enabled()
    with pytest.raises(ValueError, match="backend must be one of"):
        env.sdpa_kernel("cudnn")


def test_environment_variable_forces_a_device(monkeypatch):
    monkeypatch.setenv(env.DEVICE_ENV_VAR, "CPU")
    assert env.pick_device() == "cpu"


def test_unknown_device_name_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(env.DEVICE_ENV_VAR, "tpu")
    with pytest.raises(ValueError, match="COURSE_DEVICE must be one of"):
        env.pick_device()
    with pytest.raises(ValueError, match="name must be one of"):
        env.pick_device("gpu")
    with pytest.raises(TypeError, match="name must be a str"):
        env.pick_device(0)


def test_environment_report_names_the_gpu_and_its_capability(monkeypatch):
    monkeypatch.delenv(env.DEVICE_ENV_VAR, raising=False)
    fake_gpu(monkeypatch, (7, 5))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *_: "Tesla T4")
    assert env.environment_report()["device"] == "cuda (Tesla T4, compute capability 7.5)"


def test_unavailable_device_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="this machine has no cuda device"):
        env.pick_device("cuda")


def test_seed_everything_makes_every_generator_repeat():
    def draw():
        rng = env.seed_everything(123)
        return (random.random(), np.random.rand(), rng.normal(), torch.rand(1).item())  # noqa: NPY002

    assert draw() == draw()
    first = draw()
    env.seed_everything(124)
    assert (random.random(), np.random.rand()) != first[:2]  # noqa: NPY002


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_seed_out_of_range(seed):
    with pytest.raises(ValueError, match="seed must be in"):
        env.seed_everything(seed)


@pytest.mark.parametrize("seed", [1.5, "0", True])
def test_seed_wrong_type(seed):
    with pytest.raises(TypeError, match="seed must be an int"):
        env.seed_everything(seed)


def test_environment_report_names_versions_device_and_colab(monkeypatch):
    monkeypatch.delenv(env.DEVICE_ENV_VAR, raising=False)
    report = env.environment_report()
    assert report["python"] == ".".join(map(str, sys.version_info[:3]))
    assert report["numpy"] == np.__version__
    assert report["torch"] == torch.__version__
    assert report["device"].split()[0] == env.pick_device()
    assert report["colab"] == "no"
    monkeypatch.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
    assert env.environment_report()["colab"] == "yes"


def test_importing_the_package_does_not_import_torch():
    code = "import sys, course_utils.checks, course_utils.env; print('torch' in sys.modules)"

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_setup_notebook_seeds_sets_print_options_and_the_figure_style():
    import matplotlib

    from course_utils import plotting

    rng = env.setup_notebook(seed=3, precision=2)
    try:
        assert rng.standard_normal() == np.random.default_rng(3).standard_normal()
        same_seed = torch.Generator().manual_seed(3)
        assert torch.rand(1).item() == torch.rand(1, generator=same_seed).item()
        assert np.get_printoptions()["precision"] == 2
        assert torch._tensor_str.PRINT_OPTS.precision == 2
        assert matplotlib.rcParams["figure.facecolor"] == "white"
        assert matplotlib.rcParams["axes.prop_cycle"].by_key()["color"][0] == plotting.PALETTE[0]
    finally:
        np.set_printoptions(precision=8, suppress=False)
        torch.set_printoptions(profile="default")
        matplotlib.rcdefaults()
    with pytest.raises(TypeError, match="precision"):
        env.setup_notebook(precision=2.5)
