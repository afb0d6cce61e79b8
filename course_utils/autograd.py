"""A tiny reverse-mode automatic differentiation engine on scalars (in the spirit of micrograd).

Every arithmetic operation on :class:`Value` objects records a node of the computational graph:
its result, its parents, and the *local* derivative of the result with respect to each parent.
``loss.backward()`` then visits the nodes from the loss back to the leaves (reverse topological
order) and applies the chain rule, one edge at a time::

    parent.grad += local_derivative * node.grad

A node used twice receives the sum of both contributions (the multivariable chain rule). Like
PyTorch, ``backward`` *accumulates* into ``.grad``: set ``p.grad = 0.0`` between steps.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["Value", "sum_values"]

Number = int | float


def _number(x: object, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{name} must be an int or float, got {type(x).__name__}")
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return float(x)


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
        self.data = _number(data, "data")
        self.grad = 0.0  # d(output of backward) / d(self), filled in by backward()
        self.parents = parents
        self.local_grads = local_grads  # d(self) / d(parent), one per parent
        self.op = op

    def __repr__(self) -> str:
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g})"

    @staticmethod
    def _lift(other: Value | Number) -> Value:
        return other if isinstance(other, Value) else Value(other)

    # ---- operations: each returns a new node with its local derivatives -------------------
    def __add__(self, other: Value | Number) -> Value:
        other = self._lift(other)
        return Value(self.data + other.data, (self, other), (1.0, 1.0), "+")

    def __mul__(self, other: Value | Number) -> Value:
        other = self._lift(other)
        return Value(self.data * other.data, (self, other), (other.data, self.data), "*")

    def __pow__(self, exponent: Number) -> Value:
        """``self ** exponent`` for a constant exponent: d/dx x^k = k x^(k-1)."""
        k = _number(exponent, "exponent")
        if self.data == 0 and k < 1 and k != 0:
            raise ValueError(f"0 ** {k} has no finite derivative (or value)")
        if self.data < 0 and not k.is_integer():
            raise ValueError(f"a negative base ({self.data}) needs an integer exponent, got {k}")
        return Value(self.data**k, (self,), (k * self.data ** (k - 1),), f"**{k:g}")

    def exp(self) -> Value:
        try:
            out = math.exp(self.data)
        except OverflowError:
            raise OverflowError(f"exp({self.data}) is too large for a float") from None
        return Value(out, (self,), (out,), "exp")

    def log(self) -> Value:
        if self.data <= 0:
            raise ValueError(f"log needs a positive input, got {self.data}")
        return Value(math.log(self.data), (self,), (1.0 / self.data,), "log")

    def tanh(self) -> Value:
        out = math.tanh(self.data)
        return Value(out, (self,), (1.0 - out * out,), "tanh")

    def relu(self) -> Value:
        """max(0, x); its derivative at exactly 0 is taken as 0, as in PyTorch."""
        positive = self.data > 0
        return Value(self.data if positive else 0.0, (self,), (1.0 if positive else 0.0,), "relu")

    def __neg__(self) -> Value:
        return self * -1

    def __sub__(self, other: Value | Number) -> Value:
        return self + (-self._lift(other))

    def __truediv__(self, other: Value | Number) -> Value:
        return self * self._lift(other) ** -1

    def __radd__(self, other: Number) -> Value:
        return self + other

    def __rmul__(self, other: Number) -> Value:
        return self * other

    def __rsub__(self, other: Number) -> Value:
        return self._lift(other) - self

    def __rtruediv__(self, other: Number) -> Value:
        return self._lift(other) / self

    # ---- the backward pass ------------------------------------------------------------------
    def backward(self) -> None:
        """Fill ``.grad`` of every node this one depends on with d(self)/d(node)."""
        order: list[Value] = []  # topological order: every node after all of its parents
        seen: set[int] = set()
        stack: list[tuple[Value, bool]] = [(self, False)]
        while stack:  # an explicit stack: deep graphs do not hit Python's recursion limit
            node, parents_done = stack.pop()
            if parents_done:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((parent, False) for parent in node.parents)
        self.grad = 1.0  # d(self)/d(self)
        for node in reversed(order):
            for parent, local in zip(node.parents, node.local_grads, strict=True):
                parent.grad += local * node.grad


def sum_values(values: Iterable[Value | Number]) -> Value:
    """One node for ``v_1 + ... + v_n`` (local derivative 1 for each), not a chain of n adds."""
    nodes = tuple(Value._lift(v) for v in values)
    if not nodes:
        raise ValueError("values must hold at least one Value")
    return Value(math.fsum(v.data for v in nodes), nodes, (1.0,) * len(nodes), "sum")
