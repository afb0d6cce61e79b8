"""Checkers for notebook 08: a new autograd operation, a backward pass that accumulates, Adam's
uncorrected step size, and the FLOPs of a backward pass."""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import torch

from course_utils.autograd import Value, topological_order
from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    lines_run,
    names_used,
    wraps_answer,
)


def _sigmoid_value_and_grad(x: float) -> tuple[float, float]:
    from scipy.special import expit

    s = float(expit(x))
    return s, s * (1 - s)


_ONE_NODE_RULE = (
    "the rule is one new node whose only parent is v, with the local derivative you derived: the "
    "node returned has {parents}; a chain of the engine's operations lets their backward pass "
    "find the derivative for you. Compute o as a number and return Value(o, (v,), (your "
    "derivative written with o,), \"sigmoid\")"
)


_OWN_SLOPE_RULE = (
    "the rule is one new node with the local derivative you derived: {found}. A backward pass run "
    "on a copy (the engine's or PyTorch's), or a numerical slope, finds the derivative for you: "
    "compute it from your own formula, as section 1 wrote the slope of tanh as 1 - a²"
)

# The backward passes an answer must not run, found by their code objects while it runs, so that
# the same function saved under another name (engine_backward = Value.backward) is found too.
_BACKWARD_PASSES = {
    "Value.backward (the engine's backward pass)": Value.backward,
    "Tensor.backward (PyTorch's backward pass)": torch.Tensor.backward,
    "torch.autograd.backward (PyTorch's backward pass)": torch.autograd.backward,
    "torch.autograd.grad (PyTorch's backward pass)": torch.autograd.grad,
}
_BACKWARD_CODES = {id(f.__code__): name for name, f in _BACKWARD_PASSES.items()}
# Names that find a derivative without a backward pass: symbolic differentiation (sympy), one
# node of PyTorch's graph (grad_fn, aten's sigmoid_backward), a complex-step slope (.imag).
_DERIVERS = {"sympy": "sympy", "diff": "sympy's diff", "grad_fn": "PyTorch's grad_fn",
             "sigmoid_backward": "PyTorch's sigmoid_backward", "imag": "a complex step (.imag)"}


def _backward_passes_run(func: Callable, *args: object) -> tuple[object, list[str]]:
    """``func(*args)`` and the names of the backward passes of ``_BACKWARD_PASSES`` that ran
    while it ran (watched with ``sys.setprofile``, restored afterwards), first called first."""
    ran: list[str] = []

    def profile(frame, event, arg):
        name = _BACKWARD_CODES.get(id(frame.f_code)) if event == "call" else None
        if name is not None and name not in ran:
            ran.append(name)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        return func(*args), ran
    finally:
        sys.setprofile(previous)


def _watching_nodes(func: Callable[[Value], Value], v: Value) -> tuple[object, int, list[str]]:
    """``func(v)``, the number of ``Value`` nodes it built and the backward passes it ran."""
    built = 0
    real_init = Value.__init__

    def init(self, *args, **kwargs):
        nonlocal built
        built += 1
        real_init(self, *args, **kwargs)

    Value.__init__ = init  # type: ignore[method-assign]
    try:
        out, ran = _backward_passes_run(func, v)
    finally:
        Value.__init__ = real_init  # type: ignore[method-assign]
    return out, built, ran


@exercise("extend")
def check_sigmoid(func: Callable[[Value], Value]) -> CheckResult:
    """``func(v)`` must return one new Value node for 1 / (1 + e^-v), whose only parent is v and
    whose local derivative is o (1 - o), without overflow at v = ±800. Refused with
    :class:`RuleBroken`: a chain of the engine's operations, a backward pass run while it runs
    (the engine's or PyTorch's), more than one node built, and by name sympy, ``grad_fn`` and a
    complex step. The slope is compared to rtol 1e-12, so a finite-difference slope fails. The
    same slope written in v instead of o passes: it is the same derivative."""

    derivers = [what for name, what in _DERIVERS.items() if name in names_used(func)]

    @wraps_answer(func)
    def value_and_grad(x: float) -> tuple[float, float]:
        if derivers:
            raise RuleBroken(_OWN_SLOPE_RULE.format(found=f"it uses {derivers[0]}"))
        v = Value(x)
        out, built, ran = _watching_nodes(func, v)
        if not isinstance(out, Value):
            raise TypeError(f"sigmoid must return a Value, got {type(out).__name__}")
        parents = tuple(out.parents)
        if out is v or len(parents) != 1 or parents[0] is not v:
            found = ("no parents" if not parents else
                     f"{len(parents)} parents" if len(parents) > 1 else
                     "one parent that is not v")
            raise RuleBroken(_ONE_NODE_RULE.format(parents="v itself" if out is v else found))
        if ran:
            raise RuleBroken(_OWN_SLOPE_RULE.format(found=f"it ran {ran[0]}"))
        if built > 1:
            raise RuleBroken(_OWN_SLOPE_RULE.format(found=f"it built {built} Value nodes"))
        out.backward()
        return out.data, v.grad

    cases = [
        Case((0.0,), "sigmoid(0) = 0.5, slope 0.25"),
        Case((2.0,), "x = 2"),
        Case((-3.0,), "x = -3"),
        Case((30.0,), "x = 30: saturated, slope almost 0"),
        Case((800.0,), "x = 800: exactly 1, slope 0"),
        Case((-800.0,), "x = -800: e^800 overflows a float; for x < 0 write the fraction with "
                        "e^x alone"),
    ]
    # rtol 1e-12: o (1 - o) agrees to a few roundings; a numerical slope is off by about 1e-11
    return check_function(value_and_grad, cases=cases, reference=_sigmoid_value_and_grad,
                          name="sigmoid", names=("sigmoid(x)", "d sigmoid / dx"),
                          rtol=1e-12, atol=1e-15, no_warnings=True)


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


def _leaf_grads_walking_forwards(label: str) -> np.ndarray:
    """The mistake of walking topological_order from its start instead of from the root."""
    root, leaves = _GRAPHS[label]()
    order = topological_order(root)
    for node in order:
        node.grad = 0.0
    root.grad = 1.0
    for node in order:
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            parent.grad += local * node.grad
    return np.array([leaf.grad for leaf in leaves])


_FORWARD_ORDER = (
    "these are the gradients of a walk through topological_order from its start: that list puts "
    "every node after its parents, so a node passes its grad on before the nodes that use it "
    "have added theirs (most stay 0); walk it from the end, the root first"
)

_ALL_ZERO = (
    "every leaf gradient is 0: either the root's grad was not 1 when the walk began, or the walk "
    "ran through topological_order from its start, so the root's 1 reached only its own parents, "
    "at the very end"
)


_OWN_BACKWARD_RULE = ("the rule is to write the backward pass yourself: {found}; use "
                      "topological_order and the nodes' parents and local_grads")


def _refuse_backward(self: Value) -> None:
    raise RuleBroken(_OWN_BACKWARD_RULE.format(found="root.backward() was called"))


@exercise("debug")
def check_backward(func: Callable[[Value], None]) -> CheckResult:
    """``func(root)`` must fill ``.grad`` of every node ``root`` depends on, adding up the
    contributions of a value used several times (``+=``, not ``=``); ``Value.backward`` raises
    :class:`RuleBroken` while ``func`` runs, the engine's backward pass saved under another name
    (or PyTorch's) is found by its code and refused, and a walk of the order from its start is
    named."""

    @wraps_answer(func)
    def leaf_grads(label: str) -> np.ndarray:
        root, leaves = _GRAPHS[label]()
        original = Value.backward
        Value.backward = _refuse_backward  # type: ignore[method-assign]
        try:
            _, ran = _backward_passes_run(func, root)
        finally:
            Value.backward = original  # type: ignore[method-assign]
        if ran:  # root.backward() itself is refused above: the engine's ran under another name
            found = (f"{ran[0]} ran, under another name (saved before the check, it is the same "
                     "function)" if ran[0].startswith("Value.") else f"{ran[0]} ran")
            raise RuleBroken(_OWN_BACKWARD_RULE.format(found=found))
        got = np.array([leaf.grad for leaf in leaves])
        forwards = _leaf_grads_walking_forwards(label)
        right = _leaf_grads_by_engine(label)
        if not np.allclose(got, right):
            if got.shape == right.shape and np.all(got == 0):
                raise RuleBroken(_ALL_ZERO)
            if np.allclose(got, forwards):
                raise RuleBroken(_FORWARD_ORDER)
        return got

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
    "{error}: a loop over the steps, or a function of math (math.sqrt, math.exp), cannot take an "
    "array: use NumPy's (np.sqrt) or ** 0.5"
)
_SIMULATION_RULE = (
    "the rule is a formula, not a simulation: at t = {t} it gave the sizes of steps {steps}, as a "
    "loop over range({rounding}(t)) does; a formula in t has a value between two steps"
)


_LINE_BUDGET = 200  # a formula runs a handful of lines whatever t is
_LINE_BUDGET_RULE = (
    "{lines} lines of your code ran for t = {t}, more than " + str(_LINE_BUDGET) + ": it loops "
    "over the steps: the rule is a formula in t"
)


def _uncorrected_formula(t: np.ndarray, lr: float, beta1: float, beta2: float) -> np.ndarray:
    return lr * (1 - beta1 ** np.asarray(t)) / np.sqrt(1 - beta2 ** np.asarray(t))


@exercise("derive")
def check_uncorrected_step(func: Callable[..., np.ndarray]) -> CheckResult:
    """``func(t, lr, beta1, beta2)``: the size of Adam's step t without bias correction, for a
    constant gradient and eps = 0, lr (1 - beta1^t) / sqrt(1 - beta2^t); t is an array of steps,
    a TypeError on it means a loop, more than 200 lines run (a loop over the steps, even with a
    fractional last step) too, and at a t between two steps the size of the step before or after
    it means a simulation (all :class:`RuleBroken`)."""

    @wraps_answer(func)
    def sizes(t: np.ndarray, lr: float, beta1: float, beta2: float) -> object:
        try:
            got, lines = lines_run(func, t, lr, beta1, beta2)
        except TypeError as error:
            raise RuleBroken(_LOOP_RULE.format(t=np.asarray(t).tolist(),
                                               error=f"TypeError: {error}")) from None
        if lines > _LINE_BUDGET:
            raise RuleBroken(_LINE_BUDGET_RULE.format(lines=lines, t=np.asarray(t).tolist()))
        times = np.asarray(t, dtype=np.float64)
        if np.any(np.floor(times) != times):   # between two steps: only a formula has a value
            for rounding, steps in (("int", np.floor(times)), ("ceil", np.ceil(times))):
                by_steps = _uncorrected_by_recurrence(steps, lr, beta1, beta2)
                try:
                    simulated = np.allclose(np.asarray(got, dtype=np.float64), by_steps,
                                            rtol=1e-9)
                except (TypeError, ValueError):
                    simulated = False
                if simulated:
                    raise RuleBroken(_SIMULATION_RULE.format(
                        t=times.tolist(), steps=steps.astype(int).tolist(), rounding=rounding))
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
    "64 -> 256 -> 128 -> 64 on N = 100 rows of data, the first layer frozen. Layer 3 computes "
    "Xᵀ G for its weights and G Wᵀ for its input, because layer 2 below it is trained: "
    "2 · 2·100·128·64 = 3 276 800. Layer 2 computes only Xᵀ G, 2·100·256·128 = 6 553 600: "
    "below its input there are only the frozen layer 1 and the data, so its dℒ/dX is needed by "
    "nobody. Layer 1 computes nothing. In all 9 830 400 FLOPs."
)
_P = 64 * 256 + 256 * 128 + 128 * 64  # 57 344 weights in matrices
_FLOPS_MISTAKES = {
    4 * 100 * _P: "4NP, every product of every layer: a frozen layer needs no gradient, and "
                  "nothing needs a dℒ/dX below the first trained layer",
    4 * 100 * _P - 2 * 100 * 64 * 256: "4NP less layer 1's dℒ/dX, as for a network whose layers "
                                       "are all trained: the frozen layer 1 needs no dℒ/dW either, "
                                       "and then layer 2's dℒ/dX is needed by nobody",
    4 * 100 * _P - 4 * 100 * 64 * 256: "layer 1 left out, but layer 2 still computes its dℒ/dX: "
                                       "below its input there are only frozen weights and the "
                                       "data, so nobody needs it",
    2 * 100 * _P: "2NP, the forward pass",
    2 * 100 * 256 * 128 + 2 * 100 * 128 * 64: "only the weight gradients: layer 3 must also "
                                              "compute its dℒ/dX, since layer 2 below it is "
                                              "trained and needs it",
}
_FLOPS_HINT = (
    "go through the layers from the top; for each, which of its two products, Xᵀ G for its "
    "weights and G Wᵀ for its input, does a trained layer somewhere below still need?"
)


@exercise("predict")
def check_backward_flops(answer: object) -> CheckResult:
    """The backward FLOPs of 64 -> 256 -> 128 -> 64 on 100 rows of data with the first layer
    frozen: layer 3's two products and layer 2's Xᵀ G only, 9 830 400; the plausible mistakes
    are named."""
    label = "backward FLOPs of 64 -> 256 -> 128 -> 64, first layer frozen, on 100 rows"
    return check_number(answer, 9_830_400.0, name="backward_flops", rtol=0.01, label=label,
                        explanation=_FLOPS_EXPLANATION, hint=_FLOPS_HINT,
                        mistakes=_FLOPS_MISTAKES)
