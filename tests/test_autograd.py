"""course_utils.autograd: gradients equal torch.autograd on random expressions and a network."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.autograd import (
    GraphEdge,
    Value,
    computational_graph,
    sum_values,
    topological_order,
)

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


LEAVES = st.lists(st.floats(-2, 2), min_size=1, max_size=4)
PROGRAMS = st.lists(  # (binary?, which operation, first input, second input), indices wrap around
    st.tuples(st.booleans(), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99)),
    min_size=1, max_size=12,
)


def build(leaves, program, unary=0, binary=0):
    """The nodes of a random expression: the leaves, then one node per step of the program. Each
    step may reuse any earlier node, so the graph is a DAG, not a tree. ``unary``/``binary``
    pick the implementation (0: the engine's, 1: torch's)."""
    nodes = list(leaves)
    for is_binary, op, i, j in program:
        i, j = i % len(nodes), j % len(nodes)
        if is_binary:
            nodes.append(BINARY[op % len(BINARY)][binary](nodes[i], nodes[j]))
        else:
            nodes.append(UNARY[op % len(UNARY)][unary](nodes[i]))
    return nodes


@settings(max_examples=50, deadline=None)
@given(leaves=LEAVES, program=PROGRAMS)
def test_random_expressions_match_torch(leaves, program):
    ours = build([Value(x) for x in leaves], program)
    theirs = build([torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in leaves],
                   program, unary=1, binary=1)
    loss = sum_values(ours)
    torch_loss = torch.stack(theirs).sum()
    loss.backward()
    torch_loss.backward()
    assert loss.data == pytest.approx(torch_loss.item(), rel=1e-9, abs=1e-9)
    for v, t in zip(ours[: len(leaves)], theirs[: len(leaves)], strict=True):
        assert v.grad == pytest.approx(t.grad.item(), rel=1e-9, abs=1e-9)


def reachable(root):
    """Every Value under root, by plain recursion (an independent reference for the search)."""
    found = {}

    def visit(node):
        if id(node) not in found:
            found[id(node)] = node
            for parent in node.parents:
                visit(parent)

    visit(root)
    return found


@settings(max_examples=50, deadline=None)
@given(leaves=LEAVES, program=PROGRAMS, which=st.integers(0, 99))
def test_topological_order_and_graph_satisfy_the_chain_rule(leaves, program, which):
    nodes = build([Value(x) for x in leaves], program)
    root = nodes[len(leaves) + which % len(program)]  # any computed node, not only the last
    order = topological_order(root)
    position = {id(v): i for i, v in enumerate(order)}
    assert len(position) == len(order)  # each node once
    assert position.keys() == reachable(root).keys()  # exactly the nodes under root
    assert order[-1] is root
    for i, v in enumerate(order):
        assert all(position[id(p)] < i for p in v.parents)  # after all of its parents

    root.backward()
    graph = computational_graph(root)
    assert [(n.op, n.data, n.grad) for n in graph.nodes] == [(v.op, v.data, v.grad) for v in order]
    assert all(e.parent < e.child for e in graph.edges)
    assert len({(e.parent, e.child) for e in graph.edges}) == len(graph.edges)  # no parallel edges
    assert graph.nodes[-1].grad == 1.0
    upstream = [0.0] * len(graph.nodes)  # the chain rule: sum over the edges leaving each node
    for e in graph.edges:
        upstream[e.parent] += e.local_grad * graph.nodes[e.child].grad
    for node, total in zip(graph.nodes[:-1], upstream[:-1], strict=True):
        assert node.grad == pytest.approx(total, rel=1e-9, abs=1e-12)


def test_graph_of_one_neuron_and_shared_subexpressions():
    w, x, b = Value(0.5), Value(2.0), Value(-0.3)
    s = w * x + b
    a = s.tanh()
    loss = (a - 1.0) ** 2
    loss.backward()
    graph = computational_graph(loss, names={w: "w", x: "x", b: "b", s: "s", a: "a", loss: "L"})
    assert [(n.name, n.op) for n in graph.nodes] == [
        ("w", ""), ("x", ""), ("", "*"), ("b", ""), ("s", "+"), ("a", "tanh"), ("", ""),
        ("", "-"), ("L", "**2"),
    ]
    grads = {n.name: n.grad for n in graph.nodes if n.name}
    d_s = 2 * (a.data - 1.0) * (1 - a.data**2)  # by hand, as in notebook 08
    assert grads == pytest.approx({"w": d_s * 2.0, "x": d_s * 0.5, "b": d_s, "s": d_s,
                                   "a": 2 * (a.data - 1.0), "L": 1.0}, rel=1e-12)
    assert GraphEdge(5, 7, 1.0) in graph.edges and GraphEdge(6, 7, -1.0) in graph.edges

    u = Value(3.0)
    square = u * u
    total = square + square * u  # u is used three times, square twice: each is one node
    total.backward()
    graph = computational_graph(total)
    assert [n.data for n in graph.nodes] == [3.0, 9.0, 27.0, 36.0]
    assert graph.edges == [  # u * u: one edge carrying d(u*u)/du = 2u = 6
        GraphEdge(0, 1, 6.0), GraphEdge(1, 2, 3.0), GraphEdge(0, 2, 9.0),
        GraphEdge(1, 3, 1.0), GraphEdge(2, 3, 1.0),
    ]
    assert graph.nodes[0].grad == 2 * 3.0 + 3 * 3.0**2  # d/du (u^2 + u^3)

    leaf = computational_graph(Value(1.5))
    assert leaf.nodes == [("", "", 1.5, 0.0)] and leaf.edges == []


def test_graph_bad_input():
    v = Value(1.0)
    with pytest.raises(TypeError, match="root must be a Value, got float"):
        computational_graph(1.0)
    with pytest.raises(TypeError, match="root must be a Value, got list"):
        topological_order([v])
    with pytest.raises(TypeError, match="names must be a mapping"):
        computational_graph(v, names=["v"])
    with pytest.raises(TypeError, match="names must map Values to str"):
        computational_graph(v, names={1.0: "v"})
    with pytest.raises(TypeError, match="names must map Values to str"):
        computational_graph(v, names={v: 1})
    with pytest.raises(ValueError, match="not in the graph under root: 'other'"):
        computational_graph(v * 2, names={Value(2.0): "other"})


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


def test_numpy_scalars_are_numbers():
    x = Value(np.float32(1.5))
    assert type(x.data) is float
    for y in (x + np.float32(2.0), np.float64(2.0) + x, x * np.int64(2), x ** np.float32(2.0)):
        assert isinstance(y, Value) and type(y.data) is float
    assert [y.data for y in (x + np.float32(2.0), x * np.int64(2))] == [3.5, 3.0]


def test_bad_input():
    with pytest.raises(TypeError, match="data must be a real number, got str"):
        Value("1")
    with pytest.raises(ValueError, match="data must be a finite number, got nan"):
        Value(math.nan)
    with pytest.raises(TypeError, match="exponent must be a real number, got Value"):
        Value(2.0) ** Value(2.0)
    with pytest.raises(ValueError, match="log needs a positive input"):
        Value(0.0).log()
    with pytest.raises(ValueError, match="cannot divide 1.0 by a Value equal to 0"):
        Value(1.0) / Value(0.0)
    with pytest.raises(ValueError, match="0 \\*\\* -1"):
        Value(0.0) ** -1
    with pytest.raises(OverflowError, match="'\\*' is too large"):
        Value(1e200) * Value(1e200)
    with pytest.raises(OverflowError, match="local derivative of '/'"):
        Value(1.0) / Value(1e-200)
    with pytest.raises(OverflowError, match="too large"):
        Value(1e-200) ** -2
    with pytest.raises(ValueError, match="negative base"):
        Value(-2.0) ** 0.5
    with pytest.raises(OverflowError, match="too large"):
        Value(1000.0).exp()
    with pytest.raises(ValueError, match="at least one Value"):
        sum_values([])
    with pytest.raises(TypeError, match="parents must be a tuple of Values"):
        Value(1.0, (2.0,), (1.0,))
    with pytest.raises(ValueError, match="one number per parent \\(1\\), got 2"):
        Value(1.0, (Value(2.0),), (1.0, 1.0))
    with pytest.raises(TypeError, match="local_grads\\[0\\] must be a real number, got Value"):
        Value(1.0, (Value(2.0),), (Value(1.0),))
