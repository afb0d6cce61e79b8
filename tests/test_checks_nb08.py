"""The notebook 08 checkers accept a correct solution and catch plausible mistakes."""

import math

import numpy as np

from course_utils.autograd import Value
from course_utils.checks import nb08


def stub(*args):
    raise NotImplementedError


def sigmoid(v):
    s = 1 / (1 + math.exp(-v.data))
    return Value(s, (v,), (s * (1 - s),), "sigmoid")


def sigmoid_wrong_slope(v):
    s = 1 / (1 + math.exp(-v.data))
    return Value(s, (v,), (s,), "sigmoid")


def sigmoid_from_ops(v):
    return 1 / (1 + (-v).exp())


def neuron_grads(w, b, x, y):
    a = np.tanh(w @ x + b)
    d_pre = 2 * (a - y) * (1 - a**2)
    return d_pre * x, float(d_pre)


def neuron_grads_no_tanh_slope(w, b, x, y):
    a = np.tanh(w @ x + b)
    d_pre = 2 * (a - y)
    return d_pre * x, float(d_pre)


def adam_step(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def adam_step_without_bias_correction(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g**2
    return p - lr * m / (np.sqrt(v) + eps), m, v


def test_sigmoid():
    assert nb08.check_sigmoid(sigmoid).passed
    assert nb08.check_sigmoid(sigmoid_from_ops).passed  # composing the engine's ops also works
    assert nb08.check_sigmoid(sigmoid_wrong_slope).status == "failed"
    assert nb08.check_sigmoid(lambda v: 1 / (1 + math.exp(-v.data))).status == "failed"
    assert nb08.check_sigmoid(stub).status == "not attempted"


def test_neuron_grads():
    assert nb08.check_neuron_grads(neuron_grads).passed
    assert nb08.check_neuron_grads(neuron_grads_no_tanh_slope).status == "failed"
    assert nb08.check_neuron_grads(stub).status == "not attempted"


def test_adam_step():
    assert nb08.check_adam_step(adam_step).passed
    assert nb08.check_adam_step(adam_step_without_bias_correction).status == "failed"
    assert nb08.check_adam_step(stub).status == "not attempted"
