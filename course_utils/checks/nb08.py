"""Checkers for notebook 08: a new autograd operation, backpropagation by hand, the chain rule
for a matrix product, an Adam step."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.autograd import Value
from course_utils.checks import Case, CheckResult, check_function, wraps_answer
from course_utils.optim import Adam


def _sigmoid_value_and_grad(x: float) -> tuple[float, float]:
    from scipy.special import expit

    s = float(expit(x))
    return s, s * (1 - s)


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


def _neuron_grads(w: np.ndarray, b: float, x: np.ndarray, y: float) -> tuple[np.ndarray, float]:
    ws = [Value(float(wi)) for wi in w]
    bias = Value(float(b))
    pre = bias
    for wi, xi in zip(ws, x, strict=True):
        pre = pre + wi * float(xi)
    loss = (pre.tanh() - float(y)) ** 2
    loss.backward()
    return np.array([wi.grad for wi in ws]), bias.grad


def check_neuron_grads(
    func: Callable[[np.ndarray, float, np.ndarray, float], tuple[np.ndarray, float]],
) -> CheckResult:
    """``func(w, b, x, y)`` must return (dL/dw, dL/db) for L = (tanh(w . x + b) - y)^2."""
    cases = [
        Case((np.array([0.5, -1.0]), 0.1, np.array([1.0, 2.0]), 1.0), "two inputs"),
        Case((np.array([0.0, 0.0, 0.0]), 0.0, np.array([1.0, -1.0, 2.0]), 0.5), "zero weights"),
        Case((np.array([0.3, 0.2, -0.4]), -0.2, np.array([-1.0, 0.5, 1.5]), -1.0), "negative y"),
    ]
    return check_function(func, cases=cases, reference=_neuron_grads, name="neuron_grads",
                          names=("dL/dw", "dL/db"))


def _linear_backward(x: np.ndarray, w: np.ndarray,
                     grad_y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dL/dX, dL/dW) for Y = X W, by torch.autograd: L = sum(G * Y) has dL/dY = G exactly."""
    import torch

    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    tw = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    (tx @ tw).backward(torch.tensor(grad_y, dtype=torch.float64))
    assert tx.grad is not None and tw.grad is not None
    return tx.grad.numpy(), tw.grad.numpy()


def check_linear_backward(
    func: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
) -> CheckResult:
    """``func(x, w, grad_y)`` must return (dL/dX, dL/dW) = (G Wᵀ, Xᵀ G) for Y = X W, with
    x (N, D_in), w (D_in, D_out) and grad_y = G = dL/dY (N, D_out); each gradient has the shape
    of its variable (dL/dW is (D_in, D_out), not nn.Linear's (D_out, D_in))."""
    rng = np.random.default_rng(80)
    cases = [
        Case((np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[2.0], [1.0]]),
              np.array([[4.0], [10.0]])),
             "the section's example: L = sum(Y**2) / 2, so dL/dY = Y"),
        Case((rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=(4, 2))),
             "N = 4 tokens, D_in = 3, D_out = 2: every size different"),
        Case((rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), rng.normal(size=(3, 3))),
             "every size 3: the shapes cannot catch a wrong order, only the values"),
        Case((rng.normal(size=(1, 5)), rng.normal(size=(5, 2)), rng.normal(size=(1, 2))),
             "one token (N = 1)"),
    ]
    return check_function(func, cases=cases, reference=_linear_backward, name="linear_backward",
                          rtol=1e-9, atol=1e-12, names=("dL/dX", "dL/dW"))


def _adam_step(p, g, m, v, t, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8):
    opt = Adam([np.array(p, dtype=np.float64)], lr=lr, betas=(beta1, beta2), eps=eps)
    opt.m, opt.v, opt.t = [np.array(m, dtype=np.float64)], [np.array(v, dtype=np.float64)], t - 1
    opt.step([g])
    return opt.params[0], opt.m[0], opt.v[0]


def check_adam_step(func: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]) -> CheckResult:
    """``func(p, g, m, v, t, lr, beta1, beta2, eps)`` must return Adam's new (p, m, v) at step t
    and leave its inputs as they were."""
    rng = np.random.default_rng(8)
    p, g = rng.normal(size=3), rng.normal(size=3)
    m, v = 0.1 * rng.normal(size=3), 0.01 * rng.random(3)
    zeros = np.zeros(3)
    cases = [
        Case((p, g, zeros, zeros, 1, 0.1, 0.9, 0.999, 1e-8), "step 1: every |update| is about lr"),
        Case((p, g, m, v, 10, 0.01, 0.9, 0.999, 1e-8), "step 10 with some history"),
        Case((p, g, m, v, 1000, 0.01, 0.8, 0.99, 1e-6), "step 1000: the bias correction has faded"),
        Case((p, zeros, zeros, zeros, 1, 0.1, 0.9, 0.999, 1e-8), "a zero gradient moves nothing"),
    ]
    return check_function(func, cases=cases, reference=_adam_step, name="adam_step", rtol=1e-9,
                          names=("new p", "new m", "new v"))
