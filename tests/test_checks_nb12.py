"""The notebook 12 checkers accept the reference solutions and catch plausible mistakes."""

from __future__ import annotations

import torch

from course_utils.checks import nb12


def stub(*args, **kwargs):
    raise NotImplementedError


def test_feed_forward() -> None:
    def good(x, w1, b1, w2, b2):
        return torch.clamp(x @ w1 + b1, min=0) @ w2 + b2

    def no_relu(x, w1, b1, w2, b2):
        return (x @ w1 + b1) @ w2 + b2

    def relu_at_the_end(x, w1, b1, w2, b2):
        return torch.relu((x @ w1 + b1) @ w2 + b2)

    def forgets_b2(x, w1, b1, w2, b2):
        return torch.relu(x @ w1 + b1) @ w2

    assert nb12.check_feed_forward(good).passed
    assert nb12.check_feed_forward(stub).status == "not attempted"
    for wrong in (no_relu, relu_at_the_end, forgets_b2):
        assert nb12.check_feed_forward(wrong).status == "failed", wrong.__name__


def test_layer_norm() -> None:
    def good(x, gamma, beta, eps=1e-5):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return gamma * (x - mu) / torch.sqrt(var + eps) + beta

    def unbiased(x, gamma, beta, eps=1e-5):
        mu = x.mean(-1, keepdim=True)
        return gamma * (x - mu) / torch.sqrt(x.var(-1, keepdim=True) + eps) + beta

    def eps_outside(x, gamma, beta, eps=1e-5):
        mu = x.mean(-1, keepdim=True)
        std = ((x - mu) ** 2).mean(-1, keepdim=True).sqrt()
        return gamma * (x - mu) / (std + eps) + beta

    def over_the_batch(x, gamma, beta, eps=1e-5):  # BatchNorm's axis
        mu = x.mean(0, keepdim=True)
        var = ((x - mu) ** 2).mean(0, keepdim=True)
        return gamma * (x - mu) / torch.sqrt(var + eps) + beta

    assert nb12.check_layer_norm(good).passed
    assert nb12.check_layer_norm(stub).status == "not attempted"
    for wrong in (unbiased, eps_outside, over_the_batch):
        assert nb12.check_layer_norm(wrong).status == "failed", wrong.__name__


def test_swiglu() -> None:
    def good(x, w_gate, w_up, w_down):
        gate = x @ w_gate
        return (gate * torch.sigmoid(gate) * (x @ w_up)) @ w_down

    def swapped(x, w_gate, w_up, w_down):
        return good(x, w_up, w_gate, w_down)

    def sigmoid_gate(x, w_gate, w_up, w_down):  # GLU, not SwiGLU
        return (torch.sigmoid(x @ w_gate) * (x @ w_up)) @ w_down

    assert nb12.check_swiglu(good).passed
    assert nb12.check_swiglu(stub).status == "not attempted"
    for wrong in (swapped, sigmoid_gate):
        assert nb12.check_swiglu(wrong).status == "failed", wrong.__name__
