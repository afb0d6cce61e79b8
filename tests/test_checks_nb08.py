"""Notebook 08's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import torch
from checker_table import right, table_test, wrong

from course_utils.autograd import Value
from course_utils.checks import nb08


def sigmoid(v):
    s = 1 / (1 + math.exp(-v.data)) if v.data >= 0 else math.exp(v.data) / (1 + math.exp(v.data))
    return Value(s, (v,), (s * (1 - s),), "sigmoid")


def sigmoid_from_ops(v):
    if v.data >= 0:
        return 1 / (1 + (-v).exp())
    return v.exp() / (1 + v.exp())


def sigmoid_overflowing(v, slope=lambda s: s * (1 - s)):
    s = 1 / (1 + math.exp(-v.data))
    return Value(s, (v,), (slope(s),), "sigmoid")


def neuron_grads(w, b, x, y, slope=True, factor=2.0):
    a = np.tanh(w @ x + b)
    d_pre = factor * (a - y) * ((1 - a**2) if slope else 1.0)
    return d_pre * x, float(d_pre)


def neuron_grads_by_torch(w, b, x, y):
    w, b = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    ((torch.tanh(w @ torch.tensor(x) + b) - y) ** 2).backward()
    return w.grad.numpy(), b.grad.item()


def linear_backward(x, w, grad_y):
    return grad_y @ w.T, x.T @ grad_y


def linear_backward_by_loops(x, w, grad_y):
    # the index sums of the derivation:
    # dX[i, k] = sum_m G[i, m] W[k, m],  dW[k, m] = sum_i X[i, k] G[i, m]
    dx, dw = np.zeros_like(x), np.zeros_like(w)
    for i, k, m in np.ndindex(x.shape[0], x.shape[1], w.shape[1]):
        dx[i, k] += grad_y[i, m] * w[k, m]
        dw[k, m] += x[i, k] * grad_y[i, m]
    return dx, dw


def linear_backward_column_layout(x, w, grad_y):
    # in the column layout Yᵀ = Wᵀ Xᵀ, then transposed back
    return (w @ grad_y.T).T, (grad_y.T @ x).T


def adam_step(p, g, m, v, t, lr, beta1, beta2, eps, correct=True):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g**2
    m_hat, v_hat = (m / (1 - beta1**t), v / (1 - beta2**t)) if correct else (m, v)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def adam_step_in_place(p, g, m, v, t, lr, beta1, beta2, eps):
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * g**2
    return p - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps), m, v


def adam_step_by_torch(p, g, m, v, t, lr, beta1, beta2, eps):
    param = torch.tensor(p, requires_grad=True)
    opt = torch.optim.Adam([param], lr=lr, betas=(beta1, beta2), eps=eps)
    param.grad = torch.tensor(g)
    opt.state[param] = {"step": torch.tensor(t - 1.0), "exp_avg": torch.tensor(m),
                        "exp_avg_sq": torch.tensor(v)}
    opt.step()
    state = opt.state[param]
    return param.detach().numpy(), state["exp_avg"].numpy(), state["exp_avg_sq"].numpy()


ROWS = [
    *right(nb08.check_sigmoid, node=sigmoid, from_ops=sigmoid_from_ops),
    *wrong(
        nb08.check_sigmoid,
        overflows=(sigmoid_overflowing, "x = -800: e^800 overflows, so use e^x / (1 + e^x) for "
                   "x < 0: raised OverflowError: math range error"),
        overflows_from_ops=(lambda v: 1 / (1 + (-v).exp()),
                            "raised OverflowError: exp(800.0) is too large for a float"),
        slope_s=(lambda v: sigmoid_overflowing(v, slope=lambda s: s),
                 "sigmoid(0) = 0.5, slope 0.25: d sigmoid / dx: values differ: expected 0.25, "
                 "got 0.5"),
        a_float=(lambda v: sigmoid(v).data, "raised TypeError: sigmoid must return a Value, got "
                 "float"),
        detached=(lambda v: Value(sigmoid(v).data), "d sigmoid / dx: values differ: expected "
                  "0.25, got 0.0"),
    ),
    *right(nb08.check_neuron_grads, worked=neuron_grads, torch=neuron_grads_by_torch),
    *wrong(
        nb08.check_neuron_grads,
        no_tanh_slope=(lambda w, b, x, y: neuron_grads(w, b, x, y, slope=False),
                       "two inputs: dL/dw: values differ"),
        no_factor_2=(lambda w, b, x, y: neuron_grads(w, b, x, y, factor=1.0),
                     "two inputs: dL/dw: values differ"),
        bias_as_array=(lambda w, b, x, y: (neuron_grads(w, b, x, y)[0],
                                           np.array([neuron_grads(w, b, x, y)[1]])),
                       "dL/db: expected a single number, got an array of shape (1,)"),
        a_list=(lambda w, b, x, y: list(neuron_grads(w, b, x, y)),
                "expected a tuple of 2 items (dL/dw, dL/db), got list"),
    ),
    *right(nb08.check_linear_backward, worked=linear_backward, loops=linear_backward_by_loops,
           column_layout=linear_backward_column_layout,
           einsum=lambda x, w, g: (np.einsum("nj,kj->nk", g, w), np.einsum("nk,nj->kj", x, g))),
    *wrong(
        nb08.check_linear_backward,
        order_swapped=(lambda x, w, g: (w @ g, x.T @ g),
                       "every size 3: the shapes cannot catch a wrong order, only the values: "
                       "dL/dX: values differ"),
        missing_transpose=(lambda x, w, g: (g @ w, x.T @ g),
                           "the section's example: L = sum(Y**2) / 2, so dL/dY = Y: raised "
                           "ValueError: matmul"),
        x_not_transposed=(lambda x, w, g: (g @ w.T, x @ g),
                          "the section's example: L = sum(Y**2) / 2, so dL/dY = Y: dL/dW: values "
                          "differ: expected [[34.], [48.]], got [[24.], [52.]]"),
        sums_not_product=(lambda x, w, g: (g @ w.T, np.outer(x.sum(axis=0), g.sum(axis=0))),
                          "dL/dW: values differ: expected [[34.], [48.]], got [[56.], [84.]]"),
        mean_not_sum=(lambda x, w, g: (g @ w.T, x.T @ g / len(x)), "dL/dW: values differ"),
        nn_linear_layout=(lambda x, w, g: (g @ w.T, g.T @ x),
                          "dL/dW: shape: expected (2, 1), got (1, 2)"),
        gradients_swapped=(lambda x, w, g: (x.T @ g, g @ w.T),
                           "dL/dX: shape: expected (2, 2), got (2, 1)"),
        elementwise=(lambda x, w, g: (g * w.T, x.T * g),
                     "N = 4 tokens, D_in = 3, D_out = 2: every size different: raised "
                     "ValueError: operands could not be broadcast"),
    ),
    *right(nb08.check_adam_step, worked=adam_step, torch=adam_step_by_torch),
    *wrong(
        nb08.check_adam_step,
        no_bias_correction=(lambda *args: adam_step(*args, correct=False),
                            "step 1: every |update| is about lr: new p: values differ"),
        in_place=(adam_step_in_place, "changed its argument `m` in place"),
        step_from_0=(lambda p, g, m, v, t, *rest: adam_step(p, g, m, v, t + 1, *rest),
                     "new p: values differ"),
    ),
]

test_checker = table_test(ROWS)
