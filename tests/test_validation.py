"""course_utils.validation: the shared guards, and the one rule every public function follows.

The rule: ``TypeError`` for a wrong type, ``ValueError`` for a wrong value, both naming the
argument; NumPy scalars are accepted wherever Python numbers are, and ``bool`` is never a number.
"""

import importlib
import inspect
import io
import math
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

import matplotlib
import numpy as np
import pytest
import torch
from torch import nn

from course_utils import (
    attention,
    autograd,
    calculus,
    data,
    env,
    information,
    language_model,
    layers,
    linalg,
    optim,
    positional,
    sampling,
    softmax,
    stats,
    training,
)
from course_utils.validation import (
    check_axis,
    check_bool,
    check_choice,
    check_int,
    check_qkv,
    check_real,
    check_rng,
    check_tensor,
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


def test_check_qkv_returns_the_sizes_and_the_scale():
    q, k, v = torch.ones(2, 3, 4), torch.ones(2, 5, 4), torch.ones(2, 5, 7)
    assert check_qkv(q, k, v, None) == (3, 5, 4, 0.5)
    lq, lk, d, scale = check_qkv(q, k, v, np.float32(0.25))
    assert (lq, lk, d, scale) == (3, 5, 4, 0.25) and type(scale) is float
    assert check_qkv(torch.ones(3, 4), torch.ones(1, 2, 5, 4), v, 2)[:3] == (3, 5, 4)


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
        (((3, 0), (5, 0), (5, 2)), {}, ValueError, "same last axis d_k >= 1"),
        (((3, 4), (5, 4), (6, 2)), {}, ValueError, r"k and v must have the same length Lk"),
    ],
)
def test_check_qkv_errors(shapes, change, error, message):
    arguments = dict(zip("qkv", (torch.ones(*shape) for shape in shapes), strict=True))
    arguments = {**arguments, "scale": None, **change}
    with pytest.raises(error, match=message):
        check_qkv(**arguments)


def test_importing_validation_does_not_import_torch():
    code = "import sys, course_utils.validation; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


# ------------------------------------------------------------ one rule for the whole package

MODULES = (attention, autograd, calculus, data, env, information, language_model, layers, linalg,
           optim, positional, sampling, softmax, stats, training)
NUMBER_TYPES = {"int", "float", "Number"}  # an annotation naming one of these takes a number
RECORDS = {linalg.PowerIterationResult, data.Batch}  # results and batches the package builds


@dataclass(frozen=True)
class Row:
    """``func(**kwargs)`` is a valid call; ``name`` is one of its numeric arguments, ``numpy`` a
    valid value of it as a NumPy scalar (None: its value in ``kwargs`` as ``np.int64``);
    ``wrong_type`` and ``wrong_value`` (None: every value of the type is valid) must be refused.
    ``kwargs`` may be a factory, for arguments that a call changes; ``call`` replaces ``func`` to
    turn the result into something comparable."""

    func: Callable
    kwargs: dict | Callable[[], dict]
    name: str
    numpy: np.generic | None
    wrong_type: object
    wrong_value: object
    call: Callable | None = None

    @property
    def id(self) -> str:
        return f"{self.func.__module__.rsplit('.', 1)[1]}.{self.func.__qualname__}-{self.name}"


def ints(func, kwargs, names, wrong_value=0, call=None):
    """A row per name in ``names``: an int argument whose valid value is in ``kwargs``."""
    return [Row(func, kwargs, name, None, 2.5, wrong_value, call) for name in names]


def _valid(row: Row) -> dict:
    return row.kwargs() if callable(row.kwargs) else row.kwargs


def _vocab():
    pairs = data.number_pairs(12)
    return pairs, data.Vocabulary.from_sentences(s for pair in pairs for s in pair)


def _transformer(vocab):
    return layers.Transformer(layers.TransformerConfig(
        d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0,
        src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), max_len=12))


def _seq2seq():
    pairs, vocab = _vocab()
    return {"model": _transformer(vocab), "pairs": pairs[:3], "vocab": vocab, "batch_size": 2,
            "max_len": 3}


def _translate():
    _, vocab = _vocab()
    return {"model": _transformer(vocab), "sentences": ["1 2"], "vocab": vocab, "max_len": 3}


def _loader():
    pairs, vocab = _vocab()
    return {"pairs": pairs, "vocab": vocab, "batch_size": 5, "seed": 3}


def _batches(**kwargs):
    return list(data.BatchLoader(**kwargs))


def _train_kwargs():
    pairs, vocab = _vocab()
    model = _transformer(vocab)
    return {"model": model, "batches": [data.make_batch(pairs, vocab)], "n_steps": 2,
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1), "progress": False}


def _decode_kwargs():
    pairs, vocab = _vocab()
    src = data.pad_sequences([vocab.encode(s, add_eos=True) for s, _ in pairs[:3]], vocab.pad_id)
    return {"model": _transformer(vocab), "src": src, "src_padding_mask": src != vocab.pad_id,
            "bos_id": 1, "eos_id": 2, "max_len": 3}


def _bar(**kwargs):
    bar = training.ProgressBar(**kwargs, file=io.StringIO())
    return bar.total, bar.width, bar.every, bar.render(3)


def _setup_notebook(**kwargs):
    with np.printoptions(), matplotlib.rc_context():
        rng = env.setup_notebook(**kwargs)
    torch.set_printoptions(profile="default")
    return rng


def _lm():
    config = language_model.LMConfig(13, 16, 1, 4, 2, 32, 16)
    return {"model": language_model.DecoderLM(config), "prompt_ids": torch.tensor([[1, 2, 3]]),
            "max_new_tokens": 2, "temperature": 0.5, "top_k": 3, "top_p": 0.75,
            "generator": torch.Generator().manual_seed(0)}


LM_CONFIG = {"vocab_size": 13, "d_model": 16, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2,
             "d_ff": 32, "max_len": 16, "rope_base": 100.0, "eps": 1e-6}
TRANSFORMER = {"src_vocab_size": 11, "tgt_vocab_size": 13, "d_model": 8, "n_heads": 2, "d_ff": 16,
               "n_encoder_layers": 1, "n_decoder_layers": 1, "dropout": 0.25, "max_len": 12,
               "eps": 1e-5}
KV = {"n_layers": 2, "n_kv_heads": 2, "head_dim": 8, "n_tokens": 5, "bytes_per_value": 2,
      "batch_size": 3}
P, Q = [0.25, 0.75], [0.5, 0.5]
X = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
QKV = {"q": torch.randn(2, 3, 4), "k": torch.randn(2, 5, 4), "v": torch.randn(2, 5, 6)}
LOGITS = torch.tensor([[2.0, 1.0, 0.5, -1.0], [0.0, 3.0, 1.0, 1.0]])
def _sample():
    return {"logits": LOGITS, "generator": torch.Generator().manual_seed(0)}

F, ARR = (lambda t: np.sum(np.asarray(t) ** 2)), np.array([1.0, -2.0])


def _optimizer():
    return {"params": [np.ones((2, 2)), np.zeros(3)], "lr": 0.1}


ROWS = [
    # calculus
    Row(calculus.derivative, {"f": lambda t: t**3}, "x", np.float32(1.5), "1", math.nan),
    Row(calculus.derivative, {"f": lambda t: t**3, "x": 1.0}, "h", np.float32(0.5), "1", 0.0),
    Row(calculus.numerical_jacobian, {"f": lambda t: t**2, "x": ARR}, "h", np.float32(0.5),
        "h", -1.0),
    Row(calculus.numerical_gradient, {"f": F, "x": ARR}, "h", np.float64(0.25), None, math.inf),
    Row(calculus.gradient_check, {"f": F, "grad": lambda t: 2 * t, "x": ARR}, "h",
        np.float32(0.5), [0.5], 0.0),
    Row(calculus.softmax_jacobian, {"z": X}, "axis", np.int64(-1), -1.0, 2),
    # information
    Row(information.entropy, {"p": P}, "axis", np.int64(-1), 0.5, 1),
    Row(information.entropy, {"p": P}, "base", np.float32(2.0), "2", 1.0),
    Row(information.cross_entropy, {"p": P, "q": Q}, "axis", np.int64(0), 0.5, -2),
    Row(information.cross_entropy, {"p": P, "q": Q}, "base", np.int64(10), "e", -2.0),
    Row(information.cross_entropy, {"p": P, "q": Q}, "clip", np.float32(0.25), "0", 1.0),
    Row(information.kl_divergence, {"p": P, "q": Q}, "axis", np.int64(0), 0.0, 1),
    Row(information.kl_divergence, {"p": P, "q": Q}, "base", np.float64(2.0), "2", 0.0),
    Row(information.cross_entropy_from_logits, {"logits": X, "targets": np.array([0, 2])},
        "ignore_index", np.int64(2), 2.0, None),
    # softmax
    *[Row(f, {"x": X}, "axis", np.int64(0), 0.5, 2) for f in
      (softmax.softmax, softmax.log_softmax, softmax.logsumexp)],
    *[Row(f, {"x": X}, "temperature", np.float32(0.5), "1", 0.0) for f in
      (softmax.softmax, softmax.log_softmax)],
    # linalg
    *ints(linalg.matmul_flops, {"m": 2, "k": 3, "n": 4}, ("m", "k", "n")),
    Row(linalg.power_iteration, {"a": np.diag([3.0, 1.0])}, "max_iters", np.int64(5), 5.0, 0),
    Row(linalg.power_iteration, {"a": np.diag([3.0, 1.0])}, "tol", np.float32(0.125), "1e-3",
        1.0),
    Row(linalg.power_iteration, {"a": np.diag([3.0, 1.0])}, "seed", np.int64(7), 7.0, -1),
    # stats
    Row(stats.mean, {"x": X}, "axis", np.int64(1), 1.0, 2),
    Row(stats.variance, {"x": X}, "ddof", np.int64(1), 1.0, -1),
    Row(stats.variance, {"x": X}, "axis", np.int64(-1), "-1", -3),
    Row(stats.std, {"x": X}, "ddof", np.int64(1), 1.5, -1),
    Row(stats.std, {"x": X}, "axis", np.int64(0), 0.0, 2),
    Row(stats.standardize, {"x": X}, "axis", np.int64(0), 0.0, 2),
    Row(stats.standardize, {"x": X}, "eps", np.float32(0.5), "0", -1.0),
    Row(stats.sample_categorical, {"probs": P, "rng": 0}, "n", np.int64(5), 5.0, 0),
    Row(stats.sample_categorical, {"probs": P, "n": 5}, "rng", np.int64(3), 3.0, -1),
    Row(stats.empirical_frequencies, {"samples": [0, 1, 1]}, "n_categories", np.int64(3), 3.0, 0),
    *ints(stats.dot_product_samples, {"d_k": 4, "n_samples": 10, "rng": 0}, ("d_k", "n_samples")),
    Row(stats.dot_product_samples, {"d_k": 4, "n_samples": 10}, "rng", np.int64(3), 3.0, -1),
    Row(stats.dot_product_variance, {"d_ks": [4], "rng": 0}, "n_samples", np.int64(10), 10.0, 1),
    Row(stats.dot_product_variance, {"d_ks": [4], "n_samples": 10}, "rng", np.uint8(3), 3.0, -1),
    Row(stats.normal_pdf, {"x": X}, "mean", np.float32(0.5), "0", math.inf),
    Row(stats.normal_pdf, {"x": X}, "std", np.float32(1.5), "1", 0.0),
    # optim
    *[Row(cls, _optimizer, name, np.float32(0.5), "0.1", -1.0)
      for cls, names in ((optim.Optimizer, ("lr",)),
                         (optim.SGD, ("lr", "momentum", "weight_decay")),
                         (optim.Adam, ("lr", "eps", "weight_decay")),
                         (optim.AdamW, ("lr", "eps", "weight_decay"))) for name in names],
    # autograd
    Row(autograd.Value, {}, "data", np.float32(1.5), "1", math.nan),
    Row(autograd.Value.__pow__, lambda: {"self": autograd.Value(2.0)}, "exponent",
        np.float32(0.5), [2], math.inf),
    # positional
    *[Row(f, {"d_model": 6}, "base", np.float32(100.0), "100", 1.0) for f in
      (positional.angular_frequencies, positional.wavelengths)],
    *ints(positional.angular_frequencies, {"d_model": 6}, ("d_model",)),
    *ints(positional.wavelengths, {"d_model": 6}, ("d_model",)),
    *ints(positional.sinusoidal_encoding, {"n_positions": 3, "d_model": 4},
          ("n_positions", "d_model"), wrong_value=-2),
    Row(positional.sinusoidal_encoding, {"n_positions": 3, "d_model": 4}, "base",
        np.float64(50.0), "50", 0.5),
    Row(positional.relative_position_matrix, {"d_model": 4}, "k", np.float32(-2.5), "1", math.nan),
    *ints(positional.relative_position_matrix, {"k": 1, "d_model": 4}, ("d_model",)),
    Row(positional.relative_position_matrix, {"k": 1, "d_model": 4}, "base", np.int64(2), "2", 1),
    Row(positional.apply_rope, {"x": torch.randn(3, 4), "positions": [0, 1, 2]}, "base",
        np.float32(100.0), "1e4", -1.0),
    # attention
    *ints(attention.causal_mask, {"lq": 3, "lk": 4}, ("lq", "lk"), wrong_value=-1),
    Row(attention.padding_mask, {"lengths": [1, 3]}, "max_len", np.int64(4), 4.0, -1),
    Row(attention.scaled_dot_product_attention, QKV, "scale", np.float32(0.5), "0.5", -1.0),
    Row(attention.scaled_dot_product_attention, QKV, "dropout_p", np.float32(0.25), "0.1", 1.0),
    *ints(attention.split_heads, {"x": torch.randn(2, 3, 8), "n_heads": 2}, ("n_heads",)),
    *ints(attention.MultiHeadAttention, {"d_model": 8, "n_heads": 2}, ("d_model", "n_heads")),
    Row(attention.MultiHeadAttention, {"d_model": 8, "n_heads": 2}, "dropout", np.float32(0.25),
        "0.1", -0.5),
    # layers
    *ints(layers.FeedForward, {"d_model": 4, "d_ff": 8}, ("d_model", "d_ff")),
    Row(layers.FeedForward, {"d_model": 4, "d_ff": 8}, "dropout", np.float32(0.25), "0", 1.0),
    *[Row(cls, {"d_model": 4}, "eps", np.float32(1e-5), "1e-5", 0.0)
      for cls in (layers.LayerNorm, layers.RMSNorm)],
    *ints(layers.LayerNorm, {"d_model": 4}, ("d_model",)),
    *ints(layers.RMSNorm, {"d_model": 4}, ("d_model",)),
    # the blocks, the model and the count take a TransformerConfig: its fields are the numbers
    *ints(layers.TransformerConfig, TRANSFORMER,
          [n for n in TRANSFORMER if n not in ("dropout", "eps")]),
    Row(layers.TransformerConfig, TRANSFORMER, "dropout", np.float32(0.25), "0", 1.0),
    Row(layers.TransformerConfig, TRANSFORMER, "eps", np.float32(1e-5), "0", 0.0),
    # training
    *ints(training.warmup_lr, {"step": 3, "d_model": 16, "warmup": 4}, ("step", "d_model",
                                                                        "warmup")),
    Row(training.warmup_lr, {"step": 3, "d_model": 16, "warmup": 4}, "scale", np.float32(0.5),
        "1", 0.0),
    *[Row(training.warmup_scheduler,
          lambda: {"optimizer": torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=1.0),
                   "d_model": 16, "warmup": 4}, name, numpy, wrong_type, wrong_value,
          lambda **kw: training.warmup_scheduler(**kw).get_last_lr())
      for name, numpy, wrong_type, wrong_value in (("d_model", np.int64(16), 16.0, 0),
                                                   ("warmup", np.int64(4), "4", -1),
                                                   ("scale", np.float32(2.0), "2", -1.0))],
    Row(training.sequence_loss, {"logits": LOGITS[None], "targets": torch.tensor([[1, 3]])},
        "pad_id", np.int64(0), 0.5, None),
    Row(training.sequence_loss, {"logits": LOGITS[None], "targets": torch.tensor([[1, 3]]),
                                 "pad_id": 0}, "label_smoothing", np.float32(0.25), "0.1", 1.5),
    *ints(training.ProgressBar, {"total": 10, "width": 20, "redraws": 4},
          ("total", "width", "redraws"), call=_bar),
    *[Row(f, lambda: {"self": training.ProgressBar(10, file=io.StringIO())}, "done", np.int64(3),
          3.0, 11) for f in (training.ProgressBar.render, training.ProgressBar.update)],
    Row(training.train, _train_kwargs, "n_steps", np.int64(2), 2.0, 0),
    Row(training.train, _train_kwargs, "label_smoothing", np.float32(0.25), "0.1", -0.5),
    Row(training.train, _train_kwargs, "clip_norm", np.float32(0.5), "1", 0.0),
    *ints(training.greedy_decode, _decode_kwargs, ("bos_id", "eos_id"), wrong_value=-1),
    *ints(training.greedy_decode, _decode_kwargs, ("max_len",)),
    *ints(training.translate, _translate, ("max_len",)),
    *ints(training.exact_match, _seq2seq, ("batch_size", "max_len")),
    # data
    *[Row(f, {}, "n", np.int64(3047), 3047.0, -1)
      for f in (data.number_to_words, data.number_to_digits)],
    Row(data.number_pairs, {}, "n_numbers", np.int64(5), 5.0, 0),
    Row(data.split_pairs, {"pairs": data.number_pairs(10)}, "test_fraction", np.float32(0.25),
        "0.2", 1.0),
    Row(data.split_pairs, {"pairs": data.number_pairs(10)}, "seed", np.int64(3), 3.0, -1),
    Row(data.pad_sequences, {"sequences": [[3, 4], [5]]}, "pad_id", np.int64(0), 0.0, None),
    *ints(data.BatchLoader, _loader, ("batch_size",), call=_batches),
    *ints(data.BatchLoader, _loader, ("seed",), wrong_value=-1, call=_batches),
    # env
    Row(env.seed_everything, {}, "seed", np.int64(7), 7.0, -1),
    *ints(env.setup_notebook, {"seed": 3, "precision": 2}, ("seed", "precision"), wrong_value=-1,
          call=_setup_notebook),
    # sampling
    Row(sampling.check_filters, {"top_p": None}, "top_k", np.int64(2), 2.0, 0),
    Row(sampling.check_filters, {"top_k": None}, "top_p", np.float32(0.5), "0.5", 0.0),
    *[row for f, kwargs in ((sampling.filter_probs, {"logits": LOGITS}), (sampling.sample, _sample))
      for row in (Row(f, kwargs, "temperature", np.float32(0.5), "1", 0.0),
                  Row(f, kwargs, "top_k", np.int64(2), 2.0, 0),
                  Row(f, kwargs, "top_p", np.float64(0.5), "0.9", 1.5))],
    # language_model
    *ints(language_model.LMConfig, LM_CONFIG, [n for n in LM_CONFIG if n not in ("rope_base",
                                                                                  "eps")]),
    Row(language_model.LMConfig, LM_CONFIG, "rope_base", np.float32(100.0), "1e4", 1.0),
    Row(language_model.LMConfig, LM_CONFIG, "eps", np.float32(1e-6), "0", 0.0),
    *ints(language_model.kv_cache_bytes, KV, [n for n in KV if n != "n_tokens"]),
    *ints(language_model.kv_cache_bytes, KV, ["n_tokens"], wrong_value=-1),
    Row(language_model.forward_flops, {"config": language_model.LMConfig(**LM_CONFIG)}, "n_new",
        np.int64(3), 3.0, 0),
    Row(language_model.forward_flops, {"config": language_model.LMConfig(**LM_CONFIG),
                                       "n_new": 3}, "n_past", np.int64(2), 2.0, -1),
    *ints(language_model.generate, _lm, ["max_new_tokens"], wrong_value=-1),
    Row(language_model.generate, _lm, "temperature", np.float32(0.5), "0.5", -0.5),
    Row(language_model.generate, _lm, "top_k", np.int64(3), 3.0, 0),
    Row(language_model.generate, _lm, "top_p", np.float32(0.75), "0.9", 0.0),
]


def _call(row: Row, value: object) -> object:
    """``row``'s valid call with ``value`` for its argument, from the same random state."""
    torch.manual_seed(0)
    np.random.seed(0)  # noqa: NPY002 - a code path may use the global state
    return (row.call or row.func)(**{**_valid(row), row.name: value})


def _same(a: object, b: object) -> None:
    """``a`` and ``b`` are equal: the same types, numbers, arrays, tensors and attributes."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    elif isinstance(a, np.random.Generator):
        assert a.bit_generator.state == b.bit_generator.state
    elif isinstance(a, nn.Module):
        _same(a.state_dict(), b.state_dict())
        _same([_public(m) for m in a.modules()], [_public(m) for m in b.modules()])
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif hasattr(a, "__slots__"):
        _same([getattr(a, s) for s in a.__slots__], [getattr(b, s) for s in b.__slots__])
    elif hasattr(a, "__dict__") and not callable(a):
        _same(_public(a), _public(b))
    else:
        assert a == b


def _public(obj: object) -> dict:
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def _naming(name: str) -> str:
    return rf"(?<![\w\[]){re.escape(name)}(?![\w\]])"


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_every_number_argument_follows_the_rule(row: Row) -> None:
    numpy = np.int64(_valid(row)[row.name]) if row.numpy is None else row.numpy
    python = numpy.item()
    assert type(python) in (int, float)
    _same(_call(row, numpy), _call(row, python))
    for wrong in (row.wrong_type, True):
        with pytest.raises(TypeError, match=_naming(row.name)):
            _call(row, wrong)
    if row.wrong_value is not None:
        with pytest.raises(ValueError, match=_naming(row.name)):
            _call(row, row.wrong_value)


def _top_level_union(annotation: str) -> list[str]:
    """``"int | tuple[int, str] | None"`` -> ``["int", "tuple[int, str]", "None"]``."""
    parts, depth, current = [], 0, ""
    for char in annotation:
        depth += (char in "[(") - (char in "])")
        if char == "|" and depth == 0:
            parts, current = [*parts, current.strip()], ""
        else:
            current += char
    return [*parts, current.strip()]


def _numeric_arguments() -> set[str]:
    """``module.qualname-argument`` for every argument annotated as a number of every public
    function, class and public method of the modules."""
    found = set()
    for module in MODULES:
        names = getattr(module, "__all__", None) or [
            name for name, obj in vars(module).items()
            if not name.startswith("_") and callable(obj)
            and getattr(obj, "__module__", None) == module.__name__
        ]
        for obj in (getattr(module, name) for name in names):
            if obj in RECORDS:
                continue
            methods = [m for n, m in vars(obj).items() if inspect.isfunction(m)
                       and not n.startswith("_")] if inspect.isclass(obj) else []
            for func in (obj, *methods):
                for p in inspect.signature(func).parameters.values():
                    if NUMBER_TYPES & set(_top_level_union(str(p.annotation))):
                        found.add(f"{module.__name__.rsplit('.', 1)[1]}.{func.__qualname__}"
                                  f"-{p.name}")
    return found


def test_the_table_covers_every_number_argument() -> None:
    assert len(MODULES) == 15 and all(importlib.import_module(m.__name__) for m in MODULES)
    covered = {row.id for row in ROWS}
    assert len(covered) == len(ROWS), "a row is listed twice"
    missing = _numeric_arguments() - covered
    assert not missing, f"add rows to ROWS for {sorted(missing)}"
