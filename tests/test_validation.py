"""course_utils.validation: the shared guards, one per kind of argument.

The rule they enforce: ``TypeError`` for a wrong type, ``ValueError`` for a wrong value, both
naming the argument; NumPy scalars are accepted wherever Python numbers are, and ``bool`` is never
a number. That every public function of the package follows it is ``tests/test_arguments.py``.
"""

import math
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

from course_utils.validation import (
    check_attention_inputs,
    check_axis,
    check_bool,
    check_choice,
    check_generator,
    check_int,
    check_last_dim,
    check_real,
    check_rng,
    check_tensor,
    check_torch_module,
    float_array,
    real_array,
)

# ----------------------------------------------------------------------------- the guards


@pytest.mark.parametrize(
    ("value", "bounds", "error", "message"),
    [
        (1.0, {}, TypeError, "n must be an int, got float"),
        (True, {}, TypeError, "n must be an int, got bool"),
        (np.bool_(True), {}, TypeError, "n must be an int, got bool"),
        (0, {}, ValueError, "n must be at least 1, got 0"),
        (-5, {"minimum": 0}, ValueError, "n must be at least 0, got -5"),
        (11, {"minimum": 0, "maximum": 10}, ValueError, r"n must be in \[0, 10\], got 11"),
        (11, {"minimum": None, "maximum": 10}, ValueError, "n must be at most 10, got 11"),
    ],
)
def test_check_int_names_the_argument(value, bounds, error, message):
    with pytest.raises(error, match=message):
        check_int(value, "n", **bounds)


def test_check_int_accepts_numpy_integers_and_no_bound():
    for value in (3, np.int64(3), np.uint8(3), np.int32(3)):
        assert check_int(value, "n") == 3 and type(check_int(value, "n")) is int
    assert check_int(-7, "n", minimum=None) == -7
    assert check_int(np.int64(10), "n", minimum=0, maximum=10) == 10


@pytest.mark.parametrize("value", [0.5, np.float16(0.5), np.float32(0.5), np.float64(0.5)])
def test_check_real_accepts_python_and_numpy_reals(value):
    assert check_real(value, "x") == 0.5 and type(check_real(value, "x")) is float


def test_check_real_accepts_integers():
    for value in (2, np.int64(2), np.uint8(2)):
        assert check_real(value, "x") == 2.0 and type(check_real(value, "x")) is float


@pytest.mark.parametrize("value", [True, np.bool_(False), "0.5", None, 1j, np.array(0.5), [0.5]])
def test_check_real_refuses_what_is_not_a_real_number(value):
    with pytest.raises(TypeError, match=f"^x must be a real number, got {type(value).__name__}$"):
        check_real(value, "x")


@pytest.mark.parametrize(
    ("value", "bounds", "message"),
    [
        (math.nan, {}, "x must be a finite number, got nan"),
        (np.float32("inf"), {}, "x must be a finite number, got inf"),
        (10**400, {}, "x must be a finite number, got 1000"),
        (0.0, {"low": 0, "low_open": True}, "x must be a finite number > 0, got 0.0"),
        (-1, {"low": 0}, "x must be a finite number >= 0, got -1"),
        (2.0, {"high": 1}, "x must be a finite number <= 1, got 2.0"),
        (1.0, {"high": 1, "high_open": True}, "x must be a finite number < 1, got 1.0"),
        (1.0, {"low": 0, "high": 1, "high_open": True}, r"x must be in \[0, 1\), got 1.0"),
        (0.0, {"low": 0, "high": 1, "low_open": True}, r"x must be in \(0, 1\], got 0.0"),
        (math.nan, {"low": 0, "high": 1}, r"x must be in \[0, 1\], got nan"),
    ],
)
def test_check_real_refuses_values_outside_the_interval(value, bounds, message):
    with pytest.raises(ValueError, match=message):
        check_real(value, "x", **bounds)


def test_check_real_keeps_values_on_closed_bounds():
    assert check_real(0, "x", low=0, high=1) == 0.0
    assert check_real(np.float32(1.0), "x", low=0, high=1) == 1.0
    assert check_real(-1e300, "x") == -1e300


def test_check_bool():
    assert check_bool(True, "flag") is True and check_bool(np.bool_(False), "flag") is False
    for value in (1, 0.0, "yes", None):
        with pytest.raises(TypeError, match=f"flag must be a bool, got {type(value).__name__}"):
            check_bool(value, "flag")


def test_check_choice():
    assert check_choice("sum", "reduction", ("mean", "sum")) == "sum"
    with pytest.raises(ValueError, match=r"reduction must be one of \('mean', 'sum'\), got 'max'"):
        check_choice("max", "reduction", ("mean", "sum"))
    with pytest.raises(TypeError, match=r"reduction must be one of \('mean', 'sum'\), got int"):
        check_choice(1, "reduction", ("mean", "sum"))


def test_check_axis():
    assert check_axis(-1, 3) == 2 and check_axis(np.int64(1), 3) == 1
    assert type(check_axis(np.int64(-2), 2)) is int
    with pytest.raises(TypeError, match="axis must be an int, got float"):
        check_axis(0.5, 2)
    with pytest.raises(TypeError, match="axis must be an int, got bool"):
        check_axis(True, 2)
    with pytest.raises(ValueError, match="axis 2 is out of range for an array with 2 dimensions"):
        check_axis(2, 2)
    with pytest.raises(ValueError, match="dim -3 is out of range"):
        check_axis(-3, 2, "dim")
    with pytest.raises(ValueError, match="for an array with 0 dimensions"):
        check_axis(0, 0)


def test_check_rng():
    generator = np.random.default_rng(1)
    assert check_rng(generator) is generator
    assert isinstance(check_rng(None), np.random.Generator)
    expected = np.random.default_rng(5).random()
    assert check_rng(np.int64(5)).random() == check_rng(5).random() == expected
    for value in (1.5, True, "0"):
        with pytest.raises(TypeError, match="rng must be a NumPy Generator, an int seed or None"):
            check_rng(value)
    with pytest.raises(ValueError, match="seed must be at least 0, got -1"):
        check_rng(-1, "seed")


def test_check_generator():
    generator = torch.Generator().manual_seed(0)
    assert check_generator(generator) is generator and check_generator(None) is None
    for value in (0, np.random.default_rng(0), "gen"):
        with pytest.raises(TypeError, match="rng must be a torch.Generator or None, got"):
            check_generator(value, "rng")


@pytest.mark.parametrize(
    ("x", "kwargs", "error", "message"),
    [
        ([[1.0], [2.0, 3.0]], {"what": "matrix"}, ValueError, "x must be a matrix of numbers"),
        (["a", "b"], {}, TypeError, "x must hold real numbers .* got dtype <U1"),
        ([1.0 + 2j], {}, TypeError, "got dtype complex128"),
        ([True], {}, TypeError, "got dtype bool"),
        (np.ones(3), {"ndim": 2, "what": "matrix"}, ValueError, r"x must be a matrix \(2-D\)"),
        (np.ones(3), {"ndim": 2, "what": "array"}, ValueError, r"x must be an array \(2-D\)"),
        (np.ones((0, 2)), {}, ValueError, r"x must not be empty, got shape \(0, 2\)"),
        ([1.0, np.nan], {}, ValueError, "x must hold finite numbers, got NaN or inf"),
        ([1.0, -np.inf], {}, ValueError, "x must hold finite numbers"),
    ],
)
def test_real_array_errors_name_the_argument(x, kwargs, error, message):
    with pytest.raises(error, match=message):
        real_array(x, "x", **kwargs)


def test_real_array_keeps_the_numbers_and_their_dtype():
    ints = real_array([[1, 2], [3, 4]], "a", ndim=2, what="matrix")
    assert ints.dtype.kind == "i" and ints.shape == (2, 2)
    floats = real_array(np.array([0.5, -1.5], dtype=np.float32), "v", ndim=1)
    np.testing.assert_array_equal(floats, [0.5, -1.5])
    assert floats.dtype == np.float32
    assert real_array(np.float32(2.5), "s").shape == ()


@pytest.mark.parametrize(
    ("x", "error", "message"),
    [
        (torch.ones(2), TypeError, r"z must be a NumPy array or list, got a torch tensor"),
        ([[1.0], [2.0, 3.0]], ValueError, "z must be a rectangular array of numbers"),
        (["a"], TypeError, "z must hold real numbers, got dtype <U1"),
        ([], ValueError, r"z must not be empty, got shape \(0,\)"),
        ([1.0, np.nan], ValueError, "z contains NaN"),
    ],
)
def test_float_array_errors_name_the_argument(x, error, message):
    with pytest.raises(error, match=message):
        float_array(x, "z")


def test_float_array_converts_integers_and_keeps_floats_and_infinity():
    assert float_array([1, 2], "z").dtype == np.float64
    assert float_array([True, False], "z").dtype == np.float64
    assert float_array(np.ones(2, dtype=np.float16), "z").dtype == np.float16
    np.testing.assert_array_equal(float_array([-np.inf, 1.0], "z"), [-np.inf, 1.0])


def test_check_tensor():
    x = torch.ones(2, 3)
    assert check_tensor(x, "x") is x
    assert check_tensor(torch.ones(2, dtype=torch.long), "ids", dtype=None) is not None
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got ndarray"):
        check_tensor(np.ones(2), "x")
    with pytest.raises(TypeError, match="x must be a floating-point tensor, got torch.int64"):
        check_tensor(torch.ones(2, dtype=torch.long), "x")
    with pytest.raises(TypeError, match=r"mask must be a boolean tensor \(True = attend\), got "):
        check_tensor(x, "mask", dtype=torch.bool, what="tensor (True = attend)")
    with pytest.raises(TypeError, match="ids must be an int64 tensor, got torch.float32"):
        check_tensor(x, "ids", dtype=torch.long)
    with pytest.raises(ValueError, match=r"x must have at least 3 dimensions, got shape \(2, 3\)"):
        check_tensor(x, "x", min_ndim=3)


def test_check_last_dim_keeps_any_leading_shape():
    for shape in ((4,), (2, 4), (2, 3, 4)):
        x = torch.ones(shape, dtype=torch.float64)
        assert check_last_dim(x, 4) is x


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (np.ones(4), TypeError, "^h must be a torch.Tensor, got ndarray$"),
        ([1.0, 2.0, 3.0, 4.0], TypeError, "^h must be a torch.Tensor, got list$"),
        (None, TypeError, "^h must be a torch.Tensor, got NoneType$"),
        (torch.ones(4, dtype=torch.long), TypeError,
         "^h must be a floating-point tensor, got torch.int64$"),
        (torch.ones(2, 3), ValueError, r"^h must have last dimension d_model=4, got shape \(2, 3"),
        (torch.ones(4, 2), ValueError, r"got shape \(4, 2\)$"),
        (torch.tensor(4.0), ValueError, r"^h must have last dimension d_model=4, got shape \(\)$"),
    ],
)
def test_check_last_dim_names_the_argument(value, error, message):
    with pytest.raises(error, match=message):
        check_last_dim(value, 4, "h")


def test_check_last_dim_names_x_by_default():
    with pytest.raises(ValueError, match=r"^x must have last dimension d_model=8, got shape"):
        check_last_dim(torch.ones(3), 8)


def test_check_torch_module_returns_the_module_itself():
    norm, subclass = nn.LayerNorm(4), type("MyNorm", (nn.LayerNorm,), {})(4)
    assert check_torch_module(norm, nn.LayerNorm) is norm
    assert check_torch_module(subclass, nn.LayerNorm) is subclass


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (nn.RMSNorm(4), "^norm must be an nn.LayerNorm, got RMSNorm$"),
        (nn.Linear(4, 4), "^norm must be an nn.LayerNorm, got Linear$"),
        (nn.LayerNorm, "^norm must be an nn.LayerNorm, got type$"),
        (None, "^norm must be an nn.LayerNorm, got NoneType$"),
        ("LayerNorm", "^norm must be an nn.LayerNorm, got str$"),
    ],
)
def test_check_torch_module_names_the_argument(value, message):
    with pytest.raises(TypeError, match=message):
        check_torch_module(value, nn.LayerNorm, "norm")


def test_check_torch_module_names_module_by_default():
    with pytest.raises(TypeError, match="^module must be an nn.TransformerEncoderLayer, got Li"):
        check_torch_module(nn.Linear(2, 2), nn.TransformerEncoderLayer)


def test_check_attention_inputs_returns_the_sizes_and_the_scale():
    q, k, v = torch.ones(2, 3, 4), torch.ones(2, 5, 4), torch.ones(2, 5, 7)
    assert check_attention_inputs(q, k, v, None) == (3, 5, 4, 0.5)
    lq, lk, d, scale = check_attention_inputs(q, k, v, np.float32(0.25))
    assert (lq, lk, d, scale) == (3, 5, 4, 0.25) and type(scale) is float
    assert check_attention_inputs(torch.ones(3, 4), torch.ones(1, 2, 5, 4), v, 2,
                                  same_leading=False)[:3] == (3, 5, 4)


@pytest.mark.parametrize(
    ("shapes", "change", "error", "message"),
    [
        (((3, 4), (5, 4), (5, 2)), {"scale": "0.5"}, TypeError, "scale must be a real number"),
        (((3, 4), (5, 4), (5, 2)), {"scale": True}, TypeError, "scale must be a real number"),
        (((3, 4), (5, 4), (5, 2)), {"scale": 0.0}, ValueError, "scale must be a finite number > 0"),
        (((3, 4), (5, 4), (5, 2)), {"scale": math.nan}, ValueError, "scale must be a finite"),
        (((3, 4), (5, 4), (5, 2)), {"q": [[1.0]]}, TypeError, "q must be a torch.Tensor"),
        (((3, 4), (5, 4), (5, 2)), {"k": torch.ones(5, 4, dtype=torch.long)}, TypeError,
         "k must be a floating-point tensor"),
        (((3, 4), (5, 4), (5, 2)), {"v": torch.ones(5, 2).double()}, TypeError,
         "q, k and v must share a dtype"),
        (((3, 4), (5, 4), (5, 2)), {"v": torch.ones(5, 2, device="meta")}, ValueError,
         "q, k and v must be on one device"),
        (((4,), (5, 4), (5, 2)), {}, ValueError, r"q must have at least 2 dimensions"),
        (((3, 4), (5, 3), (5, 2)), {}, ValueError, "q and k must have the same last axis d_k"),
        (((3, 0), (5, 0), (5, 2)), {}, ValueError, r"q must not be empty, got shape \(3, 0\)"),
        (((3, 4), (5, 4), (6, 2)), {}, ValueError, r"k and v must have the same length Lk"),
    ],
)
def test_check_attention_inputs_errors(shapes, change, error, message):
    arguments = dict(zip("qkv", (torch.ones(*shape) for shape in shapes), strict=True))
    arguments = {**arguments, "scale": None, **change}
    with pytest.raises(error, match=message):
        check_attention_inputs(**arguments)


def test_importing_validation_does_not_import_torch():
    code = "import sys, course_utils.validation; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"
