"""SGD (with momentum), Adam and AdamW on NumPy arrays, step for step equal to ``torch.optim``.

An optimizer holds a list of parameter arrays and updates them **in place** from gradients of
the same shapes: ``opt.step(grads)``. With g the gradient, lr the learning rate and t the step
number (from 1):

    SGD       b = mu * b + g   (b = g at t = 1)        p -= lr * b         (momentum mu)
    Adam      m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2
              p -= lr * m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t)
    AdamW     p -= lr * wd * p  (decoupled weight decay), then the Adam step

``weight_decay`` in SGD and Adam is PyTorch's L2 penalty: ``g += wd * p`` before the update.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from course_utils.validation import check_bool, check_real

__all__ = ["SGD", "Adam", "AdamW", "Optimizer"]


class Optimizer:
    """Holds the parameters (float arrays, updated in place) and checks every step's gradients."""

    def __init__(self, params: Sequence[np.ndarray], lr: float) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("params must hold at least one array")
        for i, p in enumerate(self.params):
            if not isinstance(p, np.ndarray) or p.dtype.kind != "f":
                raise TypeError(f"params[{i}] must be a float NumPy array (updated in place)")
            if not p.flags.writeable:
                raise ValueError(f"params[{i}] is read-only and cannot be updated in place")
        self.lr = check_real(lr, "lr", low=0)
        self.t = 0  # steps taken

    def step(self, grads: Sequence[np.ndarray]) -> None:
        """Update every parameter in place from its gradient (same order and shapes)."""
        if isinstance(grads, (str, bytes)) or not isinstance(grads, (Sequence, np.ndarray)):
            raise TypeError(f"grads must be a sequence of NumPy arrays, got {type(grads).__name__}")
        grads = list(grads)
        if len(grads) != len(self.params):
            raise ValueError(f"grads must hold {len(self.params)} gradients, got {len(grads)}")
        checked = []
        for i, (p, g) in enumerate(zip(self.params, grads, strict=True)):
            if not isinstance(g, (np.ndarray, list, tuple, numbers.Real)):
                raise TypeError(f"grads[{i}] must be a NumPy array, got {type(g).__name__}")
            g = np.asarray(g, dtype=p.dtype)
            if g.shape != p.shape:
                raise ValueError(f"grads[{i}] has shape {g.shape}, params[{i}] has {p.shape}")
            if not np.isfinite(g).all():
                raise ValueError(f"grads[{i}] contains inf or NaN")
            checked.append(g)
        self.t += 1
        for i, (p, g) in enumerate(zip(self.params, checked, strict=True)):
            self._update(i, p, g)

    def _update(self, i: int, p: np.ndarray, g: np.ndarray) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (heavy ball or Nesterov) and L2 decay."""

    def __init__(
        self,
        params: Sequence[np.ndarray],
        lr: float,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        super().__init__(params, lr)
        self.momentum = check_real(momentum, "momentum", low=0)
        self.weight_decay = check_real(weight_decay, "weight_decay", low=0)
        nesterov = check_bool(nesterov, "nesterov")
        if nesterov and self.momentum == 0:
            raise ValueError("nesterov needs momentum > 0")
        self.nesterov = nesterov
        self.buffers: list[np.ndarray | None] = [None] * len(self.params)

    def _update(self, i: int, p: np.ndarray, g: np.ndarray) -> None:
        if self.weight_decay:
            g = g + self.weight_decay * p
        if self.momentum:
            buf = self.buffers[i]
            buf = g.copy() if buf is None else self.momentum * buf + g
            self.buffers[i] = buf
            g = g + self.momentum * buf if self.nesterov else buf
        p -= self.lr * g


class Adam(Optimizer):
    """Adam: momentum (m) divided by a running RMS of the gradient (sqrt v), bias-corrected."""

    def __init__(
        self,
        params: Sequence[np.ndarray],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, lr)
        if not isinstance(betas, (tuple, list)):
            raise TypeError(f"betas must be a pair of numbers, got {type(betas).__name__}")
        if len(betas) != 2:
            raise ValueError(f"betas must be two numbers in [0, 1), got {betas!r}")
        self.beta1, self.beta2 = (check_real(b, f"betas[{i}]", low=0, high=1, high_open=True)
                                  for i, b in enumerate(betas))
        self.eps = check_real(eps, "eps", low=0)
        self.weight_decay = check_real(weight_decay, "weight_decay", low=0)
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]

    def _decay(self, p: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Adam's weight decay is an L2 term in the gradient."""
        return g + self.weight_decay * p if self.weight_decay else g

    def _update(self, i: int, p: np.ndarray, g: np.ndarray) -> None:
        g = self._decay(p, g)
        self.m[i] = self.beta1 * self.m[i] + (1 - self.beta1) * g
        self.v[i] = self.beta2 * self.v[i] + (1 - self.beta2) * g * g
        m_hat = self.m[i] / (1 - self.beta1**self.t)  # undo the bias towards the zero start
        v_hat = self.v[i] / (1 - self.beta2**self.t)
        p -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


class AdamW(Adam):
    """Adam with *decoupled* weight decay: shrink p by lr * wd directly, not through g."""

    def __init__(
        self,
        params: Sequence[np.ndarray],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay)

    def _decay(self, p: np.ndarray, g: np.ndarray) -> np.ndarray:
        p *= 1 - self.lr * self.weight_decay
        return g
