"""The notebook 13 checkers accept the reference solutions and catch plausible mistakes."""

import numpy as np

from course_utils.checks import nb13


def _stub(*args):
    raise NotImplementedError


def test_causal_mask_checker():
    def good(T):
        if T < 1:
            raise ValueError("T")
        return np.arange(T)[None, :] <= np.arange(T)[:, None]

    assert nb13.check_causal_mask(good).passed
    upper = nb13.check_causal_mask(lambda T: np.triu(np.ones((T, T), dtype=bool)))
    assert upper.status == "failed"  # transposed: the future instead of the past
    strict = nb13.check_causal_mask(lambda T: np.tril(np.ones((T, T), dtype=bool), -1))
    assert strict.status == "failed"  # forgot the diagonal
    assert nb13.check_causal_mask(_stub).status == "not attempted"


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_cross_attention_checker():
    def good(x, m, wq, wk, wv):
        if x.shape[-1] != m.shape[-1]:
            raise ValueError("features")
        q, k = x @ wq, m @ wk
        return _softmax(q @ k.T / np.sqrt(q.shape[-1])) @ (m @ wv)

    def self_attention(x, m, wq, wk, wv):  # K, V from the decoder input by mistake
        if x.shape[-1] != m.shape[-1]:
            raise ValueError("features")
        q, k = x @ wq, x @ wk
        return _softmax(q @ k.T / np.sqrt(q.shape[-1])) @ (x @ wv)

    def unscaled(x, m, wq, wk, wv):  # forgot the 1/sqrt(d_k)
        if x.shape[-1] != m.shape[-1]:
            raise ValueError("features")
        return _softmax((x @ wq) @ (m @ wk).T) @ (m @ wv)

    def naive_softmax(x, m, wq, wk, wv):  # overflows on large scores
        if x.shape[-1] != m.shape[-1]:
            raise ValueError("features")
        s = (x @ wq) @ (m @ wk).T / np.sqrt(wq.shape[-1])
        with np.errstate(over="ignore", invalid="ignore"):
            e = np.exp(s)
            return (e / e.sum(axis=-1, keepdims=True)) @ (m @ wv)

    assert nb13.check_cross_attention(good).passed
    for wrong in (self_attention, unscaled, naive_softmax):
        assert nb13.check_cross_attention(wrong).status == "failed", wrong.__name__
    assert nb13.check_cross_attention(_stub).status == "not attempted"


def test_transformer_params_checker():
    def good(v, d, ff, n):
        a, f, ln = 4 * d * d + 4 * d, 2 * d * ff + ff + d, 2 * d
        return n * (a + f + 2 * ln) + n * (2 * a + f + 3 * ln) + v * d

    def no_cross_attention(v, d, ff, n):
        a, f, ln = 4 * d * d + 4 * d, 2 * d * ff + ff + d, 2 * d
        return n * (a + f + 2 * ln) + n * (a + f + 2 * ln) + v * d

    def no_biases(v, d, ff, n):
        a, f, ln = 4 * d * d, 2 * d * ff, 2 * d
        return n * (a + f + 2 * ln) + n * (2 * a + f + 3 * ln) + v * d

    assert nb13.check_transformer_params(good).passed
    assert nb13.check_transformer_params(no_cross_attention).status == "failed"
    assert nb13.check_transformer_params(no_biases).status == "failed"
    assert nb13.check_transformer_params(_stub).status == "not attempted"


def test_layer_flops_checker():
    assert nb13.check_layer_flops(lambda n, d: (4 * n * n * d, 4 * n * d * d)).passed
    swapped = nb13.check_layer_flops(lambda n, d: (4 * n * d * d, 4 * n * n * d))
    assert swapped.status == "failed"
    halved = nb13.check_layer_flops(lambda n, d: (2 * n * n * d, 2 * n * d * d))
    assert halved.status == "failed"
    assert nb13.check_layer_flops(_stub).status == "not attempted"
