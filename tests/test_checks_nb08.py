"""Notebook 08's checkers: right answers pass, plausible mistakes fail with a reason."""

import cmath
import math

import numpy as np
import torch
from checker_table import right, table_test, wrong
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from course_utils.autograd import Value, topological_order
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


def sigmoid_backward_on_copy(v):  # the engine's chain on a copy of v finds the slope
    copy = Value(v.data)
    chain = 1 / (1 + (-copy).exp())
    chain.backward()
    return Value(chain.data, (v,), (copy.grad,), "sigmoid")


def sigmoid_slope_in_v(v):  # the same derivative written in v: the checker cannot tell
    e = math.exp(-abs(v.data))  # e^-v for v >= 0, e^v for v < 0
    s = 1 / (1 + e) if v.data >= 0 else e / (1 + e)
    return Value(s, (v,), (e / (1 + e) ** 2,), "sigmoid")


def sigmoid_torch_backward_on_copy(v):  # PyTorch's backward pass on a copy finds the slope
    t = torch.tensor(v.data, dtype=torch.float64, requires_grad=True)
    o = torch.sigmoid(t)
    o.backward()
    return Value(o.item(), (v,), (t.grad.item(),), "sigmoid")


def sigmoid_sympy(v):  # sympy derives the slope: right numbers, no derivation of one's own
    import sympy

    z = sympy.Symbol("z")
    slope = sympy.diff(1 / (1 + sympy.exp(-z)), z)
    return Value(1 / (1 + math.exp(-v.data)), (v,), (float(slope.subs(z, v.data)),), "sigmoid")


def sigmoid_grad_fn(v):  # one node of PyTorch's graph, without calling backward()
    t = torch.tensor(v.data, dtype=torch.float64, requires_grad=True)
    o = torch.sigmoid(t)
    return Value(o.item(), (v,), (o.grad_fn(torch.tensor(1.0, dtype=torch.float64)).item(),),
                 "sigmoid")


def sigmoid_complex_step(v):  # exact to rounding, but a measurement
    h = 1e-30
    slope = (1 / (1 + cmath.exp(-(v.data + h * 1j)))).imag / h
    return Value(1 / (1 + math.exp(-v.data)), (v,), (slope,), "sigmoid")


def sigmoid_numpy_overflow(v):  # right slope, but np.exp(800) overflows (a warning) at v = -800
    o = 1 / (1 + np.exp(-v.data))
    return Value(o, (v,), (o * (1 - o),), "sigmoid")


def sigmoid_torch_grad_on_copy(v):
    t = torch.tensor(v.data, dtype=torch.float64, requires_grad=True)
    (slope,) = torch.autograd.grad(torch.sigmoid(t), t)
    return Value(torch.sigmoid(t).item(), (v,), (slope.item(),), "sigmoid")


ENGINE_BACKWARD = Value.backward  # saved before the check, as a learner's notebook cell could


def sigmoid_saved_backward_on_copy(v):  # the engine's backward under another name
    copy = Value(v.data)
    chain = 1 / (1 + (-copy).exp()) if v.data >= 0 else copy.exp() / (1 + copy.exp())
    ENGINE_BACKWARD(chain)
    return Value(chain.data, (v,), (copy.grad,), "sigmoid")


def sigmoid_central_difference(v, h=1e-5):  # one node, but a numerical slope
    def f(x):
        return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))
    return Value(f(v.data), (v,), ((f(v.data + h) - f(v.data - h)) / (2 * h),), "sigmoid")


def backward(root, accumulate=True, reset=True, seed=1.0, reverse=True):
    order = topological_order(root)
    if reset:
        for node in order:
            node.grad = 0.0
    root.grad = seed
    for node in (reversed(order) if reverse else order):
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            if accumulate:
                parent.grad += local * node.grad
            else:
                parent.grad = local * node.grad


def backward_recursive(root):
    """Another correct formulation: push each node's gradient to its parents, in reverse order."""
    order = topological_order(root)
    grads = {id(node): 0.0 for node in order}
    grads[id(root)] = 1.0
    for node in reversed(order):
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            grads[id(parent)] += local * grads[id(node)]
    for node in order:
        node.grad = grads[id(node)]


def measured_backward_flops():
    """The exercise's count, measured: 64 -> 256 -> 128 -> 64, first layer frozen, 100 rows."""
    net = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 128), nn.Tanh(),
                        nn.Linear(128, 64))
    net[0].requires_grad_(False)
    out = net(torch.zeros(100, 64))
    with FlopCounterMode(display=False) as count:
        (out**2).mean().backward()
    return count.get_total_flops()


def uncorrected_step(t, lr, beta1, beta2):
    t = np.asarray(t)
    return lr * (1 - beta1**t) / np.sqrt(1 - beta2**t)


def uncorrected_by_loop(t, lr, beta1, beta2):
    m = v = 0.0
    for _ in range(t):
        m, v = beta1 * m + (1 - beta1), beta2 * v + (1 - beta2)
    return lr * m / math.sqrt(v)


def uncorrected_fractional_loop(t, lr, beta1, beta2):
    """A vectorised loop over the steps whose last step is a fraction of one: it takes an array
    and has a value between two steps, but it loops."""
    t = np.asarray(t, dtype=np.float64)
    m, v = np.zeros_like(t), np.zeros_like(t)
    for k in range(1, int(np.ceil(t.max())) + 1):
        part = np.clip(t - (k - 1), 0.0, 1.0)  # 1 for a whole step, the fraction for the last
        m = beta1**part * m + (1 - beta1**part)
        v = beta2**part * v + (1 - beta2**part)
    return lr * m / np.sqrt(v)


def uncorrected_simulated(t, lr, beta1, beta2):
    """A loop over the steps for each t: it takes an array, but it is a simulation."""
    def one(steps):
        m = v = 0.0
        for _ in range(int(steps)):
            m, v = beta1 * m + (1 - beta1), beta2 * v + (1 - beta2)
        return lr * m / math.sqrt(v)
    return np.array([one(k) for k in np.asarray(t).ravel()]).reshape(np.shape(t))


def expit(x):  # the learner's own helper, under SciPy's name for the sigmoid
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def sigmoid_with_own_expit(v):
    o = expit(v.data)
    return Value(o, (v,), (o * (1 - o),), "sigmoid")


def sigmoid_reset_then_chain_on_copy(v):  # the engine's chain on a copy, without overflow
    copy = Value(v.data)
    chain = 1 / (1 + (-copy).exp()) if v.data >= 0 else copy.exp() / (1 + copy.exp())
    chain.backward()
    return Value(chain.data, (v,), (copy.grad,), "sigmoid")


def own_topological_order(root):  # the learner's own helper
    order, seen = [], set()

    def visit(node):
        if node not in seen:
            seen.add(node)
            for parent in node.parents:
                visit(parent)
            order.append(node)
    visit(root)
    return order


def backward_sending(root):  # the notebook's given function: no order, each visit sends again
    root.grad = 1.0

    def send(node):
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            parent.grad += local * node.grad
            send(parent)

    send(root)


def backward_per_path(root):  # each path's own product pushed down: right, with no order at all
    for node in topological_order(root):
        node.grad = 0.0

    def push(node, contribution):
        node.grad += contribution
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            push(parent, local * contribution)

    push(root, 1.0)


def backward_sending_reset(root):  # the given function with the grads zeroed first: half fixed
    for node in topological_order(root):
        node.grad = 0.0
    backward_sending(root)


def backward_with_own_order(root):
    order = own_topological_order(root)
    for node in order:
        node.grad = 0.0
    root.grad = 1.0
    for node in reversed(order):
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            parent.grad += local * node.grad


def backward_reset_then_engine(root):  # zero every grad, then the engine's backward pass
    for node in topological_order(root):
        node.grad = 0.0
    root.backward()


ROWS = [
    # a backward pass run on a copy, or a node of PyTorch's graph, gives the right node: a note
    *right(nb08.check_sigmoid, node=sigmoid, slope_in_v=sigmoid_slope_in_v,
           own_expit=sigmoid_with_own_expit, saved_backward_on_copy=sigmoid_saved_backward_on_copy,
           chain_on_copy=sigmoid_reset_then_chain_on_copy,
           torch_backward_on_copy=sigmoid_torch_backward_on_copy,
           torch_grad_on_copy=sigmoid_torch_grad_on_copy, grad_fn_slope=sigmoid_grad_fn),
    *wrong(
        nb08.check_sigmoid,
        overflows=(sigmoid_overflowing, "x = -800: e^800 overflows a float; for x < 0 write it "
                   "with e^x alone: raised OverflowError: math range error"),
        from_ops=(sigmoid_from_ops, "sigmoid(0) = 0.5, slope 0.25: a chain of the engine's "
                  "operations: its backward pass finds the derivative for you; build one node, "
                  "Value(o, (v,), (your derivative,), 'sigmoid'); its parents: expected 'v "
                  "alone', got '2 parent(s), not v alone'"),
        overflows_from_ops=(lambda v: 1 / (1 + (-v).exp()),
                            "x = 2: a chain of the engine's operations: its backward pass finds "
                            "the derivative for you"),
        returns_v=(lambda v: v, "sigmoid(v): values differ: expected 0.8807970779778823, got 2.0"),
        slope_s=(lambda v: sigmoid_overflowing(v, slope=lambda s: s),
                 "sigmoid(0) = 0.5, slope 0.25: its local derivative is o itself: differentiate "
                 "(1 + e^-v)^-1 with the chain rule; d sigmoid / dv: values differ: expected "
                 "0.25, got 0.5"),
        a_float=(lambda v: sigmoid(v).data, "raised TypeError: sigmoid must return a Value, got "
                 "float"),
        detached=(lambda v: Value(sigmoid(v).data),
                  "its parents: expected 'v alone', got '0 parent(s), not v alone'"),
        backward_on_copy=(sigmoid_backward_on_copy, "x = -800: e^800 overflows a float; for x < 0 "
                          "write it with e^x alone: raised OverflowError"),
        numpy_overflow=(sigmoid_numpy_overflow, "x = -800: e^800 overflows a float; for x < 0 "
                        "write it with e^x alone: right value, but it warned"),
        sympy_slope=(sigmoid_sympy, "x = -800: e^800 overflows a float; for x < 0 write it with "
                     "e^x alone: raised OverflowError: math range error"),
        complex_step=(sigmoid_complex_step, "x = -800: e^800 overflows a float; for x < 0 write "
                      "it with e^x alone: raised OverflowError"),
        central_difference=(sigmoid_central_difference, "sigmoid(0) = 0.5, slope 0.25: "
                            "d sigmoid / dv: values differ"),
    ),
    # the engine's backward pass adds to the grads that are there: a note where they start at 0
    *right(nb08.check_backward, worked=backward, dictionary=backward_recursive,
           own_order=backward_with_own_order, reset_then_engine=backward_reset_then_engine,
           per_path=backward_per_path),
    *wrong(
        nb08.check_backward,
        given=(backward_sending, "h*h + h with h = tanh(a) at a = 0.5: the node h has two users, "
                                 "and must hear from both: still the bug: a node hands its grad "
                                 "on before all of its users have added theirs"),
        given_again=(backward_sending, "its grads still holding an earlier pass's: start from 0: "
                                       "it adds to the grads an earlier pass left"),
        given_zeroed=(backward_sending_reset, "u*u + u with u = t*t, t = tanh(x*y): a reused node "
                                              "above another reused node: still the bug"),
        assigns=(lambda r: backward(r, accumulate=False),
                 "a*a + a at a = 3: a is used three times, so 2a + 1 = 7: parent.grad = ... keeps "
                 "only the last contribution; add them up; values differ: expected [7.], got "
                 "[3.]"),
        forward_order=(lambda r: backward(r, reverse=False),
                       "a*a + a at a = 3: a is used three times, so 2a + 1 = 7: a walk from the "
                       "start of topological_order: a node passes its grad on before its users "
                       "have added theirs"),
        no_seed=(lambda r: backward(r, seed=0.0),
                 "the neuron of section 1: every value used once: every leaf gradient is 0: the "
                 "root's grad was not 1"),
        without_reset=(lambda r: backward(r, reset=False),
                       "its grads still holding an earlier pass's: start from 0: it adds to the "
                       "grads an earlier pass left (as root.backward() does): set them to 0 first"),
        calls_backward=(lambda r: r.backward(),
                        "it adds to the grads an earlier pass left (as root.backward() does)"),
        saved_engine_backward=(lambda root: ENGINE_BACKWARD(root),
                               "its grads still holding an earlier pass's: start from 0: it adds "
                               "to the grads an earlier pass left"),
    ),
    *right(nb08.check_uncorrected_step, worked=uncorrected_step,
           exp_log=lambda t, lr, b1, b2: lr * (1 - np.exp(t * np.log(b1)))
           / np.sqrt(1 - np.exp(t * np.log(b2)))),
    *wrong(
        nb08.check_uncorrected_step,
        first_step_only=(lambda t, lr, b1, b2: lr * (1 - b1) / np.sqrt(1 - b2) + 0 * t,
                         "steps 1, 2, 3, 12 as one array: about 6.6 lr at 12: the first step's "
                         "size at every t; values differ"),
        no_square_root=(lambda t, lr, b1, b2: lr * (1 - b1**t) / (1 - b2**t),
                        "step 1 with the defaults: 3.16 lr: no square root over v_t; values "
                        "differ: expected [0.31622777], got [10.]"),
        corrected=(lambda t, lr, b1, b2: lr + 0 * t,
                   "step 1 with the defaults: 3.16 lr: lr at every step: that is the corrected "
                   "step; values differ: expected [0.31622777], got [0.1]"),
        betas_swapped=(lambda t, lr, b1, b2: uncorrected_step(t, lr, b2, b1),
                       "step 1 with the defaults: 3.16 lr: beta1 and beta2 swapped; values "
                       "differ"),
        loop=(uncorrected_by_loop, "steps 1, 2, 3, 12 as one array: about 6.6 lr at 12: raised "
                                   "TypeError"),
        simulated_per_entry=(uncorrected_simulated,
                             "t = 2.5 and 12.5, between two steps: a formula has a value there: "
                             "these are the sizes of the whole steps int(t), as a loop over "
                             "range(int(t)) gives"),
        vectorized_loop=(np.vectorize(lambda t, lr, b1, b2: uncorrected_simulated(
                             np.array([t]), lr, b1, b2)[0]),
                         "these are the sizes of the whole steps int(t)"),
        fractional_loop=(uncorrected_fractional_loop, "t = inf: the limit, lr itself, which no "
                         "loop reaches: raised OverflowError: cannot convert float infinity to "
                         "integer"),
        fractional_loop_why=(uncorrected_fractional_loop, "t = inf: the limit, lr itself, which "
                             "no loop reaches"),
        simulated_ceil=(lambda t, lr, b1, b2: uncorrected_simulated(np.ceil(t), lr, b1, b2),
                        "these are the sizes of the whole steps ceil(t), as a loop over "
                        "range(ceil(t)) gives"),
    ),
    *right(nb08.check_backward_flops, exact=9_830_400, rounded=9.8e6,
           measured=measured_backward_flops()),
    *wrong(
        nb08.check_backward_flops,
        four_np=(22_937_600, "22,937,600 is too high: 4NP, every product of every layer"),
        data_unfrozen=(19_660_800, "4NP less layer 1's dℒ/dX"),
        layer_2_input=(16_384_000, "layer 2 still computes its dℒ/dX"),
        forward=(11_468_800, "2NP, the forward pass"),
        weights_only=(8_192_000, "only the weight gradients"),
        old_network=(6_553_600, "6,553,600 is too low: from the top layer down"),
    ),
]

test_checker = table_test(ROWS)


def test_the_checked_formula_is_adams_recurrence():
    steps = [1, 2, 3, 12, 100, 1000]
    by_loop = [uncorrected_by_loop(t, 0.1, 0.9, 0.999) for t in steps]
    np.testing.assert_allclose(nb08._formula(np.array(steps), 0.1, 0.9, 0.999), by_loop,
                               rtol=1e-12)


def test_a_note_names_a_library_shortcut_but_not_the_learners_own_helper(capsys):
    assert nb08.check_sigmoid(sigmoid_with_own_expit).note is None
    assert "it calls backward" in nb08.check_sigmoid(sigmoid_saved_backward_on_copy).note
    assert nb08.check_backward(backward_with_own_order).note is None
    assert "it calls backward" in nb08.check_backward(backward_reset_then_engine).note
