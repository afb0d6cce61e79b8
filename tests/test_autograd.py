"""course_utils.autograd: gradients equal torch.autograd on random expressions and a network."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.autograd import Value, sum_values

# Each operation: (how to apply it to Values, how to apply it to torch tensors). The forms keep
# every input in its domain (log of a positive number, division by a nonzero one).
UNARY = [
    (lambda a: a.tanh(), torch.tanh),
    (lambda a: a.relu(), torch.relu),
    (lambda a: a.tanh().exp(), lambda a: torch.exp(torch.tanh(a))),
    (lambda a: (a * a + 1).log(), lambda a: torch.log(a * a + 1)),
    (lambda a: a.tanh() ** 3, lambda a: torch.tanh(a) ** 3),
    (lambda a: (a * a + 0.5) ** -0.5, lambda a: (a * a + 0.5) ** -0.5),
    (lambda a: -a, lambda a: -a),
    (lambda a: 2.5 * a + 1, lambda a: 2.5 * a + 1),
    (lambda a: 1 - a, lambda a: 1 - a),
    (lambda a: 3 / (a * a + 1), lambda a: 3 / (a * a + 1)),
]
BINARY = [
    (lambda a, b: a + b, lambda a, b: a + b),
    (lambda a, b: a * b, lambda a, b: a * b),
    (lambda a, b: a - b, lambda a, b: a - b),
    (lambda a, b: a / (b * b + 1), lambda a, b: a / (b * b + 1)),
]


@settings(max_examples=50, deadline=None)
@given(
    leaves=st.lists(st.floats(-2, 2), min_size=1, max_size=4),
    program=st.lists(
        st.tuples(st.booleans(), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99)),
        min_size=1, max_size=12,
    ),
)
def test_random_expressions_match_torch(leaves, program):
    ours = [Value(x) for x in leaves]
    theirs = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in leaves]
    for binary, op, i, j in program:  # each step may reuse any earlier node: a DAG, not a tree
        i, j = i % len(ours), j % len(ours)
        if binary:
            f, g = BINARY[op % len(BINARY)]
            ours.append(f(ours[i], ours[j]))
            theirs.append(g(theirs[i], theirs[j]))
        else:
            f, g = UNARY[op % len(UNARY)]
            ours.append(f(ours[i]))
            theirs.append(g(theirs[i]))
    loss = sum_values(ours)
    torch_loss = torch.stack(theirs).sum()
    loss.backward()
    torch_loss.backward()
    assert loss.data == pytest.approx(torch_loss.item(), rel=1e-9, abs=1e-9)
    for v, t in zip(ours[: len(leaves)], theirs[: len(leaves)], strict=True):
        assert v.grad == pytest.approx(t.grad.item(), rel=1e-9, abs=1e-9)


def test_two_layer_network_matches_torch():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(6, 3)), rng.normal(size=6)
    w1, b1, w2, b2 = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=4), 0.3
    W1 = [[Value(w) for w in row] for row in w1]
    B1 = [Value(b) for b in b1]
    W2 = [Value(w) for w in w2]
    B2 = Value(b2)
    losses = []
    for xi, yi in zip(x, y, strict=True):
        pre = [sum_values([W1[k][j] * xi[k] for k in range(3)] + [B1[j]]) for j in range(4)]
        hidden = [h.tanh() for h in pre]
        out = sum_values([W2[j] * hidden[j] for j in range(4)] + [B2])
        losses.append((out - yi) ** 2)
    loss = sum_values(losses) / len(losses)
    loss.backward()

    t = {name: torch.tensor(v, dtype=torch.float64, requires_grad=True)
         for name, v in dict(w1=w1, b1=b1, w2=w2, b2=b2).items()}
    pred = torch.tanh(torch.from_numpy(x) @ t["w1"] + t["b1"]) @ t["w2"] + t["b2"]
    torch_loss = ((pred - torch.from_numpy(y)) ** 2).mean()
    torch_loss.backward()
    assert loss.data == pytest.approx(torch_loss.item(), rel=1e-12)
    np.testing.assert_allclose([[w.grad for w in row] for row in W1], t["w1"].grad, rtol=1e-10)
    np.testing.assert_allclose([b.grad for b in B1], t["b1"].grad, rtol=1e-10)
    np.testing.assert_allclose([w.grad for w in W2], t["w2"].grad, rtol=1e-10)
    assert B2.grad == pytest.approx(t["b2"].grad.item(), rel=1e-10)


def test_reused_node_accumulates_and_backward_accumulates():
    a = Value(3.0)
    (a * a + a).backward()
    assert a.grad == 7.0  # d/da (a^2 + a) = 2a + 1
    (a * 2).backward()
    assert a.grad == 9.0  # accumulated, as in PyTorch


def test_deep_graph_has_no_recursion_limit():
    x = Value(0.5)
    y = x
    for _ in range(5000):
        y = y + 0.001
    y.backward()
    assert x.grad == 1.0
    assert y.data == pytest.approx(5.5)


def test_relu_at_zero_and_repr():
    z = Value(0.0)
    z.relu().backward()
    assert z.grad == 0.0
    assert repr(Value(1.5)) == "Value(data=1.5, grad=0)"


def test_bad_input():
    with pytest.raises(TypeError, match="data must be an int or float"):
        Value("1")
    with pytest.raises(ValueError, match="data must be finite"):
        Value(math.nan)
    with pytest.raises(TypeError, match="exponent must be an int or float"):
        Value(2.0) ** Value(2.0)
    with pytest.raises(ValueError, match="log needs a positive input"):
        Value(0.0).log()
    with pytest.raises(ValueError, match="0 \\*\\* -1"):
        Value(1.0) / Value(0.0)
    with pytest.raises(ValueError, match="negative base"):
        Value(-2.0) ** 0.5
    with pytest.raises(OverflowError, match="too large"):
        Value(1000.0).exp()
    with pytest.raises(ValueError, match="at least one Value"):
        sum_values([])
