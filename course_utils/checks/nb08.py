"""Checkers for notebook 08: a sigmoid node, a backward pass that adds up, Adam's step, FLOPs."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial, reduce

import numpy as np

from course_utils.autograd import Value, topological_order
from course_utils.checks import Case, CheckResult, check_function, check_number, exercise


def _node(sigmoid: Callable[[Value], Value], x: float) -> tuple[float, str, float]:
    v = Value(x)
    out = sigmoid(v)
    if not isinstance(out, Value):
        raise TypeError(f"sigmoid must return a Value, got {type(out).__name__}")
    parents = ("v itself" if out is v else "v alone" if out.parents == (v,) else
               f"{len(out.parents)} parent(s), not v alone")
    out.backward()
    return out.data, parents, v.grad


def _sigmoid(v: Value, slope: Callable[[float], float] = lambda o: o * (1 - o)) -> Value:
    e = math.exp(-abs(v.data))  # e^-v for v >= 0, e^v below: never e^800
    o = 1 / (1 + e) if v.data >= 0 else e / (1 + e)
    return Value(o, (v,), (slope(o),), "sigmoid")


@exercise("extend")
def check_sigmoid(func: Callable[[Value], Value]) -> CheckResult:
    """``func(v)``: one new Value for sigmoid(v) = 1 / (1 + e^-v) whose only parent is v, with the
    local derivative o (1 - o): value and slope to rtol 1e-12, no warning or overflow at ±800."""
    cases = [Case((x,), label) for x, label in [
        (0.0, "sigmoid(0) = 0.5, slope 0.25"), (2.0, "x = 2"), (-3.0, "x = -3"),
        (30.0, "x = 30: saturated, slope almost 0"), (800.0, "x = 800: exactly 1, slope 0"),
        (-800.0, "x = -800: e^800 overflows a float; for x < 0 write it with e^x alone")]]
    mistakes = {
        "a chain of the engine's operations: its backward pass finds the derivative for you; "
        "build one node, Value(o, (v,), (your derivative,), 'sigmoid')": partial(_node, lambda v:
            1 / (1 + (-v).exp()) if v.data >= 0 else v.exp() / (1 + v.exp())),
        "its local derivative is o itself: differentiate (1 + e^-v)^-1 with the chain rule":
            partial(_node, partial(_sigmoid, slope=lambda o: o))}
    return check_function(partial(_node, func), cases=cases, reference=partial(_node, _sigmoid),
                          names=("sigmoid(v)", "its parents", "d sigmoid / dv"), name="sigmoid",
                          rtol=1e-12, atol=1e-15, no_warnings=True, mistakes=mistakes, code=func,
                          shortcuts=("backward", "grad", "grad_fn", "diff", "sigmoid", "expit"))


_GRAPHS: dict[str, tuple[tuple[float, ...], Callable[..., Value]]] = {  # leaves, root(*leaves)
    "the neuron of section 1: every value used once":
        ((0.5, 2.0, -0.3), lambda w, x, b: ((w * x + b).tanh() - 1.0) ** 2),
    "a*a + a at a = 3: a is used three times, so 2a + 1 = 7": ((3.0,), lambda a: a * a + a),
    "x*y + x*x*y + exp(x/y): both leaves reach the loss along several paths":
        ((1.5, -2.0), lambda x, y: x * y + x * x * y + (x / y).exp()),
    "x added 30 times, then squared: 30 contributions to x":
        ((0.7,), lambda x: reduce(lambda total, _: total + x, range(29), x) ** 2),
    "50 nested tanh layers with x added at each: deep and reused":
        ((0.4,), lambda x: reduce(lambda out, _: (out * 1.1).tanh() + 0.01 * x, range(50), x)),
    "h*h + h with h = tanh(a) at a = 0.5: the node h has two users, and must hear from both":
        ((0.5,), lambda a: (lambda h: h * h + h)(a.tanh())),
    "u*u + u with u = t*t, t = tanh(x*y): a reused node above another reused node":
        ((0.8, -0.6), lambda x, y: (lambda u: u * u + u)((lambda t: t * t)((x * y).tanh())))}


def _grads(backward: Callable[[Value], None], label: str, again: bool = False) -> np.ndarray:
    values, build = _GRAPHS[label]
    leaves = [Value(value) for value in values]
    root = build(*leaves)
    if again:
        root.backward()  # the grads of an earlier pass stay in the nodes
    backward(root)
    return np.array([leaf.grad for leaf in leaves])


def _send(root: Value) -> None:
    """The given function: each node hands its grad on at once, and again at every visit."""
    root.grad = 1.0

    def send(node: Value) -> None:
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            parent.grad += local * node.grad
            send(parent)

    send(root)


def _backward(root: Value, seed=1.0, forwards=False, assign=False) -> None:
    order = topological_order(root)
    for node in order:
        node.grad = 0.0
    root.grad = seed
    for node in order if forwards else reversed(order):
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            parent.grad = local * node.grad + (0.0 if assign else parent.grad)


@exercise("debug")
def check_backward(func: Callable[[Value], None]) -> CheckResult:
    """``func(root)``: every node's grad d root / d node, adding up the contributions of a value
    used several times (``+=``), each node passing its grad on once, after all of its users (a
    reverse topological order), whatever the grads held before."""
    again = "x*y + x*x*y + exp(x/y) again, its grads still holding an earlier pass's: start from 0"
    cases = [Case((g,), g) for g in _GRAPHS] + [Case((list(_GRAPHS)[2], True), again)]
    mistakes = {  # the first that gives the same numbers names the answer's mistake
        "it adds to the grads an earlier pass left (as root.backward() does): set them to 0 first":
            partial(_grads, Value.backward),
        "still the bug: a node hands its grad on before all of its users have added theirs, and "
        "hands it on again at each later visit: walk the nodes once each, in reverse "
        "topological order": partial(_grads, _send),
        "parent.grad = ... keeps only the last contribution; add them up":
            partial(_grads, partial(_backward, assign=True)),
        "every leaf gradient is 0: the root's grad was not 1 when the walk began, or the walk "
        "began at the start of topological_order": partial(_grads, partial(_backward, seed=0)),
        "a walk from the start of topological_order: a node passes its grad on before its users "
        "have added theirs; walk from the end": partial(_grads, partial(_backward, forwards=True))}
    return check_function(partial(_grads, func), cases=cases, mistakes=mistakes, rtol=1e-9,
                          reference=partial(_grads, _backward), name="backward", atol=1e-12,
                          code=func, shortcuts=("backward",))


def _formula(t: np.ndarray, lr: float, beta1: float, beta2: float) -> np.ndarray:
    return lr * (1 - beta1**t) / np.sqrt(1 - beta2**t)


@exercise("derive")
def check_uncorrected_step(func: Callable[..., np.ndarray]) -> CheckResult:
    """``func(t, lr, beta1, beta2)``: Adam's step t without bias correction (constant gradient,
    eps = 0), lr (1 - beta1^t) / sqrt(1 - beta2^t), for an array t, between steps and at inf."""
    cases = [Case((np.array(t), lr, b1, b2), label) for t, lr, b1, b2, label in [
        ([1], 0.1, 0.9, 0.999, "step 1 with the defaults: 3.16 lr"),
        ([1, 2, 3, 12], 0.1, 0.9, 0.999, "steps 1, 2, 3, 12 as one array: about 6.6 lr at 12"),
        ([100, 1000, 10000], 1e-3, 0.9, 0.999, "steps 100 to 10 000: back towards lr"),
        ([1, 5, 50], 1.0, 0.5, 0.5, "beta1 = beta2 = 0.5"),
        ([1, 10], 0.01, 0.99, 0.9, "beta1 = 0.99 > beta2 = 0.9: smaller than lr early on"),
        ([2.5, 12.5], 0.1, 0.9, 0.999, "t = 2.5 and 12.5, between two steps: a formula has a "
                                       "value there"),
        ([np.inf], 0.1, 0.9, 0.999, "t = inf: the limit, lr itself, which no loop reaches")]]
    whole = ("these are the sizes of the whole steps {}(t), as a loop over range({}(t)) gives: a "
             "formula in t has a value between two steps")
    mistakes = {whole.format("int", "int"): lambda t, *args: _formula(np.floor(t), *args),
                whole.format("ceil", "ceil"): lambda t, *args: _formula(np.ceil(t), *args),
                "no square root over v_t": lambda t, lr, b1, b2: lr * (1 - b1**t) / (1 - b2**t),
                "lr at every step: that is the corrected step": lambda t, lr, b1, b2: lr + 0 * t,
                "beta1 and beta2 swapped": lambda t, lr, b1, b2: _formula(t, lr, b2, b1),
                "the first step's size at every t": lambda t, *args: _formula(1 + 0 * t, *args)}
    return check_function(func, cases=cases, reference=_formula, mistakes=mistakes,
                          name="uncorrected_step", rtol=1e-9)


@exercise("predict")
def check_backward_flops(answer: object, *, show_answer: bool = False) -> CheckResult:
    """The backward FLOPs of 64 -> 256 -> 128 -> 64 on 100 rows, the first layer frozen: layer 3's
    two products and layer 2's Xᵀ G only, 9 830 400."""
    return check_number(
        answer, 9_830_400.0, name="backward_flops", rtol=0.01, show_answer=show_answer,
        label="backward FLOPs of 64 -> 256 -> 128 -> 64, first layer frozen, on 100 rows",
        explanation="Layer 3: Xᵀ G for its weights and G Wᵀ for its input (layer 2 below it is "
                    "trained), 2 · 2·100·128·64 = 3 276 800. Layer 2: Xᵀ G only, 2·100·256·128 = "
                    "6 553 600 (below its input lie only the frozen layer 1 and the data). "
                    "Layer 1: nothing. In all 9 830 400 FLOPs.",
        hint="from the top layer down: which of Xᵀ G (for W) and G Wᵀ (for X) does each one need?",
        mistakes={  # P = 57 344 weights in matrices, N = 100
            22_937_600: "4NP, every product of every layer: a frozen layer needs no gradient",
            19_660_800: "4NP less layer 1's dℒ/dX: the frozen layer 1 needs no dℒ/dW either",
            16_384_000: "layer 1 left out, but layer 2 still computes its dℒ/dX: nobody needs it",
            11_468_800: "2NP, the forward pass",
            8_192_000: "only the weight gradients: layer 3's dℒ/dX is needed by layer 2 below"})
