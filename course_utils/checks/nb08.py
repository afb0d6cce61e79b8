"""Checkers for notebook 08: a new autograd operation, a backward pass that accumulates, Adam's
uncorrected step size, and the FLOPs of a backward pass."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.autograd import Value
from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    wraps_answer,
)


def _sigmoid_value_and_grad(x: float) -> tuple[float, float]:
    from scipy.special import expit

    s = float(expit(x))
    return s, s * (1 - s)


@exercise("extend")
def check_sigmoid(func: Callable[[Value], Value]) -> CheckResult:
    """``func(v)`` must return a Value node for 1 / (1 + e^-v) whose backward gives s (1 - s),
    without overflow at v = ±800."""

    @wraps_answer(func)
    def value_and_grad(x: float) -> tuple[float, float]:
        v = Value(x)
        out = func(v)
        if not isinstance(out, Value):
            raise TypeError(f"sigmoid must return a Value, got {type(out).__name__}")
        out.backward()
        return out.data, v.grad

    cases = [
        Case((0.0,), "sigmoid(0) = 0.5, slope 0.25"),
        Case((2.0,), "x = 2"),
        Case((-3.0,), "x = -3"),
        Case((30.0,), "x = 30: saturated, slope almost 0"),
        Case((800.0,), "x = 800: exactly 1, slope 0"),
        Case((-800.0,), "x = -800: e^800 overflows, so use e^x / (1 + e^x) for x < 0"),
    ]
    return check_function(value_and_grad, cases=cases, reference=_sigmoid_value_and_grad,
                          name="sigmoid", names=("sigmoid(x)", "d sigmoid / dx"))


def _neuron() -> tuple[Value, list[Value]]:
    w, x, b = Value(0.5), Value(2.0), Value(-0.3)
    return ((w * x + b).tanh() - 1.0) ** 2, [w, x, b]


def _square_plus() -> tuple[Value, list[Value]]:
    a = Value(3.0)
    return a * a + a, [a]


def _shared() -> tuple[Value, list[Value]]:
    x, y = Value(1.5), Value(-2.0)
    return x * y + x * x * y + (x / y).exp(), [x, y]


def _long_sum() -> tuple[Value, list[Value]]:
    x = Value(0.7)
    total = x
    for _ in range(29):
        total = total + x
    return total * total, [x]


def _deep_tanh() -> tuple[Value, list[Value]]:
    x = Value(0.4)
    out = x
    for _ in range(50):
        out = (out * 1.1).tanh() + 0.01 * x
    return out, [x]


_GRAPHS = {
    "the neuron of section 1: every value used once": _neuron,
    "a*a + a at a = 3: a is used three times, so 2a + 1 = 7": _square_plus,
    "x*y + x*x*y + exp(x/y): both leaves reach the loss along several paths": _shared,
    "x added 30 times, then squared: 30 contributions to x": _long_sum,
    "50 nested tanh layers with x added at each: deep and reused": _deep_tanh,
}


def _leaf_grads_by_engine(label: str) -> np.ndarray:
    root, leaves = _GRAPHS[label]()
    root.backward()
    return np.array([leaf.grad for leaf in leaves])


def _refuse_backward(self: Value) -> None:
    raise RuleBroken("the rule is to write the backward pass yourself: root.backward() was "
                     "called; use topological_order and the nodes' parents and local_grads")


@exercise("debug")
def check_backward(func: Callable[[Value], None]) -> CheckResult:
    """``func(root)`` must fill ``.grad`` of every node ``root`` depends on, adding up the
    contributions of a value used several times (``+=``, not ``=``); ``Value.backward`` raises
    :class:`RuleBroken` while ``func`` runs."""

    @wraps_answer(func)
    def leaf_grads(label: str) -> np.ndarray:
        root, leaves = _GRAPHS[label]()
        original = Value.backward
        Value.backward = _refuse_backward  # type: ignore[method-assign]
        try:
            func(root)
        finally:
            Value.backward = original  # type: ignore[method-assign]
        return np.array([leaf.grad for leaf in leaves])

    cases = [Case((label,), label) for label in _GRAPHS]
    return check_function(leaf_grads, cases=cases, reference=_leaf_grads_by_engine,
                          name="backward", rtol=1e-9, atol=1e-12)


def _uncorrected_by_recurrence(t: np.ndarray, lr: float, beta1: float,
                               beta2: float) -> np.ndarray:
    """Adam's recurrences run step by step for g = 1 (any constant g gives the same size)."""
    steps = np.atleast_1d(np.asarray(t))
    m = v = 0.0
    sizes = {}
    for k in range(1, int(steps.max()) + 1):
        m, v = beta1 * m + (1 - beta1), beta2 * v + (1 - beta2)
        sizes[k] = lr * m / np.sqrt(v)
    return np.array([sizes[int(k)] for k in steps]).reshape(np.shape(t))


_LOOP_RULE = (
    "the rule is a formula in t that takes an array of step numbers; with t = {t} it raised "
    "{error}: a loop over the steps cannot take an array"
)
_SIMULATION_RULE = (
    "the rule is a formula, not a simulation: at t = {t} it gave the sizes of steps {steps}, as a "
    "loop over range(int(t)) does; a formula in t has a value between two steps"
)


def _uncorrected_formula(t: np.ndarray, lr: float, beta1: float, beta2: float) -> np.ndarray:
    return lr * (1 - beta1 ** np.asarray(t)) / np.sqrt(1 - beta2 ** np.asarray(t))


@exercise("derive")
def check_uncorrected_step(func: Callable[..., np.ndarray]) -> CheckResult:
    """``func(t, lr, beta1, beta2)``: the size of Adam's step t without bias correction, for a
    constant gradient and eps = 0, lr (1 - beta1^t) / sqrt(1 - beta2^t); t is an array of steps,
    a TypeError on it means a loop, and at a t between two steps the size of the earlier step
    means a simulation (both :class:`RuleBroken`)."""

    @wraps_answer(func)
    def sizes(t: np.ndarray, lr: float, beta1: float, beta2: float) -> object:
        try:
            got = func(t, lr, beta1, beta2)
        except TypeError as error:
            raise RuleBroken(_LOOP_RULE.format(t=np.asarray(t).tolist(),
                                               error=f"TypeError: {error}")) from None
        steps = np.floor(np.asarray(t, dtype=np.float64))
        if np.any(steps != t):                 # between two steps: only a formula has a value
            by_steps = _uncorrected_by_recurrence(steps, lr, beta1, beta2)
            try:
                simulated = np.allclose(np.asarray(got, dtype=np.float64), by_steps, rtol=1e-9)
            except (TypeError, ValueError):
                simulated = False
            if simulated:
                raise RuleBroken(_SIMULATION_RULE.format(t=np.asarray(t).tolist(),
                                                         steps=steps.astype(int).tolist()))
        return got

    cases = [
        Case((np.array([1]), 0.1, 0.9, 0.999), "step 1 with the defaults: 3.16 lr"),
        Case((np.array([1, 2, 3, 12]), 0.1, 0.9, 0.999),
             "steps 1, 2, 3, 12: it grows to about 6.6 lr at step 12"),
        Case((np.array([100, 1000, 10000]), 1e-3, 0.9, 0.999),
             "steps 100 to 10 000: back towards lr as beta2^t fades"),
        Case((np.array([1, 5, 50]), 1.0, 0.5, 0.5), "beta1 = beta2 = 0.5"),
        Case((np.array([1, 10]), 0.01, 0.99, 0.9),
             "beta1 = 0.99 > beta2 = 0.9: smaller than lr early on"),
        Case((np.array([2.5, 12.5]), 0.1, 0.9, 0.999),
             "t = 2.5 and 12.5, between two steps: a formula in t has a value there",
             expected=_uncorrected_formula(np.array([2.5, 12.5]), 0.1, 0.9, 0.999)),
    ]
    return check_function(sizes, cases=cases, reference=_uncorrected_by_recurrence,
                          name="uncorrected_step", rtol=1e-9)


_FLOPS_EXPLANATION = (
    "P = 64·256 + 256·64 = 32 768 weights. Each layer's backward computes Xᵀ G and G Wᵀ, "
    "2·N·D_in·D_out FLOPs each, 4NP = 13 107 200 in all; but the first layer's input is the data, "
    "so its dℒ/dX (2·100·64·256 = 3 276 800) is not computed: 9 830 400 FLOPs."
)


@exercise("predict")
def check_backward_flops(answer: object) -> CheckResult:
    """The backward FLOPs of 64 -> 256 -> 64 on 100 rows of data: 4NP - 2·N·64·256."""
    return check_number(answer, 9_830_400.0, name="backward_flops", rtol=0.01,
                        label="backward FLOPs of 64 -> 256 -> 64 on 100 rows",
                        explanation=_FLOPS_EXPLANATION)
