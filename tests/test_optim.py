"""course_utils.optim follows torch.optim step by step, on independent trajectories."""

import numpy as np
import pytest
import torch

from course_utils.optim import SGD, Adam, AdamW

CONFIGS = [
    (SGD, torch.optim.SGD, dict(lr=0.05)),
    (SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9)),
    (SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (Adam, torch.optim.Adam, dict(lr=0.01)),
    (Adam, torch.optim.Adam, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    (AdamW, torch.optim.AdamW, dict(lr=0.01)),
    (AdamW, torch.optim.AdamW, dict(lr=0.03, weight_decay=0.5)),
]


def _loss_and_grads(params, x, y):
    """A two-layer network's mean squared error and its gradients, by torch.autograd."""
    w1, b1, w2 = [torch.tensor(p, requires_grad=True) for p in params]
    loss = ((torch.tanh(x @ w1 + b1) @ w2 - y) ** 2).mean()
    loss.backward()
    return loss.item(), [w1.grad.numpy(), b1.grad.numpy(), w2.grad.numpy()]


@pytest.mark.parametrize(("ours_cls", "torch_cls", "kwargs"), CONFIGS)
def test_matches_torch_for_150_steps(ours_cls, torch_cls, kwargs):
    rng = np.random.default_rng(0)
    x, y = torch.from_numpy(rng.normal(size=(8, 3))), torch.from_numpy(rng.normal(size=(8, 1)))
    init = [rng.normal(size=(3, 5)), rng.normal(size=5), rng.normal(size=(5, 1))]
    ours = [p.copy() for p in init]
    theirs = [torch.tensor(p, requires_grad=True) for p in init]
    opt, torch_opt = ours_cls(ours, **kwargs), torch_cls(theirs, **kwargs)
    losses = []
    for _ in range(150):
        loss, grads = _loss_and_grads(ours, x, y)  # our trajectory uses only our parameters
        opt.step(grads)
        torch_opt.zero_grad()
        ((torch.tanh(x @ theirs[0] + theirs[1]) @ theirs[2] - y) ** 2).mean().backward()
        torch_opt.step()
        for p, t in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(p, t.detach().numpy(), rtol=1e-9, atol=1e-12)
        losses.append(loss)
    assert losses[-1] < 0.75 * losses[0]  # and it actually trained


def test_float32_parameters_stay_float32():
    p = np.ones(3, dtype=np.float32)
    AdamW([p], lr=0.1).step([np.array([1.0, -1.0, 0.0])])
    assert p.dtype == np.float32
    np.testing.assert_allclose(p, [0.899, 1.099, 0.999], rtol=1e-6)


def test_adamw_decay_is_decoupled():
    """With a zero gradient, Adam's L2 term still moves p by about lr (normalised), AdamW's
    decay moves it by exactly lr * wd * p."""
    p_adam, p_adamw = np.array([2.0]), np.array([2.0])
    Adam([p_adam], lr=0.1, weight_decay=0.5).step([np.zeros(1)])
    AdamW([p_adamw], lr=0.1, weight_decay=0.5).step([np.zeros(1)])
    np.testing.assert_allclose(p_adam, 2.0 - 0.1, rtol=1e-7)
    np.testing.assert_allclose(p_adamw, 2.0 * (1 - 0.1 * 0.5))


def test_bad_input():
    p = np.zeros((2, 2))
    with pytest.raises(ValueError, match="at least one array"):
        SGD([], lr=0.1)
    with pytest.raises(TypeError, match=r"params\[0\] must be a float NumPy array"):
        SGD([np.zeros(2, dtype=int)], lr=0.1)
    with pytest.raises(TypeError, match=r"params\[0\] must be a float NumPy array"):
        SGD([[0.0, 1.0]], lr=0.1)
    with pytest.raises(ValueError, match="lr must be a finite number >= 0"):
        Adam([p], lr=-1.0)
    with pytest.raises(ValueError, match=r"betas\[1\] must be in \[0, 1\), got 1.0"):
        Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="betas must be two numbers"):
        Adam([p], betas=(0.9, 0.99, 0.999))
    with pytest.raises(TypeError, match=r"betas\[0\] must be a real number, got str"):
        Adam([p], betas=("0.9", 0.999))
    adam = Adam([p], betas=(np.float32(0.5), np.float64(0.25)))
    assert (adam.beta1, adam.beta2) == (0.5, 0.25) and type(adam.beta1) is float
    with pytest.raises(ValueError, match="nesterov needs momentum"):
        SGD([p], lr=0.1, nesterov=True)
    opt = AdamW([p])
    with pytest.raises(ValueError, match="grads must hold 1 gradients, got 2"):
        opt.step([p, p])
    with pytest.raises(ValueError, match=r"grads\[0\] has shape \(2,\), params\[0\] has \(2, 2\)"):
        opt.step([np.zeros(2)])
    with pytest.raises(ValueError, match="inf or NaN"):
        opt.step([np.full((2, 2), np.nan)])
    assert opt.t == 0  # a rejected step changes nothing
    read_only = np.zeros(2)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        SGD([read_only], lr=0.1)
