"""A tiny reverse-mode automatic differentiation engine on scalars (in the spirit of micrograd).

Every arithmetic operation on :class:`Value` objects records a node of the computational graph:
its result, its parents (the inputs it was computed from), and the *local* derivative of the
result with respect to each parent. ``loss.backward()`` then visits the nodes from the loss back to
the leaves (reverse topological order) and applies the chain rule, one edge at a time::

    parent.grad += local_derivative * node.grad

A node used twice receives the sum of both contributions (the multivariable chain rule). Like
PyTorch, ``backward`` *accumulates* into ``.grad``: set ``p.grad = 0.0`` between steps.

:func:`computational_graph` returns the graph under a node as plain data (for drawing it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from course_utils.validation import check_real

__all__ = [
    "Graph",
    "GraphEdge",
    "GraphNode",
    "Value",
    "computational_graph",
    "sum_values",
    "topological_order",
]

Number = int | float


class Value:
    """A scalar that remembers how it was computed, so that gradients can flow back to it."""

    __slots__ = ("data", "grad", "op", "parents", "local_grads")

    def __init__(
        self,
        data: Number,
        parents: tuple[Value, ...] = (),
        local_grads: tuple[float, ...] = (),
        op: str = "",
    ) -> None:
        self.data = check_real(data, "data")
        self.grad = 0.0  # d(output of backward) / d(self), filled in by backward()
        if not all(isinstance(p, Value) for p in parents):
            raise TypeError("parents must be a tuple of Values")
        if len(local_grads) != len(parents):
            raise ValueError(f"local_grads needs one number per parent ({len(parents)}), "
                             f"got {len(local_grads)}")
        self.parents = tuple(parents)
        self.local_grads = tuple(
            check_real(g, f"local_grads[{i}]") for i, g in enumerate(local_grads)
        )
        self.op = op

    def __repr__(self) -> str:
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g})"

    # ---- operations: each returns a new node with its local derivatives -------------------
    def __add__(self, other: Value | Number) -> Value:
        other = other if isinstance(other, Value) else Value(other)
        return _node(self.data + other.data, (self, other), (1.0, 1.0), "+")

    def __mul__(self, other: Value | Number) -> Value:
        other = other if isinstance(other, Value) else Value(other)
        return _node(self.data * other.data, (self, other), (other.data, self.data), "*")

    def __sub__(self, other: Value | Number) -> Value:
        other = other if isinstance(other, Value) else Value(other)
        return _node(self.data - other.data, (self, other), (1.0, -1.0), "-")

    def __truediv__(self, other: Value | Number) -> Value:
        """``self / other``: d/du (u/v) = 1/v and d/dv (u/v) = -u/v^2."""
        other = other if isinstance(other, Value) else Value(other)
        if other.data == 0:
            raise ValueError(f"cannot divide {self.data} by a Value equal to 0")
        out = self.data / other.data
        return _node(out, (self, other), _finite((1.0 / other.data, -out / other.data), "/"), "/")

    def __pow__(self, exponent: Number) -> Value:
        """``self ** exponent`` for a constant exponent: d/dx x^k = k x^(k-1)."""
        k = check_real(exponent, "exponent")
        if self.data == 0 and k < 1 and k != 0:
            raise ValueError(f"0 ** {k} has no finite derivative (or value)")
        if self.data < 0 and not k.is_integer():
            raise ValueError(f"a negative base ({self.data}) needs an integer exponent, got {k}")
        try:
            out, local = self.data**k, k * self.data ** (k - 1)
        except OverflowError:
            raise OverflowError(f"{self.data} ** {k} is too large for a float") from None
        return _node(out, (self,), _finite((local,), f"**{k:g}"), f"**{k:g}")

    def exp(self) -> Value:
        try:
            out = math.exp(self.data)
        except OverflowError:
            raise OverflowError(f"exp({self.data}) is too large for a float") from None
        return _node(out, (self,), (out,), "exp")

    def log(self) -> Value:
        if self.data <= 0:
            raise ValueError(f"log needs a positive input, got {self.data}")
        return _node(math.log(self.data), (self,), _finite((1.0 / self.data,), "log"), "log")

    def tanh(self) -> Value:
        out = math.tanh(self.data)
        return _node(out, (self,), (1.0 - out * out,), "tanh")

    def relu(self) -> Value:
        """max(0, x); its derivative at exactly 0 is taken as 0, as in PyTorch."""
        positive = self.data > 0
        return _node(self.data if positive else 0.0, (self,), (1.0 if positive else 0.0,), "relu")

    def __neg__(self) -> Value:
        return _node(-self.data, (self,), (-1.0,), "neg")

    def __radd__(self, other: Number) -> Value:
        return Value(other) + self

    def __rmul__(self, other: Number) -> Value:
        return Value(other) * self

    def __rsub__(self, other: Number) -> Value:
        return Value(other) - self

    def __rtruediv__(self, other: Number) -> Value:
        return Value(other) / self

    # ---- the backward pass ------------------------------------------------------------------
    def backward(self) -> None:
        """Fill ``.grad`` of every node this one depends on with d(self)/d(node)."""
        self.grad = 1.0  # d(self)/d(self)
        for node in reversed(topological_order(self)):  # every node before its parents
            upstream = node.grad  # d(self)/d(node), complete: all of node's users came first
            for parent, local in zip(node.parents, node.local_grads, strict=True):
                parent.grad += local * upstream


def _node(
    data: float, parents: tuple[Value, ...], local_grads: tuple[float, ...], op: str
) -> Value:
    """The result of an operation on Values. Its inputs were checked already, so this skips
    ``Value.__init__``'s check of user input and only refuses a result that overflowed."""
    if not math.isfinite(data):
        raise OverflowError(f"the result of {op!r} is too large for a float ({data})")
    node = object.__new__(Value)
    node.data, node.grad, node.op = data, 0.0, op
    node.parents, node.local_grads = parents, local_grads
    return node


def _finite(local_grads: tuple[float, ...], op: str) -> tuple[float, ...]:
    if not all(math.isfinite(g) for g in local_grads):
        raise OverflowError(f"a local derivative of {op!r} is too large for a float")
    return local_grads


def topological_order(root: Value) -> list[Value]:
    """Every node ``root`` depends on, and ``root``, once each, every node after all its parents.

    An iterative depth-first search (deep graphs do not hit Python's recursion limit): a node is
    placed once all of its parents are; ``root`` comes last, leaves (no parents) early.
    """
    if not isinstance(root, Value):
        raise TypeError(f"root must be a Value, got {type(root).__name__}")
    order: list[Value] = []
    seen = {root}
    stack = [(root, iter(root.parents))]  # a node, and its parents still to visit
    while stack:
        node, parents = stack[-1]
        for parent in parents:
            if parent not in seen:  # go deeper: the parent's own parents come first
                seen.add(parent)
                stack.append((parent, iter(parent.parents)))
                break
        else:  # every parent is placed: the node can follow them
            stack.pop()
            order.append(node)
    return order


def sum_values(values: Iterable[Value | Number]) -> Value:
    """One node for ``v_1 + ... + v_n`` (local derivative 1 for each), not a chain of n adds."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"values must be an iterable of Values or numbers, got "
                        f"{type(values).__name__}")
    nodes = tuple(v if isinstance(v, Value) else Value(check_real(v, f"values[{i}]"))
                  for i, v in enumerate(values))
    if not nodes:
        raise ValueError("values must hold at least one Value")
    return _node(math.fsum(v.data for v in nodes), nodes, (1.0,) * len(nodes), "sum")


# ---- the graph as plain data ----------------------------------------------------------------
class GraphNode(NamedTuple):
    """One node: its name (from ``names``, else ""), the operation that made it ("" for a
    leaf), its forward value and its current ``.grad``."""

    name: str
    op: str
    data: float
    grad: float


class GraphEdge(NamedTuple):
    """``nodes[child]`` was computed from ``nodes[parent]``; ``local_grad`` = d child / d parent."""

    parent: int
    child: int
    local_grad: float


class Graph(NamedTuple):
    nodes: list[GraphNode]  # in topological order: the root last
    edges: list[GraphEdge]  # grouped by child, in the order of ``nodes``


def computational_graph(root: Value, names: Mapping[Value, str] | None = None) -> Graph:
    """The graph under ``root`` as plain data: nodes in topological order, edges with their
    local derivatives.

    Each node appears once, however often it is used (a shared sub-expression is one node). Each
    (parent, child) pair is one edge: when a node uses the same input twice, as ``a * a`` does,
    the edge carries the total local derivative (here ``2a``). After ``root.backward()`` on fresh
    gradients the chain rule holds on the data: for every node but the root,
    ``grad = sum(local_grad * nodes[child].grad)`` over its outgoing edges.

    ``names`` optionally labels some Values (``{w: "w"}``); naming a Value that is not in the
    graph is an error.
    """
    order = topological_order(root)
    index = {node: i for i, node in enumerate(order)}
    names = {} if names is None else names
    if not isinstance(names, Mapping):
        raise TypeError(f"names must be a mapping from Value to str, got {type(names).__name__}")
    for value, name in names.items():
        if not isinstance(value, Value) or not isinstance(name, str):
            raise TypeError(f"names must map Values to str, got {value!r}: {name!r}")
        if value not in index:
            raise ValueError(f"names labels a Value that is not in the graph under root: {name!r}")
    nodes = [GraphNode(names.get(v, ""), v.op, v.data, v.grad) for v in order]
    edges: list[GraphEdge] = []
    for child, node in enumerate(order):
        total: dict[int, float] = {}  # parent index -> summed local derivative, in first-use order
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            total[index[parent]] = total.get(index[parent], 0.0) + local
        edges.extend(GraphEdge(parent, child, local) for parent, local in total.items())
    return Graph(nodes, edges)
