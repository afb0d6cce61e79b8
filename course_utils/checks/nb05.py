"""Checkers for notebook 05 (exponentials, logarithms and softmax)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np

from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    names_used,
    wraps_answer,
)
from course_utils.softmax import log_softmax


def _own(func: Callable, name: str) -> bool:
    """Whether ``name`` is a function the learner wrote next to ``func`` (a helper of theirs called
    ``softmax`` is no library's)."""
    inner = inspect.unwrap(func)
    value = getattr(inner, "__globals__", {}).get(name)
    return inspect.isfunction(value) and value.__module__ == getattr(inner, "__module__", None)


def _no_library(func: Callable, forbidden: tuple[str, ...], rule: str,
                run: Callable | None = None) -> Callable:
    """``run`` (``func`` itself, or ``func`` inside another rule's watch) refused with
    :class:`RuleBroken` after it returns when ``func``'s code names one of ``forbidden`` (a
    library function that does the exercise's work); ``rule`` says why, with ``{name}``. The other
    rule's verdict, raised during the run, comes first."""
    used = sorted(name for name in names_used(func) & set(forbidden) if not _own(func, name))

    @wraps_answer(func)
    def checked(*args: object) -> object:
        result = (run or func)(*args)
        if used:
            raise RuleBroken(rule.format(name=used[0]))
        return result

    return checked


_SIGMOID_RULE = ("it calls {name}, a library's sigmoid (or softmax): the exercise is to write the "
                 "formula you derived, with np.exp, yourself")
_SIGMOIDS = ("expit", "log_expit", "sigmoid", "softmax", "logistic")
_SOFTMAX_RULE = ("it calls {name}, a library softmax: it does the max shift for you, and for "
                 "float16 input it may compute in float32 inside, where the watch cannot see; the "
                 "rule is to fix the computation in float16 yourself")
_SOFTMAXES = ("softmax", "log_softmax", "_softmax", "Softmax", "scaled_dot_product_attention")
_LOG_SOFTMAX_RULE = ("it calls {name}, a library (log-)softmax: the rule is to build it from "
                     "NumPy's elementwise operations and reductions (max, exp, sum, log)")
_LOG_SOFTMAXES = ("log_softmax", "softmax", "logsumexp", "LogSoftmax")
_LOGADDEXPS = ("logaddexp", "logaddexp2")  # np.logaddexp(0, x) is ln(1 + e^x); .reduce an LSE
_SIGMOID_LOGADDEXP_RULE = ("it calls np.{name}, a library's stable log-sum-exp: "
                           "np.exp(-np.logaddexp(0, -d)) is the sigmoid with the stable form "
                           "found for you; the exercise is to write the formula you derived, "
                           "with np.exp, yourself")
_LOG_SOFTMAX_LOGADDEXP_RULE = ("it calls np.{name}, a library logsumexp (np.logaddexp.reduce "
                               "is LSE along an axis): the rule is to build it from NumPy's "
                               "elementwise operations and reductions (max, exp, sum, log)")


@exercise("predict")
def check_float16_spacing(answer: object) -> CheckResult:
    """The learner's number for the gap between 1000 and the next larger float16: 0.5."""
    return check_number(
        answer, 0.5, name="float16_spacing", label="the gap after 1000 in float16", rtol=0.01,
        explanation="1000 lies between 2^9 = 512 and 2^10 = 1024, so float16 stores it as "
                    "2^9 x (1 + m/1024) with its 10 mantissa bits: neighbours differ by "
                    "2^9 / 2^10 = 0.5. The spacing near 1 (machine epsilon, 2^-10) is multiplied "
                    "by the power of two the number sits in; 1000.2 is stored as 1000.",
    )


def _sigmoid(d):
    d = np.asarray(d, dtype=np.float64)
    e = np.exp(-np.abs(d))  # never overflows: |d| >= 0
    return np.where(d >= 0, 1 / (1 + e), e / (1 + e))


_EXP_UFUNCS = {"exp": "np.exp", "exp2": "np.exp2", "expm1": "np.expm1", "power": "np.power (**)",
               "float_power": "np.float_power", "ldexp": "np.ldexp"}
_TORCH_EXPS = {"exp": "torch.exp", "exp_": "torch.exp", "exp2": "torch.exp2",
               "expm1": "torch.expm1", "pow": "torch.pow (**)", "__pow__": "torch.pow (**)",
               "__rpow__": "torch.pow (**)", "float_power": "torch.float_power"}


def _no_exp_overflow(func: Callable) -> Callable:
    """``func`` run with every exponential watched (NumPy's ``exp``, ``exp2``, ``expm1``,
    ``power`` and ``**``, ``float_power``, ``ldexp``; ``math.exp`` and ``math.pow``; torch's
    ``exp``, ``exp2``, ``pow`` and ``**``): one that turns finite input into inf breaks the rule,
    whether or not its warning was silenced (``np.errstate``). ``d`` arrives as an ndarray
    subclass that reports its ufuncs, so ``np.e ** -d`` is seen as well as ``np.exp(-d)``."""
    import math
    import sys

    overflowed: list[tuple[str, float]] = []

    def note(name: str, inputs: tuple, out: object) -> None:
        if overflowed:
            return
        try:
            out_array = np.asarray(out.detach().cpu() if hasattr(out, "detach") else out)
            arrays = [np.asarray(x.detach().cpu() if hasattr(x, "detach") else x)
                      for x in inputs]
        except (TypeError, ValueError, RuntimeError):
            return
        if out_array.dtype.kind not in "fc":
            return
        finite = np.ones(out_array.shape, dtype=bool)
        for x in arrays:
            if x.dtype.kind in "biufc":
                finite &= np.broadcast_to(np.isfinite(x), out_array.shape)
        bad = np.isinf(out_array) & finite
        if bad.any():
            exponent = arrays[1] if "pow" in name and len(arrays) > 1 else arrays[0]
            exponent = np.broadcast_to(exponent, out_array.shape)
            overflowed.append((name, float(np.max(np.real(exponent[bad])))))

    class Watched(np.ndarray):
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            plain = tuple(x.view(np.ndarray) if isinstance(x, Watched) else x for x in inputs)
            if "out" in kwargs:
                kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, Watched) else x
                                      for x in kwargs["out"])
            out = getattr(ufunc, method)(*plain, **kwargs)
            if method == "__call__" and ufunc.__name__ in _EXP_UFUNCS:
                note(_EXP_UFUNCS[ufunc.__name__], plain, out)
            if isinstance(out, np.ndarray) and type(out) is np.ndarray:
                return out.view(Watched)
            return out

    def watched_ufunc(name: str, real: Callable) -> Callable:
        def watched(*args, **kwargs):
            out = real(*args, **kwargs)
            note(name, args[:2], out)
            return out
        return watched

    def watched_math(name: str, real: Callable) -> Callable:
        def watched(*args):
            try:
                return real(*args)
            except OverflowError:
                x = float(args[-1])
                raise RuleBroken(f"{name} overflowed at x = {x:g}: the rule is no "
                                 "overflow, so use the form that exponentiates only numbers <= 0 "
                                 "for each sign of d") from None
        return watched

    patches = [(np, key, watched_ufunc(label, getattr(np, key)))
               for key, label in _EXP_UFUNCS.items()]
    def kept(real: Callable) -> Callable:  # np.asarray(d) and np.array(d) stay watched
        def keep(x, *args, **kwargs):
            out = real(x, *args, **kwargs)
            return out.view(Watched) if isinstance(x, Watched) and type(out) is np.ndarray else out
        return keep

    patches += [(np, key, kept(getattr(np, key)))
                for key in ("asarray", "array", "asanyarray", "ascontiguousarray", "copy")]
    patches += [(math, "exp", watched_math("math.exp", math.exp)),
                (math, "pow", watched_math("math.pow", math.pow))]

    @wraps_answer(func)
    def checked(d):
        overflowed.clear()
        watch = None
        if "torch" in sys.modules:
            from torch.overrides import TorchFunctionMode

            class Watch(TorchFunctionMode):
                def __torch_function__(self, op, types, args=(), kwargs=None):
                    out = op(*args, **(kwargs or {}))
                    name = getattr(op, "__name__", "")
                    if name in _TORCH_EXPS:
                        note(_TORCH_EXPS[name], tuple(args[:2]), out)
                    return out

            watch = Watch()
        saved = [(module, key, getattr(module, key)) for module, key, _ in patches]
        for module, key, new in patches:
            setattr(module, key, new)
        try:
            arg = np.asarray(d).view(Watched) if isinstance(d, np.ndarray) else d
            if watch is None:
                result = func(arg)
            else:
                with watch:
                    result = func(arg)
        finally:
            for module, key, old in saved:
                setattr(module, key, old)
        if overflowed:
            name, x = overflowed[0]
            raise RuleBroken(f"{name} overflowed to inf at x = {x:g} (silenced or not): the rule "
                             "is no overflow, so use the form that exponentiates only numbers "
                             "<= 0 for each sign of d")
        return result.view(np.ndarray) if isinstance(result, Watched) else result

    return checked


@exercise("derive")
def check_sigmoid(func: Callable) -> CheckResult:
    """``func(d)``: softmax([a, b])[0] as a function of d = a - b alone, 1 / (1 + e^(-d)),
    elementwise on an array, exact at d = +-1000, with no exponential (``np.exp``, ``np.exp2``,
    ``np.power`` or ``**``, ``math.exp``, ``torch.exp`` ...) overflowing to inf (a
    silenced warning does not count), no warning, and no library sigmoid (``scipy.special.expit``,
    ``torch.sigmoid``), softmax or log-sum-exp (``np.logaddexp``)."""
    cases = [
        Case((np.array([0.0]),), "equal scores, d = 0: one half"),
        Case((np.array([np.log(3.0)]),), "d = ln 3: e^d = 3 times the weight, so 3/4"),
        Case((np.array([2.0, 1.0, -1.0, -2.0]),), "d and -d give q and 1 - q"),
        Case((np.array([1000.0]),), "d = 1000: the first score takes everything, 1"),
        Case((np.array([-1000.0]),), "d = -1000: the first score gets e^-1000, 0 in float64"),
        Case((np.linspace(-30, 30, 13),), "13 differences from -30 to 30"),
    ]
    answer = _no_library(func, _LOGADDEXPS, _SIGMOID_LOGADDEXP_RULE,
                         run=_no_library(func, _SIGMOIDS, _SIGMOID_RULE,
                                         run=_no_exp_overflow(func)))
    return check_function(answer, cases=cases, reference=_sigmoid, name="sigmoid",
                          rtol=1e-9, atol=0.0, no_warnings=True)


def _softmax_fp16(scores):
    import torch

    return torch.softmax(scores.double(), dim=-1).to(torch.float16)


def _float16_throughout(func: Callable) -> Callable:
    """``func`` run with every torch operation watched: a floating-point result in another
    dtype than float16 (a detour through float32), or a trip to NumPy, breaks the rule."""
    import torch
    from torch.overrides import TorchFunctionMode

    class Watch(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.detour: str | None = None

        def __torch_function__(self, op, types, args=(), kwargs=None):
            out = op(*args, **(kwargs or {}))
            if self.detour is None:
                name = getattr(op, "__name__", str(op))
                for value in out if isinstance(out, tuple) else (out,):
                    if isinstance(value, np.ndarray):
                        self.detour = f"it leaves torch for NumPy ({name})"
                    elif (isinstance(value, torch.Tensor) and value.is_floating_point()
                          and value.dtype != torch.float16):
                        self.detour = f"it computes in {value.dtype} ({name})"
            return out

    @wraps_answer(func)
    def checked(scores):
        watch = Watch()
        with watch:
            result = func(scores)
        if watch.detour:
            raise RuleBroken(f"{watch.detour}: the rule is to fix the computation in float16 "
                             "itself; a detour through a wider format hides the bug")
        return result

    return checked


@exercise("debug")
def check_softmax_fp16(func: Callable) -> CheckResult:
    """``func(scores)``: the softmax along the last axis of a float16 tensor, computed and
    returned in float16 (every torch operation is watched: no float32 or NumPy detour), finite
    for any finite scores (each row shifted by its own maximum), and written out: a library
    softmax (``torch.softmax``, ``torch.nn.functional.softmax``) is refused."""
    import torch

    def half(values):
        return torch.tensor(values, dtype=torch.float16)

    g = torch.Generator().manual_seed(5)
    batch = (3 * torch.randn(2, 3, 6, generator=g, dtype=torch.float64)).to(torch.float16)
    cases = [
        Case((half([2.0, 1.0, 0.1]),), "small scores [2, 1, 0.1]"),
        Case((half([12.0, 11.0, 10.0]),), "scores above 11.09: e^12 overflows float16"),
        Case((half([[30.0, 28.0, 27.5, 20.0], [1.0, 0.0, -1.0, -2.0]]),),
             "two rows of 4 scores, one with scores near 30"),
        Case((half([[0.0, -1.0, -2.0], [-30.0, -31.0, -32.0]]),),
             "rows 30 apart: shift each row by its own maximum (e^-30 underflows float16)"),
        Case((half([[20.0, 0.0, -5.0]]),), "scores 25 apart: the largest must become 0, not "
                                             "the smallest (e^25 overflows float16)"),
        Case((half([[5.0, 4.0, float("-inf")]]),), "a masked score (-inf) gets weight 0"),
        Case((batch,), "a (2, 3, 6) batch: along the last axis"),
    ]
    answer = _no_library(func, _SOFTMAXES, _SOFTMAX_RULE, run=_float16_throughout(func))
    return check_function(answer, cases=cases, reference=_softmax_fp16,
                          name="softmax_fp16", rtol=4e-3, atol=1e-4, exact_dtype=True)


def _log_softmax(x, axis):
    return log_softmax(np.asarray(x, dtype=np.float64), axis=axis)


@exercise("extend")
def check_log_softmax_along(func: Callable) -> CheckResult:
    """``func(x, axis)``: ln softmax(x) along ``axis`` of an N-D float array, x - LSE(x) with
    each slice shifted by its own maximum; -inf entries stay -inf; ValueError for a slice whose
    entries are all -inf; built from NumPy's elementwise operations and reductions (a library
    log-softmax or logsumexp, np.logaddexp and its .reduce included, is refused)."""
    rng = np.random.default_rng(55)
    cases = [
        Case((np.array([2.0, 1.0, 0.1]), 0), "1-D [2, 1, 0.1]: ln[0.659, 0.242, 0.099]"),
        Case((np.array([0.0, -800.0]), 0), "[0, -800]: -800, not -inf (no log of a softmax)"),
        Case((rng.normal(size=(3, 4)), -1), "a (3, 4) array along its rows (axis=-1)"),
        Case((rng.normal(size=(3, 4)), 0), "a (3, 4) array down its columns (axis=0)"),
        Case((np.array([[1000.0, 999.0], [-1000.0, -1001.0]]), 1),
             "rows 2000 apart: each row's own maximum"),
        Case((np.array([[0.5, -1.8, -np.inf], [1.0, 2.0, 3.0]]), -1),
             "a masked entry stays -inf, its row is still a distribution"),
        Case((rng.normal(size=(2, 3, 4)), 1), "a (2, 3, 4) tensor along the middle axis"),
        Case((np.array([[1.0, 2.0], [-np.inf, -np.inf]]), -1), "a row with every entry masked",
             raises=ValueError),
    ]
    answer = _no_library(func, _LOGADDEXPS, _LOG_SOFTMAX_LOGADDEXP_RULE,
                         run=_no_library(func, _LOG_SOFTMAXES, _LOG_SOFTMAX_RULE))
    return check_function(answer, cases=cases, reference=_log_softmax, name="log_softmax_along",
                          rtol=1e-9, atol=1e-12)
