"""course_utils.env: device choice, seeding, the environment report."""

import random
import subprocess
import sys

import numpy as np
import pytest
import torch

from course_utils import env


def test_pick_device_default_follows_cuda_mps_cpu_order(monkeypatch):
    monkeypatch.delenv(env.DEVICE_ENV_VAR, raising=False)
    if torch.cuda.is_available():
        expected = "cuda"
    elif torch.backends.mps.is_available():
        expected = "mps"
    else:
        expected = "cpu"
    assert env.pick_device() == expected


def test_pick_device_prefers_cuda_then_mps(monkeypatch):
    monkeypatch.delenv(env.DEVICE_ENV_VAR, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert env.pick_device() == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert env.pick_device() == "mps"
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert env.pick_device() == "cpu"


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
