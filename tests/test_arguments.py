"""The one argument rule of the whole package, checked on every public function and method.

The rule (CONTRIBUTING.md): ``TypeError`` for a wrong type, ``ValueError`` for a wrong value,
both naming the argument; NumPy scalars are accepted wherever Python numbers are, and ``bool``
is never a number. Objects are arguments too: a model, an optimizer, a vocabulary or a config
of the wrong type is a ``TypeError`` naming it. ``ROWS`` holds the number arguments (a NumPy
scalar gives the same result as the Python number), ``BAD`` every other wrong argument, and
``test_every_public_callable_is_in_the_table`` fails for a public callable of any module that
neither covers nor ``EXEMPT`` lists.
"""

import importlib
import inspect
import math
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import matplotlib
import numpy as np
import pytest
import torch
from torch import nn

import course_utils
from course_utils import (
    attention,
    attention_memory,
    autograd,
    calculus,
    costs,
    cpu_grid,
    data,
    diagrams,
    env,
    information,
    kv_cache,
    language_model,
    layers,
    linalg,
    linear_attention,
    measure,
    norms,
    online_softmax,
    optim,
    plotting,
    positional,
    sampling,
    softmax,
    stats,
    tables,
    tiled,
    training,
    triton_attention,
)

# checks: its checkers take learners' functions and have their own tests; validation: the guards
# themselves, each tested on every kind of wrong argument in tests/test_validation.py
NOT_TABLED = {"checks", "validation"}
MODULE_NAMES = sorted(info.name for info in pkgutil.iter_modules(course_utils.__path__)
                      if info.name not in NOT_TABLED)
MODULES = tuple(importlib.import_module(f"course_utils.{name}") for name in MODULE_NAMES)
NUMBER_TYPES = {"int", "float", "Number"}  # an annotation naming one of these takes a number
# results, batches and errors the package builds (see EXEMPT)
RECORDS = {linalg.PowerIterationResult, data.Batch, autograd.Graph, autograd.GraphEdge,
           autograd.GraphNode, plotting.FigureOverlapError, diagrams.Stage,
           tiled.TileMap, tiled.TiledAttention, language_model.SpeculativeStats}


def _where(func: Callable) -> str:
    """``module.qualname`` of a function, class or method (the module's path inside
    course_utils: ``diagrams.maths.pipeline``), as the coverage test names it."""
    return f"{func.__module__.removeprefix('course_utils.')}.{func.__qualname__}"


@dataclass(frozen=True)
class Row:
    """``func(**kwargs)`` is a valid call; ``name`` is one of its numeric arguments, ``numpy`` a
    valid value of it as a NumPy scalar (None: its value in ``kwargs`` as ``np.int64``);
    ``wrong_type`` and ``wrong_value`` (None: every value of the type is valid) must be refused.
    ``kwargs`` may be a factory, for arguments that a call changes; ``call`` replaces ``func`` to
    turn the result into something comparable."""

    func: Callable
    kwargs: dict | Callable[[], dict]
    name: str
    numpy: np.generic | None
    wrong_type: object
    wrong_value: object
    call: Callable | None = None

    @property
    def id(self) -> str:
        return f"{_where(self.func)}-{self.name}"


def ints(func, kwargs, names, wrong_value=0, call=None):
    """A row per name in ``names``: an int argument whose valid value is in ``kwargs``."""
    return [Row(func, kwargs, name, None, 2.5, wrong_value, call) for name in names]


def method(obj_factory: Callable[[], object], **kwargs) -> Callable[[], dict]:
    """The keyword arguments of a method call on a fresh ``obj_factory()`` (passed as ``self``)."""
    return lambda: {"self": obj_factory(), **kwargs}


def _tile_map():
    return tiled.TileMap.build(8, 8, 4, 2, causal=True)


def _heatmap():
    import matplotlib.pyplot as plt

    return {"ax": plt.figure().add_subplot()}


def _valid(row: Row) -> dict:
    return row.kwargs() if callable(row.kwargs) else row.kwargs


def _vocab():
    pairs = data.number_pairs(12)
    return pairs, data.Vocabulary.from_sentences(s for pair in pairs for s in pair)


def _transformer(vocab):
    return layers.Transformer(layers.TransformerConfig(
        d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0,
        src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), max_len=12))


def _seq2seq():
    pairs, vocab = _vocab()
    return {"model": _transformer(vocab), "pairs": pairs[:3], "vocab": vocab, "batch_size": 2,
            "max_len": 3}


def _translate():
    _, vocab = _vocab()
    return {"model": _transformer(vocab), "sentences": ["1 2"], "vocab": vocab, "max_len": 3}


def _loader():
    pairs, vocab = _vocab()
    return {"pairs": pairs, "vocab": vocab, "batch_size": 5, "seed": 3}


def _batches(**kwargs):
    return list(data.BatchLoader(**kwargs))


def _train_kwargs():
    pairs, vocab = _vocab()
    model = _transformer(vocab)
    return {"model": model, "batches": [data.make_batch(pairs, vocab)], "n_steps": 2,
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1), "progress": False}


def _decode_kwargs():
    pairs, vocab = _vocab()
    src = data.pad_sequences([vocab.encode(s, add_eos=True) for s, _ in pairs[:3]], vocab.pad_id)
    return {"model": _transformer(vocab), "src": src, "src_token_mask": src != vocab.pad_id,
            "bos_id": 1, "eos_id": 2, "max_len": 3}


def _setup_notebook(**kwargs):
    with np.printoptions(), matplotlib.rc_context():
        rng = env.setup_notebook(**kwargs)
    torch.set_printoptions(profile="default")
    return rng


def _lm():
    config = language_model.LMConfig(vocab_size=13, d_model=16, n_layers=1, n_heads=4,
                                     n_kv_heads=2, d_ff=32, max_len=16)
    return {"model": language_model.DecoderLM(config), "prompt_ids": torch.tensor([[1, 2, 3]]),
            "max_new_tokens": 2, "temperature": 0.5, "top_k": 3, "top_p": 0.75,
            "generator": torch.Generator().manual_seed(0)}


def _speculative():
    lm = _lm()
    return {"target": lm["model"], "draft": _lm()["model"], "prompt_ids": lm["prompt_ids"],
            "max_new_tokens": 2, "gamma": 2, "temperature": 0.5, "generator": lm["generator"]}


LM_CONFIG = {"vocab_size": 13, "d_model": 16, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2,
             "d_ff": 32, "max_len": 16, "rope_theta": 100.0, "eps": 1e-6, "sliding_window": 4}
TRANSFORMER = {"src_vocab_size": 11, "tgt_vocab_size": 13, "d_model": 8, "n_heads": 2, "d_ff": 16,
               "n_encoder_layers": 1, "n_decoder_layers": 1, "dropout": 0.25, "max_len": 12,
               "eps": 1e-5}
KV = {"n_layers": 2, "n_kv_heads": 2, "head_dim": 8, "n_tokens": 5, "bytes_per_value": 2,
      "batch_size": 3}
CACHE_DIMS = {"n_layers": 2, "batch_size": 1, "n_kv_heads": 2, "head_dim": 4}


def _cache_update():
    return {"self": kv_cache.KVCache(**CACHE_DIMS, max_len=8), "layer": 0,
            "k": torch.ones(1, 2, 3, 4), "v": torch.ones(1, 2, 3, 4)}


P, Q = [0.25, 0.75], [0.5, 0.5]
X = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
QKV = {"q": torch.randn(2, 3, 4), "k": torch.randn(2, 5, 4), "v": torch.randn(2, 5, 6)}
LOGITS = torch.tensor([[2.0, 1.0, 0.5, -1.0], [0.0, 3.0, 1.0, 1.0]])
SPEC = {"p": torch.tensor([0.5, 0.5]), "q": torch.tensor([0.25, 0.75]), "token": 1}
def _sample():
    return {"logits": LOGITS, "generator": torch.Generator().manual_seed(0)}

F, ARR = (lambda t: np.sum(np.asarray(t) ** 2)), np.array([1.0, -2.0])


def _optimizer():
    return {"params": [np.ones((2, 2)), np.zeros(3)], "lr": 0.1}


QKV_EQUAL = {"q": torch.randn(2, 3, 16), "k": torch.randn(2, 5, 16), "v": torch.randn(2, 5, 16)}


def _tiled_rows(func) -> list[Row]:
    """The number arguments of a tiled attention function, on small float64 inputs."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, n, 4, generator=g, dtype=torch.float64) for n in (6, 6, 6))
    if func is tiled.tiled_attention_numpy:
        q, k, v = q.numpy(), k.numpy(), v.numpy()
    kwargs = {"q": q, "k": k, "v": v, "block_q": 4, "block_k": 2}
    if func is tiled.tiled_attention_backward:
        out, lse = tiled.tiled_attention_forward(q, k, v)
        kwargs.update(out=out, lse=lse, grad_out=torch.ones_like(out))
    return [*ints(func, kwargs, ("block_q", "block_k")),
            Row(func, kwargs, "scale", np.float32(0.5), "0.5", -1.0),
            Row(func, {**kwargs, "causal": True}, "window", np.int64(3), 3.0, 0)]


def _triton(**kwargs):
    """``triton_attention_forward``: its result where the kernel runs (triton in interpreter
    mode), else the ModuleNotFoundError that says triton is missing, after the argument checks."""
    try:
        return triton_attention.triton_attention_forward(**kwargs)
    except ModuleNotFoundError as missing:
        return str(missing)


def _figure(func):
    """``func(**kwargs)``'s figure, closed, as the texts it draws (comparable across calls)."""
    def call(**kwargs):
        import matplotlib.pyplot as plt

        fig = func(**kwargs)
        texts = sorted(t.get_text() for t in fig.findobj(matplotlib.text.Text))
        plt.close(fig)
        return texts

    return call


def _image(**kwargs):
    import matplotlib.pyplot as plt

    image = diagrams.annotated_heatmap(**kwargs)
    limits = image.get_clim()
    plt.close(image.figure)
    return limits


def _compiled(**kwargs):
    """``compile_ahead``'s stages, or the reason it cannot compile here, after the checks."""
    try:
        return sorted(triton_attention.compile_ahead(**kwargs))
    except (ModuleNotFoundError, RuntimeError) as reason:
        return str(reason)


def _mha_forward():
    return {"self": attention.MultiHeadAttention(8, 2), "query": SEQ, "key": SEQ, "value": SEQ,
            "causal": False}


ROWS = [
    *ints(diagrams.paged_cache, {"tables": [[0], [1]], "lengths": [1, 2], "n_blocks": 4,
                                 "block_size": 2}, ("n_blocks", "block_size"),
          call=_figure(diagrams.paged_cache)),
    *ints(diagrams.speculative_gain, {"k_max": 5, "draft_cost": 0.2}, ("k_max",),
          call=_figure(diagrams.speculative_gain)),
    Row(diagrams.speculative_gain, {"k_max": 5, "draft_cost": 0.2}, "draft_cost",
        np.float64(0.2), "x", -1.0, _figure(diagrams.speculative_gain)),
    *ints(diagrams.speculative_round, {"proposed": ["a", "b"], "accepted": 1, "final": "c"},
          ("accepted",), wrong_value=-1, call=_figure(diagrams.speculative_round)),
    Row(diagrams.speculative_round, {"proposed": ["a", "b"], "accepted": 1, "final": "c",
                                     "draft_cost": 0.2}, "draft_cost", np.float64(0.2), "x",
        -1.0, _figure(diagrams.speculative_round)),
    *ints(diagrams.rope_rotation, {"m": 1, "n": 3, "shift": 2}, ("m", "n"), wrong_value=-1,
          call=_figure(diagrams.rope_rotation)),
    *ints(diagrams.rope_rotation, {"m": 1, "n": 3, "shift": 2}, ("shift",),
          call=_figure(diagrams.rope_rotation)),
    Row(diagrams.rope_rotation, {"omega": 0.4}, "omega", np.float64(0.4), "x", math.inf,
        _figure(diagrams.rope_rotation)),
    Row(diagrams.rope_scores, {"q": np.ones(4), "k": np.ones(4), "base": 10000.0}, "base",
        np.float64(10000.0), "x", 0.0, _figure(diagrams.rope_scores)),
    # calculus
    Row(calculus.derivative, {"f": lambda t: t**3}, "x", np.float32(1.5), "1", math.nan),
    Row(calculus.derivative, {"f": lambda t: t**3, "x": 1.0}, "h", np.float32(0.5), "1", 0.0),
    Row(calculus.numerical_jacobian, {"f": lambda t: t**2, "x": ARR}, "h", np.float32(0.5),
        "h", -1.0),
    Row(calculus.numerical_gradient, {"f": F, "x": ARR}, "h", np.float64(0.25), None, math.inf),
    Row(calculus.gradient_check, {"f": F, "grad": lambda t: 2 * t, "x": ARR}, "h",
        np.float32(0.5), [0.5], 0.0),
    Row(calculus.softmax_jacobian, {"z": X}, "axis", np.int64(-1), -1.0, 2),
    # information
    Row(information.entropy, {"p": P}, "axis", np.int64(-1), 0.5, 1),
    Row(information.entropy, {"p": P}, "base", np.float32(2.0), "2", 1.0),
    Row(information.cross_entropy, {"p": P, "q": Q}, "axis", np.int64(0), 0.5, -2),
    Row(information.cross_entropy, {"p": P, "q": Q}, "base", np.int64(10), "e", -2.0),
    Row(information.cross_entropy, {"p": P, "q": Q}, "clip", np.float32(0.25), "0", 1.0),
    Row(information.kl_divergence, {"p": P, "q": Q}, "axis", np.int64(0), 0.0, 1),
    Row(information.kl_divergence, {"p": P, "q": Q}, "base", np.float64(2.0), "2", 0.0),
    Row(information.cross_entropy_from_logits, {"logits": X, "targets": np.array([0, 2])},
        "ignore_index", np.int64(2), 2.0, None),
    # softmax
    *[Row(f, {"x": X}, "axis", np.int64(0), 0.5, 2) for f in
      (softmax.softmax, softmax.log_softmax, softmax.logsumexp)],
    *[Row(f, {"x": X}, "temperature", np.float32(0.5), "1", 0.0) for f in
      (softmax.softmax, softmax.log_softmax)],
    # linalg
    *ints(linalg.matmul_flops, {"m": 2, "k": 3, "n": 4}, ("m", "k", "n")),
    Row(linalg.power_iteration, {"a": np.diag([3.0, 1.0])}, "max_iters", np.int64(5), 5.0, 0),
    Row(linalg.power_iteration, {"a": np.diag([3.0, 1.0])}, "tol", np.float32(0.125), "1e-3",
        1.0),
    Row(linalg.power_iteration, {"a": np.diag([3.0, 1.0])}, "seed", np.int64(7), 7.0, -1),
    # stats
    Row(stats.mean, {"x": X}, "axis", np.int64(1), 1.0, 2),
    Row(stats.variance, {"x": X}, "ddof", np.int64(1), 1.0, -1),
    Row(stats.variance, {"x": X}, "axis", np.int64(-1), "-1", -3),
    Row(stats.std, {"x": X}, "ddof", np.int64(1), 1.5, -1),
    Row(stats.std, {"x": X}, "axis", np.int64(0), 0.0, 2),
    Row(stats.standardize, {"x": X}, "axis", np.int64(0), 0.0, 2),
    Row(stats.standardize, {"x": X}, "eps", np.float32(0.5), "0", -1.0),
    Row(stats.sample_categorical, {"probs": P, "rng": 0}, "n", np.int64(5), 5.0, 0),
    Row(stats.sample_categorical, {"probs": P, "n": 5}, "rng", np.int64(3), 3.0, -1),
    Row(stats.empirical_frequencies, {"samples": [0, 1, 1]}, "n_categories", np.int64(3), 3.0, 0),
    *ints(stats.dot_product_samples, {"d_k": 4, "n_samples": 10, "rng": 0}, ("d_k", "n_samples")),
    Row(stats.dot_product_samples, {"d_k": 4, "n_samples": 10}, "rng", np.int64(3), 3.0, -1),
    Row(stats.dot_product_variance, {"d_ks": [4], "rng": 0}, "n_samples", np.int64(10), 10.0, 1),
    Row(stats.dot_product_variance, {"d_ks": [4], "n_samples": 10}, "rng", np.uint8(3), 3.0, -1),
    Row(stats.normal_pdf, {"x": X}, "mean", np.float32(0.5), "0", math.inf),
    Row(stats.normal_pdf, {"x": X}, "std", np.float32(1.5), "1", 0.0),
    # optim
    *[Row(cls, _optimizer, name, np.float32(0.5), "0.1", -1.0)
      for cls, names in ((optim.Optimizer, ("lr",)),
                         (optim.SGD, ("lr", "momentum", "weight_decay")),
                         (optim.Adam, ("lr", "eps", "weight_decay")),
                         (optim.AdamW, ("lr", "eps", "weight_decay"))) for name in names],
    # autograd
    Row(autograd.Value, {}, "data", np.float32(1.5), "1", math.nan),
    Row(autograd.Value.__pow__, lambda: {"self": autograd.Value(2.0)}, "exponent",
        np.float32(0.5), [2], math.inf),
    # positional
    *[Row(f, {"d_model": 6}, "base", np.float32(100.0), "100", 1.0) for f in
      (positional.angular_frequencies, positional.wavelengths)],
    *ints(positional.angular_frequencies, {"d_model": 6}, ("d_model",)),
    *ints(positional.wavelengths, {"d_model": 6}, ("d_model",)),
    *ints(positional.sinusoidal_encoding, {"n_positions": 3, "d_model": 4},
          ("n_positions", "d_model"), wrong_value=-2),
    Row(positional.sinusoidal_encoding, {"n_positions": 3, "d_model": 4}, "base",
        np.float64(50.0), "50", 0.5),
    Row(positional.relative_position_matrix, {"d_model": 4}, "k", np.float32(-2.5), "1", math.nan),
    *ints(positional.relative_position_matrix, {"k": 1, "d_model": 4}, ("d_model",)),
    Row(positional.relative_position_matrix, {"k": 1, "d_model": 4}, "base", np.int64(2), "2", 1),
    Row(positional.apply_rope, {"x": torch.randn(3, 4), "positions": [0, 1, 2]}, "base",
        np.float32(100.0), "1e4", -1.0),
    *ints(positional.rope_frequencies, {"head_dim": 8}, ("head_dim",)),
    Row(positional.rope_frequencies, {"head_dim": 8}, "base", np.float32(100.0), "1e4", 1.0),
    *ints(positional.layout_permutation, {"head_dim": 8}, ("head_dim",)),
    # attention
    *ints(attention.causal_mask, {"lq": 3, "lk": 4}, ("lq", "lk"), wrong_value=-1),
    Row(attention.token_mask, {"lengths": [1, 3]}, "max_len", np.int64(4), 4.0, -1),
    Row(attention.softmax_attention, QKV, "scale", np.float32(0.5), "0.5", -1.0),
    Row(attention.softmax_attention, QKV, "dropout_p", np.float32(0.25), "0.1", 1.0),
    *ints(attention.split_heads, {"x": torch.randn(2, 3, 8), "n_heads": 2}, ("n_heads",)),
    *ints(attention.MultiHeadAttention, {"d_model": 8, "n_heads": 2}, ("d_model", "n_heads")),
    Row(attention.MultiHeadAttention, {"d_model": 8, "n_heads": 2}, "dropout", np.float32(0.25),
        "0.1", -0.5),
    # costs
    *ints(costs.attention_flops, {"lq": 4, "lk": 8, "d": 2, "d_v": 3}, ("lq", "lk", "d", "d_v")),
    *ints(costs.naive_attention_bytes, {"lq": 4, "lk": 8, "itemsize": 2},
          ("lq", "lk", "itemsize")),
    *ints(costs.standard_attention_io, {"n": 4, "d": 2}, ("n", "d")),
    *ints(costs.tiled_attention_io, {"n": 16, "d": 2, "m": 16}, ("n", "d", "m")),
    # measure
    *ints(measure.best_time, {"call": lambda: None, "repeats": 2}, ("repeats",),
          call=lambda **kw: 0.0 <= measure.best_time(**kw) < 1),
    *ints(measure.best_times, {"calls": {"a": lambda: None}, "repeats": 2}, ("repeats",),
          call=lambda **kw: sorted(measure.best_times(**kw))),
    *ints(measure.copy_bandwidth, {"nbytes": 4096, "repeats": 1}, ("repeats",),
          call=lambda **kw: measure.copy_bandwidth(**kw) > 0),
    Row(measure.copy_bandwidth, {"nbytes": 4096, "repeats": 1}, "nbytes", None, 4096.0, 2,
        call=lambda **kw: measure.copy_bandwidth(**kw) > 0),
    *ints(measure.matmul_flop_rate, {"n": 8, "repeats": 1}, ("n", "repeats"),
          call=lambda **kw: measure.matmul_flop_rate(**kw) > 0),
    *ints(attention_memory.peak_extra_memory, {"method": "fused", "n": 64, "d": 8, "threads": 1},
          ("n", "d", "threads"), call=lambda **kw: attention_memory.peak_extra_memory(**kw) >= 0),
    # tiled
    *[Row(online_softmax.merge_softmax_stats, {"m1": 0.0, "l1": 1.0, "m2": 1.0, "l2": 2.0}, name,
          np.float32(0.5), "0.5", wrong) for name, wrong in
      (("m1", math.nan), ("l1", -1.0), ("m2", math.inf), ("l2", math.inf))],
    *ints(tiled.visited_tiles, {"lq": 8, "lk": 8, "block_q": 4, "block_k": 2},
          ("lq", "lk", "block_q", "block_k")),
    Row(tiled.visited_tiles, {"lq": 8, "lk": 8, "block_q": 4, "block_k": 2, "causal": True},
        "window", np.int64(3), 3.0, 0),
    *ints(tiled.dense_mask, {"lq": 8, "lk": 8, "block_q": 4, "block_k": 2},
          ("lq", "lk", "block_q", "block_k")),
    Row(tiled.dense_mask, {"lq": 8, "lk": 8, "causal": True}, "window", np.int64(3), 3.0, 0),
    *ints(tiled.TileMap.build, {"lq": 8, "lk": 8, "block_q": 4, "block_k": 2},
          ("lq", "lk", "block_q", "block_k"), call=lambda **kw: tiled.TileMap.build(**kw).visit),
    Row(tiled.TileMap.build, {"lq": 8, "lk": 8, "block_q": 4, "block_k": 2, "causal": True},
        "window", np.int64(3), 3.0, 0, call=lambda **kw: tiled.TileMap.build(**kw).visit),
    *[row for func in (tiled.tiled_attention_numpy, tiled.tiled_attention_forward,
                       tiled.tiled_attention_backward, tiled.tiled_attention)
      for row in _tiled_rows(func)],
    # triton_attention
    Row(triton_attention.launch_config, {"dtype": torch.float16, "head_dim": 64,
                                         "capability": None}, "head_dim",
        None, 64.0, 0),
    Row(triton_attention.triton_attention_forward, QKV_EQUAL, "scale", np.float32(0.5), "0.5",
        -1.0, call=_triton),
    Row(triton_attention.triton_attention_forward, {**QKV_EQUAL, "causal": True}, "window",
        np.int64(3), 3.0, 0, call=_triton),
    *[Row(triton_attention.triton_attention_forward, {**QKV_EQUAL, name: 16}, name, None, 16.0,
          24, call=_triton) for name in ("block_q", "block_k")],
    *ints(triton_attention.triton_attention_forward, {**QKV_EQUAL, "num_warps": 4,
                                                      "num_stages": 2},
          ("num_warps", "num_stages"), call=_triton),
    # cpu_grid
    *ints(cpu_grid.batch_slices, {"batch": 3}, ("batch",)),
    # diagrams
    *ints(diagrams.head_split, {"n_heads": 2}, ("n_heads",), call=_figure(diagrams.head_split)),
    *ints(diagrams.head_reshape, {"n_tokens": 2, "d_model": 4, "n_heads": 2},
          ("n_tokens", "d_model", "n_heads"), call=_figure(diagrams.head_reshape)),
    *ints(diagrams.matmul_backward, {"n": 3, "d_in": 2, "d_out": 2}, ("n", "d_in", "d_out"),
          call=_figure(diagrams.matmul_backward)),
    *[Row(diagrams.annotated_heatmap, lambda: {**_heatmap(), "data": np.eye(2)}, name,
          np.float32(0.5), "0.5", math.nan, call=_image) for name in ("vmin", "vmax")],
    Row(diagrams.annotated_heatmap, lambda: {**_heatmap(), "data": np.eye(2)}, "fontsize",
        np.float32(8.0), "8", 0.0, call=_image),
    *ints(diagrams.tensor_sheets, {"sentence": 1, "token": 2}, ("sentence", "token"),
          wrong_value=-1, call=_figure(diagrams.tensor_sheets)),
    # tiled: the map's accessors
    *[Row(func, method(_tile_map, **{name: 1}), name, None, 1.0, 9)
      for func, name in ((tiled.TileMap.rows, "i"), (tiled.TileMap.keys, "j"),
                         (tiled.TileMap.key_blocks, "i"), (tiled.TileMap.query_blocks, "j"))],
    *[Row(tiled.TileMap.hidden, method(_tile_map, i=1, j=1), name, None, 1.0, 9)
      for name in ("i", "j")],
    *ints(tiled.TileMap.retiled, method(_tile_map, block_q=2, block_k=4),
          ("block_q", "block_k"), call=lambda **kw: tiled.TileMap.retiled(**kw).visit),
    Row(triton_attention.compile_ahead, {"capability": (8, 0), "dtype": torch.float16,
                                         "causal": True, "head_dim": 64}, "head_dim", None,
        64.0, 0, call=_compiled),
    # layers
    *ints(layers.FeedForward, {"d_model": 4, "d_ff": 8}, ("d_model", "d_ff")),
    Row(layers.FeedForward, {"d_model": 4, "d_ff": 8}, "dropout", np.float32(0.25), "0", 1.0),
    # the blocks, the model and the count take a TransformerConfig: its fields are the numbers
    *ints(layers.TransformerConfig, TRANSFORMER,
          [n for n in TRANSFORMER if n not in ("dropout", "eps")]),
    Row(layers.TransformerConfig, TRANSFORMER, "dropout", np.float32(0.25), "0", 1.0),
    Row(layers.TransformerConfig, TRANSFORMER, "eps", np.float32(1e-5), "0", 0.0),
    # norms
    *[Row(cls, {"d_model": 4}, "eps", np.float32(1e-5), "1e-5", 0.0)
      for cls in (norms.LayerNorm, norms.RMSNorm)],
    *ints(norms.LayerNorm, {"d_model": 4}, ("d_model",)),
    *ints(norms.RMSNorm, {"d_model": 4}, ("d_model",)),
    # training
    *ints(training.warmup_lr, {"step": 3, "d_model": 16, "warmup": 4}, ("step", "d_model",
                                                                        "warmup")),
    Row(training.warmup_lr, {"step": 3, "d_model": 16, "warmup": 4}, "scale", np.float32(0.5),
        "1", 0.0),
    *[Row(training.warmup_scheduler,
          lambda: {"optimizer": torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=1.0),
                   "d_model": 16, "warmup": 4}, name, numpy, wrong_type, wrong_value,
          lambda **kw: training.warmup_scheduler(**kw).get_last_lr())
      for name, numpy, wrong_type, wrong_value in (("d_model", np.int64(16), 16.0, 0),
                                                   ("warmup", np.int64(4), "4", -1),
                                                   ("scale", np.float32(2.0), "2", -1.0))],
    Row(training.sequence_loss, {"logits": LOGITS[None], "targets": torch.tensor([[1, 3]])},
        "pad_id", np.int64(0), 0.5, None),
    Row(training.sequence_loss, {"logits": LOGITS[None], "targets": torch.tensor([[1, 3]]),
                                 "pad_id": 0}, "label_smoothing", np.float32(0.25), "0.1", 1.5),
    *ints(training.progress_bar, {"total": 3}, ("total",),
          call=lambda **kw: training.progress_bar(**kw).total),
    Row(training.train, _train_kwargs, "n_steps", np.int64(2), 2.0, 0),
    Row(training.train, _train_kwargs, "label_smoothing", np.float32(0.25), "0.1", -0.5),
    Row(training.train, _train_kwargs, "clip_norm", np.float32(0.5), "1", 0.0),
    *ints(training.greedy_decode, _decode_kwargs, ("bos_id", "eos_id"), wrong_value=-1),
    *ints(training.greedy_decode, _decode_kwargs, ("max_len",)),
    *ints(training.translate, _translate, ("max_len",)),
    *ints(training.exact_match, _seq2seq, ("batch_size", "max_len")),
    # data
    *[Row(f, {}, "n", np.int64(3047), 3047.0, -1)
      for f in (data.number_to_words, data.number_to_digits)],
    Row(data.number_pairs, {}, "n_numbers", np.int64(5), 5.0, 0),
    Row(data.split_pairs, {"pairs": data.number_pairs(10)}, "test_fraction", np.float32(0.25),
        "0.2", 1.0),
    Row(data.split_pairs, {"pairs": data.number_pairs(10)}, "seed", np.int64(3), 3.0, -1),
    Row(data.pad_sequences, {"sequences": [[3, 4], [5]]}, "pad_id", np.int64(0), 0.0, None),
    *ints(data.BatchLoader, _loader, ("batch_size",), call=_batches),
    *ints(data.BatchLoader, _loader, ("seed",), wrong_value=-1, call=_batches),
    # plotting
    Row(plotting.text_color, {"value": 0.5, "vmin": 0.0, "vmax": 1.0}, "value", np.float32(0.5),
        "0.5", None),
    Row(plotting.text_color, {"value": 0.5, "vmin": 0.0, "vmax": 1.0}, "vmin", np.float64(0.25),
        None, math.inf),
    Row(plotting.text_color, {"value": 0.5, "vmin": 0.0, "vmax": 1.0}, "vmax", np.float32(2.0),
        [1.0], -1.0),
    # tables
    *ints(tables.format_table, {"rows": [[1, 2.5]], "gap": 3}, ("gap",), wrong_value=-1),
    *ints(tables.print_table, {"rows": [[1, 2.5]], "gap": 3}, ("gap",), wrong_value=-1),
    # env
    Row(env.seed_everything, {}, "seed", np.int64(7), 7.0, -1),
    *ints(env.setup_notebook, {"seed": 3, "precision": 2}, ("seed", "precision"), wrong_value=-1,
          call=_setup_notebook),
    # sampling
    Row(sampling.check_filters, {"top_p": None}, "top_k", np.int64(2), 2.0, 0),
    Row(sampling.check_filters, {"top_k": None}, "top_p", np.float32(0.5), "0.5", 0.0),
    *[row for f, kwargs in ((sampling.filter_probs, {"logits": LOGITS}), (sampling.sample, _sample))
      for row in (Row(f, kwargs, "temperature", np.float32(0.5), "1", 0.0),
                  Row(f, kwargs, "top_k", np.int64(2), 2.0, 0),
                  Row(f, kwargs, "top_p", np.float64(0.5), "0.9", 1.5))],
    *ints(sampling.speculative_accept, lambda: {**SPEC, "rng": torch.Generator().manual_seed(0)},
          ("token",), wrong_value=2),
    Row(sampling.expected_tokens_per_pass, {"gamma": 4}, "alpha", np.float32(0.5), "0.5", 1.5),
    *ints(sampling.expected_tokens_per_pass, {"alpha": 0.5, "gamma": 4}, ("gamma",),
         wrong_value=-1),
    # language_model
    *ints(language_model.LMConfig, LM_CONFIG, [n for n in LM_CONFIG if n not in ("rope_theta",
                                                                                  "eps")]),
    Row(language_model.LMConfig, LM_CONFIG, "rope_theta", np.float32(100.0), "1e4", 1.0),
    Row(language_model.LMConfig, LM_CONFIG, "eps", np.float32(1e-6), "0", 0.0),
    *ints(language_model.kv_cache_bytes, KV, [n for n in KV if n != "n_tokens"]),
    *ints(language_model.kv_cache_bytes, KV, ["n_tokens"], wrong_value=-1),
    Row(language_model.forward_flops, {"config": language_model.LMConfig(**LM_CONFIG)}, "n_new",
        np.int64(3), 3.0, 0),
    Row(language_model.forward_flops, {"config": language_model.LMConfig(**LM_CONFIG),
                                       "n_new": 3}, "n_past", np.int64(2), 2.0, -1),
    *ints(language_model.generate, _lm, ["max_new_tokens"], wrong_value=-1),
    Row(language_model.generate, _lm, "temperature", np.float32(0.5), "0.5", -0.5),
    Row(language_model.generate, _lm, "top_k", np.int64(3), 3.0, 0),
    Row(language_model.generate, _lm, "top_p", np.float32(0.75), "0.9", 0.0),
    Row(language_model.generate, _lm, "eos_token_id", np.int64(2), 2.0, 13),
    *ints(language_model.speculative_generate, _speculative, ["max_new_tokens"], wrong_value=-1),
    *ints(language_model.speculative_generate, _speculative, ["gamma"]),
    Row(language_model.speculative_generate, _speculative, "temperature", np.float32(0.5), "0.5",
        -0.5),
    # kv_cache
    *ints(kv_cache.KVCache, {**CACHE_DIMS, "max_len": 8}, [*CACHE_DIMS, "max_len"]),
    *ints(kv_cache.KVCache, {**CACHE_DIMS, "window": 4}, ["window"]),
    *ints(kv_cache.PagedKVCache, {**CACHE_DIMS, "n_blocks": 4, "block_size": 2},
          [*CACHE_DIMS, "n_blocks", "block_size"]),
    Row(kv_cache.KVCache.update, _cache_update, "layer", np.int64(1), 1.0, 2),
    Row(kv_cache.KVCache.room, lambda: {"self": kv_cache.KVCache(**CACHE_DIMS, max_len=8),
                                        "layer": 0}, "layer", np.int64(1), 1.0, 2),
]


def _call(row: Row, value: object) -> object:
    """``row``'s valid call with ``value`` for its argument, from the same random state."""
    torch.manual_seed(0)
    np.random.seed(0)  # noqa: NPY002 - a code path may use the global state
    return (row.call or row.func)(**{**_valid(row), row.name: value})


def _same(a: object, b: object) -> None:
    """``a`` and ``b`` are equal: the same types, numbers, arrays, tensors and attributes."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    elif isinstance(a, np.random.Generator):
        assert a.bit_generator.state == b.bit_generator.state
    elif isinstance(a, nn.Module):
        _same(a.state_dict(), b.state_dict())
        _same([_public(m) for m in a.modules()], [_public(m) for m in b.modules()])
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif hasattr(a, "__slots__"):
        _same([getattr(a, s) for s in a.__slots__], [getattr(b, s) for s in b.__slots__])
    elif hasattr(a, "__dict__") and not callable(a):
        _same(_public(a), _public(b))
    else:
        assert a == b


def _public(obj: object) -> dict:
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def _naming(name: str) -> str:
    return rf"(?<![\w\[]){re.escape(name)}(?![\w\]])"


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_every_number_argument_follows_the_rule(row: Row) -> None:
    numpy = np.int64(_valid(row)[row.name]) if row.numpy is None else row.numpy
    python = numpy.item()
    assert type(python) in (int, float)
    _same(_call(row, numpy), _call(row, python))
    for wrong in (row.wrong_type, True):
        with pytest.raises(TypeError, match=_naming(row.name)):
            _call(row, wrong)
    if row.wrong_value is not None:
        with pytest.raises(ValueError, match=_naming(row.name)):
            _call(row, row.wrong_value)


def _top_level_union(annotation: str) -> list[str]:
    """``"int | tuple[int, str] | None"`` -> ``["int", "tuple[int, str]", "None"]``."""
    parts, depth, current = [], 0, ""
    for char in annotation:
        depth += (char in "[(") - (char in "])")
        if char == "|" and depth == 0:
            parts, current = [*parts, current.strip()], ""
        else:
            current += char
    return [*parts, current.strip()]


def _numeric_arguments() -> set[str]:
    """``module.qualname-argument`` for every argument annotated as a number of every public
    function, class and public method of the modules."""
    found = set()
    for module in MODULES:
        names = getattr(module, "__all__", None) or [
            name for name, obj in vars(module).items()
            if not name.startswith("_") and callable(obj)
            and getattr(obj, "__module__", None) == module.__name__
        ]
        for obj in (getattr(module, name) for name in names):
            if obj in RECORDS or not callable(obj):
                continue
            methods = [m for n, m in vars(obj).items() if inspect.isfunction(m)
                       and not n.startswith("_")] if inspect.isclass(obj) else []
            for func in (obj, *methods):
                for p in inspect.signature(func).parameters.values():
                    if NUMBER_TYPES & set(_top_level_union(str(p.annotation))):
                        found.add(f"{_where(func)}-{p.name}")
    return found


def test_the_table_covers_every_number_argument() -> None:
    covered = {row.id for row in ROWS}
    assert len(covered) == len(ROWS), "a row is listed twice"
    missing = _numeric_arguments() - covered
    assert not missing, f"add rows to ROWS for {sorted(missing)}"


# ------------------------------------------------------- wrong arrays, tensors and objects

_SKIP = object()


@dataclass(frozen=True)
class Bad:
    """``func(**kwargs)`` with ``value`` for the argument ``name`` raises ``error`` naming it.
    ``kwargs`` may be a factory; ``call`` replaces ``func`` (a context manager, a generator)."""

    func: Callable
    kwargs: dict | Callable[[], dict]
    name: str
    value: object
    error: type[Exception]
    call: Callable | None = None

    @property
    def id(self) -> str:
        return f"{_where(self.func)}-{self.name}-{self.error.__name__}"


def bad(func, kwargs, name, wrong_type=_SKIP, wrong_value=_SKIP, call=None) -> list[Bad]:
    """The rows for ``name``: ``wrong_type`` must give a TypeError, ``wrong_value`` a ValueError
    (either left out when the argument has none)."""
    return [Bad(func, kwargs, name, value, error, call)
            for value, error in ((wrong_type, TypeError), (wrong_value, ValueError))
            if value is not _SKIP]


@cache
def _small_vocab():
    return _vocab()


@cache
def _small_transformer():
    return _transformer(_small_vocab()[1])


@cache
def _small_lm():
    return language_model.DecoderLM(language_model.LMConfig(**LM_CONFIG))


LAYER_CONFIG = layers.TransformerConfig(d_model=8, n_heads=2, d_ff=16, dropout=0.0)
SEQ = torch.randn(2, 3, 8)
MASK = torch.ones(2, 3, dtype=torch.bool)
IDS = torch.tensor([[3, 4, 5], [4, 5, 2]])
ARRAY_2D = np.ones((2, 3))


def _forward(cls, **kwargs):
    """``cls.forward`` on a fresh ``cls(LAYER_CONFIG)``."""
    return method(lambda: cls(LAYER_CONFIG), **kwargs)


def _sdpa_kernel(**kwargs):
    with env.sdpa_kernel(**kwargs):
        pass


STEP = {"q": torch.randn(2, 4), "k": torch.randn(2, 4), "v": torch.randn(2, 6)}
PARTIALS = {"out1": np.ones((2, 3, 4)), "lse1": np.zeros((2, 3)), "out2": np.ones((2, 3, 4)),
            "lse2": np.zeros((2, 3))}
QKV_NUMPY = {name: t.numpy() for name, t in QKV.items()}


def _backward_kwargs():
    out, lse = tiled.tiled_attention_forward(**QKV)
    return {**QKV, "out": out, "lse": lse, "grad_out": torch.ones_like(out)}


def _sgd():
    return optim.SGD([np.ones(2)], lr=0.1)


BAD = [
    # autograd
    *bad(autograd.Value, {"data": 1.0}, "parents", [1.0]),
    *bad(autograd.Value, {"data": 1.0, "parents": (autograd.Value(2.0),)}, "local_grads",
         ("1",), ()),
    *bad(autograd.topological_order, {}, "root", 1.0),
    *bad(autograd.sum_values, {}, "values", 3, []),
    *bad(autograd.computational_graph, {"root": autograd.Value(1.0)}, "root", "x"),
    *bad(autograd.computational_graph, {"root": autograd.Value(1.0)}, "names", ["x"],
         {autograd.Value(2.0): "y"}),
    # calculus
    *bad(calculus.derivative, {"x": 1.0}, "f", 3.0),
    *bad(calculus.numerical_gradient, {"f": F}, "x", "ab", [np.nan]),
    *bad(calculus.numerical_jacobian, {"f": lambda t: t}, "x", "ab", []),
    *bad(calculus.gradient_check, {"f": F, "x": ARR}, "grad", None),
    *bad(calculus.softmax_jacobian, {}, "z", "ab", []),
    # data
    *bad(data.split_pairs, {}, "pairs", 5, [("1", "one")]),
    *bad(data.check_pairs, {}, "pairs", np.array([["1", "one"]]), []),
    *bad(data.check_pairs, {}, "pairs", [("1", 1)]),
    *bad(data.Vocabulary, {}, "tokens", 5, ["a b"]),
    *bad(data.Vocabulary, {}, "tokens", [1]),
    *bad(data.Vocabulary.from_sentences, {}, "sentences", 5),
    *bad(data.Vocabulary.from_sentences, {}, "sentences", [1]),
    *bad(data.Vocabulary.encode, method(lambda: data.Vocabulary(["a"])), "sentence", 5, "a b"),
    *bad(data.Vocabulary.decode, method(lambda: data.Vocabulary(["a"])), "ids", "ab", [99]),
    *bad(data.Vocabulary.decode, method(lambda: data.Vocabulary(["a"])), "ids", [1.5]),
    *bad(data.pad_sequences, {"pad_id": 0}, "sequences", 5, []),
    *bad(data.pad_sequences, {"pad_id": 0}, "sequences", [["a"]], [[]]),
    *bad(data.make_batch, lambda: {"vocab": _small_vocab()[1]}, "pairs",
         np.array([["1", "one"]]), []),
    *bad(data.make_batch, lambda: {"pairs": _small_vocab()[0][:2]}, "vocab", "0123"),
    *bad(data.BatchLoader, lambda: {**_loader(), "vocab": {"1": 3}}, "vocab", {"1": 3},
         call=_batches),
    *bad(data.BatchLoader, _loader, "pairs", 5, [], call=_batches),
    *bad(data.BatchLoader, _loader, "shuffle", 1, call=_batches),
    # env
    *bad(env.pick_device, {}, "name", 5, "tpu"),
    *bad(env.supports_bfloat16, {}, "capability", "8.0", (8,)),
    *bad(env.sdpa_backend, {"dtype": torch.float16}, "capability", 8.0, (8, 0, 1)),
    *bad(env.sdpa_backend, {"capability": (8, 0)}, "dtype", "float16"),
    *bad(env.sdpa_kernel, {}, "backend", 5, "fast", call=_sdpa_kernel),
    # information
    *bad(information.perplexity, {}, "cross_entropy_nats", "1", -1.0),
    *bad(information.entropy, {}, "p", "ab", [0.5, 0.6]),
    *bad(information.cross_entropy, {"q": Q}, "p", None, [1.5, -0.5]),
    *bad(information.kl_divergence, {"p": P}, "q", torch.ones(2), [0.5, 0.25, 0.25]),
    *bad(information.cross_entropy_from_logits, {"logits": X}, "targets", np.array([0.5, 1.0]),
         np.array([0, 3])),
    *bad(information.cross_entropy_from_logits, {"logits": X, "targets": [0, 1]}, "reduction",
         1, "max"),
    # language_model
    *bad(language_model.LMConfig, LM_CONFIG, "tie_embeddings", 1),
    *bad(language_model.LMConfig, {**LM_CONFIG, "n_heads": 3}, "n_heads", wrong_value=3),
    *bad(language_model.forward_flops, {"n_new": 3}, "config", LAYER_CONFIG),
    *bad(language_model.DecoderLM, {}, "config", LAYER_CONFIG),
    *bad(language_model.DecoderLM.forward, method(_small_lm), "ids", np.array([[1, 2]]),
         torch.tensor([[1, 13]])),
    *bad(language_model.DecoderLM.forward, method(_small_lm), "ids", torch.ones(1, 2)),
    *bad(language_model.DecoderLM.forward, method(_small_lm, ids=torch.tensor([[1, 2]])),
         "cache", (torch.ones(1),)),
    *bad(language_model.generate, lambda: {**_lm(), "model": _small_transformer()}, "model",
         _small_transformer()),
    *bad(language_model.generate, _lm, "prompt_ids", [[1, 2, 3]], torch.tensor([1, 2, 3])),
    *bad(language_model.generate, _lm, "use_cache", 1),
    *[row for name in ("target", "draft")
      for row in bad(language_model.speculative_generate, _speculative, name,
                     _small_transformer())],
    *bad(language_model.speculative_generate, _speculative, "prompt_ids", [[1, 2, 3]],
         torch.tensor([[1, 2], [3, 4]])),
    *bad(language_model.speculative_generate, _speculative, "generator",
         np.random.default_rng(0)),
    *bad(language_model.generate, _lm, "generator", np.random.default_rng(0)),
    *bad(language_model.generate, _lm, "attention_mask", torch.ones(1, 3), torch.ones(1, 2).bool()),
    *bad(language_model.generate, _lm, "cache", _lm()["generator"],
         kv_cache.KVCache(1, 1, 2, 4, max_len=2)),
    *bad(language_model.LMConfig, LM_CONFIG, "mlp_bias", 1),
    *bad(language_model.LMConfig, LM_CONFIG, "rope_layout", 1, "split"),
    *bad(language_model.LMConfig, LM_CONFIG, "rope_scaling", "linear", {"rope_type": "yarn"}),
    *bad(language_model.DecoderLM.forward, method(_small_lm, ids=torch.tensor([[1, 2]])),
         "attention_mask", torch.ones(1, 2), torch.ones(1, 3).bool()),
    *bad(language_model.DecoderLM.forward, method(_small_lm, ids=torch.tensor([[1, 2]])),
         "position_ids", torch.ones(1, 2), torch.ones(1, 3).long()),
    # kv_cache
    *[row for cls in (kv_cache.KVCache, kv_cache.PagedKVCache)
      for row in bad(cls, {**CACHE_DIMS, "n_blocks": 4} if cls is kv_cache.PagedKVCache
                     else CACHE_DIMS, "dtype", torch.int64)],
    *bad(kv_cache.KVCache, {**CACHE_DIMS, "window": 4}, "max_len", wrong_value=8),
    *bad(kv_cache.KVCache.update, _cache_update, "k", np.ones((1, 2, 3, 4)),
         torch.ones(2, 2, 3, 4)),
    *bad(kv_cache.KVCache.update, _cache_update, "v", torch.ones(1, 2, 3, 4).double(),
         torch.ones(1, 2, 3, 3)),
    # layers
    *bad(layers.TransformerConfig, {}, "activation", 1, "tanh"),
    *bad(layers.TransformerConfig, {}, "tie_embeddings", 1, wrong_value=_SKIP),
    *bad(layers.TransformerConfig, {"tie_embeddings": True, "src_vocab_size": 5},
         "tie_embeddings", wrong_value=True),
    *bad(layers.FeedForward, {"d_model": 4, "d_ff": 8}, "activation", None, "tanh"),
    *bad(layers.FeedForward, {"d_model": 4, "d_ff": 8}, "bias", 1),
    *bad(layers.FeedForward.forward, method(lambda: layers.FeedForward(4, 8)), "x", np.ones(4),
         torch.ones(2, 3)),
    *[row for cls in (layers.EncoderLayer, layers.DecoderLayer, layers.Encoder, layers.Decoder,
                      layers.Transformer)
      for row in bad(cls, {}, "config", language_model.LMConfig(**LM_CONFIG))],
    *bad(layers.Transformer, {}, "config", wrong_value=LAYER_CONFIG),
    *bad(layers.EncoderLayer.forward, _forward(layers.EncoderLayer), "x", SEQ.numpy(),
         torch.randn(2, 3, 4)),
    *bad(layers.EncoderLayer.forward, _forward(layers.EncoderLayer, x=SEQ), "token_mask",
         MASK.float(), MASK[:, :2]),
    *bad(layers.EncoderLayer.from_torch, {}, "module", nn.Linear(2, 2),
         nn.TransformerEncoderLayer(8, 2, 16)),
    *bad(layers.DecoderLayer.forward, _forward(layers.DecoderLayer, x=SEQ), "memory",
         SEQ.tolist(), torch.randn(3, 3, 8)),
    *bad(layers.DecoderLayer.forward, _forward(layers.DecoderLayer, memory=SEQ), "x", None,
         torch.randn(2, 8)),
    *bad(layers.DecoderLayer.forward, _forward(layers.DecoderLayer, x=SEQ, memory=SEQ),
         "tgt_token_mask", MASK.long(), MASK[:1]),
    *bad(layers.DecoderLayer.forward, _forward(layers.DecoderLayer, x=SEQ, memory=SEQ),
         "memory_token_mask", MASK.numpy(), MASK[:, :1]),
    *bad(layers.DecoderLayer.forward, _forward(layers.DecoderLayer, x=SEQ, memory=SEQ),
         "causal", 1),
    *bad(layers.DecoderLayer.from_torch, {}, "module", nn.TransformerEncoderLayer(8, 2, 16),
         nn.TransformerDecoderLayer(8, 2, 16)),
    *bad(layers.Encoder.forward, _forward(layers.Encoder), "x", SEQ.numpy(), torch.randn(3, 4)),
    *bad(layers.Encoder.forward, _forward(layers.Encoder, x=SEQ), "token_mask", [[True]],
         MASK[0]),
    *bad(layers.Decoder.forward, _forward(layers.Decoder, x=SEQ), "memory", 0.0,
         torch.randn(2, 3, 4)),
    *bad(layers.Decoder.forward, _forward(layers.Decoder, x=SEQ, memory=SEQ),
         "memory_token_mask", MASK.int(), MASK[:, :2]),
    *bad(layers.Transformer.encode, method(_small_transformer), "src", IDS.float(),
         torch.tensor([3, 4])),
    *bad(layers.Transformer.encode, method(_small_transformer, src=IDS), "src_token_mask",
         IDS, MASK[:, :1]),
    *bad(layers.Transformer.decode, method(_small_transformer, memory=SEQ), "tgt", IDS.numpy(),
         torch.tensor([[1, 99]])),
    *bad(layers.Transformer.decode, method(_small_transformer, tgt=IDS), "memory", IDS,
         torch.randn(2, 3, 4)),
    *bad(layers.Transformer.forward, method(_small_transformer, tgt=IDS), "src", "1 2",
         torch.tensor([[-1]])),
    *bad(layers.Transformer.forward, method(_small_transformer, src=IDS, tgt=IDS),
         "tgt_token_mask", MASK.float(), MASK[:, :2]),
    *bad(layers.count_parameters, {}, "model", _sgd()),
    *bad(layers.transformer_parameter_count, {}, "config", language_model.LMConfig(**LM_CONFIG),
         LAYER_CONFIG),
    # linalg
    *bad(linalg.broadcast_shape, {}, "shapes", 3, (2, -1),
         call=lambda shapes: linalg.broadcast_shape(shapes, (3,))),
    *bad(linalg.cosine_similarity, {"b": [1.0, 0.0]}, "a", "ab", [0.0, 0.0]),
    *bad(linalg.dot, {"a": [1.0, 2.0]}, "b", None, [1.0]),
    *bad(linalg.matmul_loops, {"a": ARRAY_2D}, "b", "ab", np.ones((2, 2))),
    *bad(linalg.power_iteration, {}, "a", "ab", np.ones((2, 3))),
    *bad(linalg.power_iteration, {"a": np.diag([3.0, 1.0])}, "v0", "ab", [0.0, 0.0]),
    # norms
    *[row for cls in (norms.LayerNorm, norms.RMSNorm)
      for row in bad(cls.forward, method(lambda cls=cls: cls(4)), "x", np.ones(4),
                     torch.ones(2, 3))],
    *bad(norms.LayerNorm.from_torch, {}, "module", nn.RMSNorm(4), nn.LayerNorm((2, 3))),
    *bad(norms.RMSNorm.from_torch, {}, "module", nn.LayerNorm(4), nn.RMSNorm(4, eps=None)),
    # optim
    *[row for cls in (optim.Optimizer, optim.SGD, optim.Adam, optim.AdamW)
      for row in bad(cls, {"lr": 0.1}, "params", [[1.0]], [])],
    *bad(optim.SGD, {"params": [np.ones(2)], "lr": 0.1}, "nesterov", 1, True),
    *bad(optim.Adam, {"params": [np.ones(2)]}, "betas", 0.9, (0.9, 1.0)),
    *bad(optim.Optimizer.step, method(_sgd), "grads", 5, [np.ones(3)]),
    *bad(optim.Optimizer.step, method(_sgd), "grads", [torch.ones(2)], [np.ones(2)] * 2),
    # plotting
    *bad(plotting.text_color, {"vmin": 0.0, "vmax": 1.0}, "value", "0.5"),
    *bad(plotting.text_color, {"value": 0.5, "vmax": 1.0}, "vmin", None, 1.0),
    *bad(plotting.text_color, {"value": 0.5, "vmin": 0.0, "vmax": 1.0}, "cmap", 5, "no-such"),
    *bad(plotting.figure_problems, {}, "fig", "figure"),
    *bad(plotting.show, {}, "fig", np.ones(2)),
    # positional
    *bad(positional.apply_rope, {"positions": [0, 1, 2]}, "x", np.ones((3, 4)),
         torch.ones(3, 5)),
    *bad(positional.apply_rope, {"x": torch.ones(3, 4)}, "positions", "abc", [0, 1]),
    *[row for f, kwargs in ((positional.apply_rope, {"x": torch.ones(2, 4), "positions": [0, 1]}),
                            (positional.rope_frequencies, {"head_dim": 4}))
      for row in bad(f, kwargs, "scaling", [("rope_type", "linear")], {"rope_type": "yarn"})],
    *bad(positional.apply_rope, {"x": torch.ones(2, 4), "positions": [0, 1]}, "layout", 1,
         "split"),
    *bad(positional.layout_permutation, {"head_dim": 4}, "to", 1, "halves"),
    # sampling
    *bad(sampling.filter_probs, {}, "logits", LOGITS.numpy(), torch.ones(0)),
    *bad(sampling.sample, {"logits": LOGITS}, "generator", np.random.default_rng(0)),
    *bad(sampling.sample, {}, "logits", LOGITS.long(), torch.tensor(1.0)),
    *bad(sampling.check_filters, {"top_k": None}, "top_p", "0.5"),
    *[row for name in ("p", "q") for row in bad(sampling.speculative_accept, SPEC, name,
                                                 SPEC[name].numpy(), torch.ones(2))],
    *bad(sampling.speculative_accept, SPEC, "rng", np.random.default_rng(0)),
    # softmax
    *[row for f in (softmax.softmax, softmax.log_softmax, softmax.logsumexp)
      for row in bad(f, {}, "x", "ab", [])],
    *bad(softmax.logsumexp, {"x": X}, "keepdims", 1),
    # stats
    *[row for f in (stats.mean, stats.variance, stats.std, stats.standardize, stats.normal_pdf)
      for row in bad(f, {}, "x", "ab", [])],
    *bad(stats.sample_categorical, {"n": 2, "rng": 0}, "probs", "ab", [0.5, 0.6]),
    *bad(stats.sample_categorical, {"probs": P, "n": 2}, "rng", "0", -1),
    *bad(stats.empirical_frequencies, {"n_categories": 3}, "samples", [0.5], [0, 3]),
    *bad(stats.dot_product_samples, {"d_k": 4, "n_samples": 10}, "scaled", 1),
    *bad(stats.dot_product_variance, {"n_samples": 10, "rng": 0}, "d_ks", 4, [0]),
    *bad(stats.dot_product_variance, {"n_samples": 10, "rng": 0}, "d_ks", [4.0]),
    # tables
    *[row for f in (tables.format_table, tables.print_table)
      for row in (*bad(f, {}, "rows", 5, [[1, 2], [3]]),
                  *bad(f, {"rows": [[1, 2]]}, "headers", 5, ["a"]),
                  *bad(f, {"rows": [[1, 2]]}, "formats", 5, [".2f"]),
                  *bad(f, {"rows": [[1, 2]]}, "gap", 1.5, -1))],
    # training
    *bad(training.warmup_scheduler, {"d_model": 16, "warmup": 4}, "optimizer", None,
         lambda: torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.5),
         call=lambda optimizer, **kw: training.warmup_scheduler(
             optimizer() if callable(optimizer) else optimizer, **kw)),
    *bad(training.warmup_scheduler, {"d_model": 16, "warmup": 4}, "optimizer", _sgd()),
    *bad(training.sequence_loss, {"targets": torch.tensor([[1, 3]]), "pad_id": 0}, "logits",
         LOGITS[None].numpy(), LOGITS),
    *bad(training.sequence_loss, {"logits": LOGITS[None], "pad_id": 0}, "targets",
         torch.tensor([[1.0, 3.0]]), torch.tensor([[0, 0]])),
    *bad(training.train, _train_kwargs, "model", "model"),
    *bad(training.train, _train_kwargs, "optimizer", _sgd()),
    *bad(training.train, _train_kwargs, "batches", 5, []),
    *bad(training.train, _train_kwargs, "batches", [(1, 2)]),
    *bad(training.train, _train_kwargs, "scheduler", "cosine"),
    *bad(training.train, _train_kwargs, "progress", 1),
    *bad(training.greedy_decode, _decode_kwargs, "model", _small_lm()),
    *bad(training.greedy_decode, _decode_kwargs, "src", np.ones((2, 3), dtype=np.int64),
         torch.ones(3, dtype=torch.long)),
    *bad(training.greedy_decode, _decode_kwargs, "src_token_mask", torch.ones(3, 5),
         torch.ones(3, 1, dtype=torch.bool)),
    *bad(training.translate, _translate, "model", nn.Linear(2, 2)),
    *bad(training.translate, _translate, "sentences", "1 2", []),
    *bad(training.translate, _translate, "sentences", [1, 2], ["1 x"]),
    *bad(training.translate, _translate, "vocab", {"1": 3}),
    *bad(training.exact_match, _seq2seq, "model", None),
    *bad(training.exact_match, _seq2seq, "pairs", "1 2", []),
    *bad(training.exact_match, _seq2seq, "pairs", [("1", 2)]),
    *bad(training.exact_match, _seq2seq, "vocab", ["1", "2"]),
    # attention
    *bad(attention.token_mask, {}, "lengths", None, [2, -1]),
    *bad(attention.softmax_attention, QKV, "q", QKV["q"].numpy(), torch.randn(2, 3, 5)),
    *bad(attention.softmax_attention, QKV, "mask", torch.ones(3, 5), torch.ones(4, 5, dtype=bool)),
    *bad(attention.softmax_attention, QKV, "causal", "yes"),
    *bad(attention.merge_heads, {}, "x", [1.0], torch.randn(2, 3)),
    *bad(attention.MultiHeadAttention.forward, _mha_forward, "query", SEQ.numpy(),
         torch.randn(2, 3, 4)),
    *bad(attention.MultiHeadAttention.forward, _mha_forward, "key_mask", MASK.float(),
         torch.ones(2, 4, dtype=torch.bool)),
    *bad(attention.MultiHeadAttention.forward, _mha_forward, "causal", 1),
    *bad(attention.MultiHeadAttention.from_torch, {}, "module", nn.Linear(2, 2),
         nn.MultiheadAttention(4, 2)),
    # linear_attention
    *bad(linear_attention.elu_feature_map, {}, "x", [1.0]),
    *bad(linear_attention.linear_attention, QKV, "k", QKV["k"].numpy(), torch.randn(2, 5, 3)),
    *bad(linear_attention.linear_attention, QKV, "causal", "no"),
    *bad(linear_attention.linear_attention, QKV, "feature_map", "elu"),
    *bad(linear_attention.linear_attention_step, STEP, "q", [1.0], torch.randn(2, 3)),
    *bad(linear_attention.linear_attention_step, STEP, "state", [1, 2],
         (torch.zeros(2, 4, 6), torch.zeros(2, 3))),
    # tiled
    *bad(online_softmax.online_softmax_stats, {}, "x", ["a"], np.array([1.0, np.inf])),
    *bad(online_softmax.merge_attention_partials, PARTIALS, "out1", "x", np.ones((2, 3, 5))),
    *bad(online_softmax.merge_attention_partials, PARTIALS, "lse2", [["a"]], np.ones((2, 2))),
    *bad(tiled.visited_tiles, {"lq": 8, "lk": 8, "block_q": 4, "block_k": 2}, "block_mask",
         np.ones((2, 4)), np.ones((3, 4), dtype=bool)),
    *bad(tiled.dense_mask, {"lq": 8, "lk": 8}, "causal", "yes"),
    *bad(tiled.TileMap.build, {"lq": 8, "lk": 8, "block_q": 4, "block_k": 2}, "window",
         "2", 2),  # a window without causal=True
    *bad(tiled.TileMap.rows, method(_tile_map), "i", 0.5, 9),
    *bad(tiled.TileMap.keys, method(_tile_map), "j", 0.5, 9),
    *bad(tiled.TileMap.key_blocks, method(_tile_map), "i", "0", -1),
    *bad(tiled.TileMap.query_blocks, method(_tile_map), "j", "0", 4),
    *bad(tiled.TileMap.hidden, method(_tile_map, i=0), "j", 1.0, 4),
    *bad(tiled.tiled_attention_numpy, QKV_NUMPY, "v", QKV["v"], QKV_NUMPY["v"][:, :4]),
    *bad(tiled.tiled_attention_forward, QKV, "q", QKV["q"].int(), QKV["q"][:1]),
    *bad(tiled.tiled_attention_backward, _backward_kwargs, "lse", [0.0],
         torch.zeros(2, 2)),
    *bad(tiled.tiled_attention, QKV, "block_mask", torch.ones(1, 1), np.ones((9, 9), dtype=bool)),
    # triton_attention
    *bad(triton_attention.supported_dtypes, {}, "capability", "8.0", (8, -1)),
    *bad(triton_attention.launch_config, {"head_dim": 64, "capability": None}, "dtype",
         "float16", torch.int8),
    *bad(triton_attention.compile_ahead, {"dtype": torch.float16, "head_dim": 64, "causal": True},
         "capability", "sm80", (8, -1)),
    *bad(triton_attention.triton_attention_forward, QKV_EQUAL, "q", QKV_EQUAL["q"].double(),
         QKV_EQUAL["q"][..., :8], call=_triton),
    # measure
    *bad(measure.best_time, {}, "call", 3),
    *bad(measure.best_times, {}, "calls", [lambda: None]),
    *bad(measure.best_time, {"call": lambda: None}, "cuda", "yes"),
    *bad(attention_memory.peak_extra_memory, {"n": 64}, "method", 1, "flash"),
    # cpu_grid
    *bad(cpu_grid.run_grid, {"cells": [(0,)]}, "program", None),
    *bad(cpu_grid.run_grid, {"program": lambda cell, worker: None}, "cells", (1, 2)),
    # diagrams
    *bad(diagrams.tensor_sheets, {}, "shape", [3, 4, 6], (3, 0, 6)),
    *bad(diagrams.tensor_sheets, {}, "names", "B N d"),
    *bad(diagrams.annotated_heatmap, _heatmap, "data", "x", np.ones((2, 2, 2))),
    *bad(diagrams.annotated_heatmap, {**_heatmap(), "data": ARRAY_2D}, "fmt", 3),
    *bad(diagrams.cross_attention_map, lambda: {"weights": np.full((2, 3), 1 / 3),
         "source": ["a", "b", "c"], "target": ["x", "y"]}, "weights", "w", np.ones((5, 4))),
    *bad(diagrams.cross_attention_map, lambda: {"weights": np.full((2, 3), 1 / 3),
         "source": ["a", "b", "c"], "target": ["x", "y"]}, "title", 3),
    *bad(diagrams.column_view, {"a": np.eye(2)}, "x", "x", np.ones(3)),
    *bad(diagrams.linear_map, {"b": np.eye(2)}, "a", "a", np.ones((3, 3))),
    *bad(diagrams.pca_directions, {}, "points", "p", np.ones((5, 3))),
    *bad(diagrams.position_dot_products, lambda: {**_heatmap(), "table": np.eye(3)}, "table",
         "x", np.ones(3)),
    *bad(diagrams.position_dot_products, lambda: {**_heatmap(), "table": np.eye(3)}, "offsets",
         [1], (5,)),
    *bad(diagrams.rope_rotation, {}, "m", 1.5, -1),
    *bad(diagrams.rope_rotation, {}, "shift", 1.5, 0),
    *bad(diagrams.rope_scores, {"k": np.ones(4)}, "q", "q", np.ones(3)),
    *bad(diagrams.speculative_gain, {}, "k_max", 2.5, 0),
    *bad(diagrams.speculative_round, {"proposed": ["a", "b"], "final": "c"}, "accepted", 1.5, 3),
    *bad(diagrams.paged_cache, {"tables": [[0], [1]], "lengths": [1, 2], "block_size": 2},
         "n_blocks", 2.5, 0),
    *bad(diagrams.paged_cache, {"tables": [[0], [1]], "n_blocks": 4, "block_size": 2},
         "lengths", [1.5, 1], [1, -1]),
    *bad(diagrams.encoder_block, {}, "norm_first", 1),
    *bad(diagrams.encoder_block, {}, "notes", ["x"]),
    *bad(diagrams.draw_graph, {"ax": None}, "graph", "loss"),
    *bad(diagrams.draw_graph, lambda: {"graph": autograd.computational_graph(
        autograd.Value(1.0) * 2)}, "ax", None),
]


@pytest.mark.parametrize("row", BAD, ids=[row.id for row in BAD])
def test_every_wrong_argument_is_refused_by_name(row: Bad) -> None:
    kwargs = {**(row.kwargs() if callable(row.kwargs) else row.kwargs), row.name: row.value}
    with pytest.raises(row.error, match=_naming(row.name)):
        (row.call or row.func)(**kwargs)


# ------------------------------------------------------------------------- coverage

NO_ARGUMENTS = "takes no argument"
EXEMPT = {
    **{name: NO_ARGUMENTS for name in (
        "env.in_colab", "env.cuda_capability", "env.environment_report",
        "env.print_environment_report", "plotting.style", "plotting.use_course_style",
        "autograd.Value.exp", "autograd.Value.log", "autograd.Value.tanh", "autograd.Value.relu",
        "autograd.Value.backward", "kv_cache.KVCache.branch")},
    **{name: "a record the package returns, not an entry point" for name in (
        "autograd.Graph", "autograd.GraphEdge", "autograd.GraphNode", "data.Batch",
        "linalg.PowerIterationResult", "language_model.SpeculativeStats")},
    "plotting.FigureOverlapError": "an exception: its one argument is the message",
    **{name: NO_ARGUMENTS for name in (
        "diagrams.maths.pipeline", "diagrams.architecture.norm_axes",
        "diagrams.architecture.decoder_block",
        "diagrams.architecture.encoder_blocks", "diagrams.architecture.encoder_decoder",
        "diagrams.architecture.training_loop", "measure.cache_sizes",
        "triton_attention.interpreter_mode", "triton_attention.triton_available")},
    "diagrams.maths.Stage": "a record: one stage of the pipeline figure",
    "tiled.TileMap": "a record built and checked by TileMap.build (covered)",
    **{name: "an autograd.Function: tiled_attention calls it with checked arguments, PyTorch "
             "calls its backward" for name in (
        "tiled.TiledAttention", "tiled.TiledAttention.forward", "tiled.TiledAttention.backward")},
}


def _public_callables(module) -> dict[str, Callable]:
    """``module.qualname`` -> object for each public function and class of ``module`` (its
    ``__all__``, else what it defines) and each public method a class defines itself."""
    names = getattr(module, "__all__", None) or [
        name for name, obj in vars(module).items()
        if not name.startswith("_") and callable(obj)
        and getattr(obj, "__module__", None) == module.__name__
    ]
    found = {}
    for obj in (getattr(module, name) for name in names if callable(getattr(module, name))):
        found[_where(obj)] = obj
        if inspect.isclass(obj):
            for name, member in vars(obj).items():
                if not name.startswith("_") and (
                        inspect.isfunction(member)
                        or isinstance(member, (classmethod, staticmethod))):
                    func = getattr(obj, name)
                    found[_where(func)] = func
    return found


def test_every_public_callable_is_in_the_table() -> None:
    assert MODULE_NAMES and not set(MODULE_NAMES) & NOT_TABLED
    callables = {k: v for module in MODULES for k, v in _public_callables(module).items()}
    covered = {_where(row.func) for row in (*ROWS, *BAD)}
    missing = set(callables) - covered - set(EXEMPT)
    assert not missing, f"add rows to ROWS or BAD (or a reason to EXEMPT) for {sorted(missing)}"
    assert not set(EXEMPT) - set(callables), "EXEMPT names what is not a public callable"
    assert not set(EXEMPT) & covered, "EXEMPT names what the table covers"
    for name, reason in EXEMPT.items():
        if reason == NO_ARGUMENTS:
            parameters = inspect.signature(callables[name]).parameters
            assert set(parameters) <= {"self"}, f"{name} takes {list(parameters)}"
