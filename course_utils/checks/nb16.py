"""Checkers for notebook 16: the batch at the ridge point (predict), the best number of draft
tokens (derive), a rolling buffer that drifts after W tokens (debug), a paged gather (constrain)."""

import math
from collections.abc import Callable
from functools import partial

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence

from course_utils import positional
from course_utils.attention import softmax_attention
from course_utils.checks import Case, CheckResult, Rule, check_function, check_number, exercise


@exercise("predict")
def check_decode_intensity(answer: object, *, show_answer: bool = False) -> CheckResult:
    """``answer``: the smallest whole ``B`` with ``2Bn² / 2(n² + 2Bn) ≥ 312/1.555``, n = 4096."""
    n, ridge = 4096, 312e12 / 1.555e12
    per_byte = lambda b, size=2, sides=2: 2 * b * n * n / (size * (n * n + sides * b * n))  # noqa: E731
    best = next(b for b in range(1, n) if per_byte(b) >= ridge)
    explanation = (f"2Bn² FLOPs over 2(n² + 2Bn) bytes: Bn/(n + 2B) FLOP per byte, {ridge:.1f} from"
                   f" B = {ridge:.1f}·n/(n − {2 * ridge:.1f}) = {ridge * n / (n - 2 * ridge):.1f} "
                   f"on: B = {best}. The B vectors in and out keep it a little below B.")
    round_up = (f"at B = {best - 1} the intensity is {per_byte(best - 1):.1f}, still below "
                f"{ridge:.1f}: round up.")
    mistakes: dict[float, str] = {
        best - 1: round_up, 1: "that is one sequence, about 1 FLOP per byte.",
        math.ceil(ridge): "that takes the intensity to be B itself; the B vectors are bytes too.",
        math.floor(ridge): "that takes the intensity to be B itself, and rounds the ridge down; "
            "the B vectors are bytes too.",
        next(b for b in range(1, n) if per_byte(b, 2, 1) >= ridge): "that counts one set of "
            "the B vectors, not both: the B inputs are read and the B results written.",
        next(b for b in range(1, 4 * n) if per_byte(b, 4, 1) >= ridge): "that counts one set "
            "of the B vectors, not both, and half the intensity: 4 bytes a number or 1 FLOP a "
            "multiply-add.",
        next(b for b in range(1, 4 * n) if per_byte(b, 4) >= ridge): "that counts 4 bytes a "
            "number (float16 has 2), or 1 FLOP a multiply-add (it is 2): half the intensity."}
    atol = 0.5  # a batch size: the whole number itself, not a number near it
    if isinstance(answer, (float, np.floating)) and answer % 1:
        atol, mistakes = 0.0, {float(answer): "that is not a whole number of sequences" + (
            f"; {round_up}" if best - 1 < answer < best else ": a batch holds whole sequences.")}
    return check_number(answer, best, name="decode_intensity", label="the smallest batch at the "
                        "A100's ridge point", explanation=explanation, rtol=0, atol=atol,
                        mistakes=mistakes, show_answer=show_answer, hint="write the FLOPs and "
                        "the bytes of B sequences in B; find the first B at 200.6 FLOP per byte.")


def _best(a: float, c: float, bonus: int = 1, extra: int = 0, first: int = 0, cost: int = 1):
    """The ``k ≥ first`` of the largest ``(1 − a^(k+bonus)) / ((1 − a)(cost·(k+extra)·c + 1))``."""
    ks = np.arange(first, 2000)
    tokens = np.where(ks + bonus > 0, (1 - a ** (ks + bonus)) / (1 - a), 1.0)
    return int(ks[np.argmax(tokens / (cost * (ks + extra) * c + 1))])


@exercise("derive")
def check_best_draft_length(func: Callable[[float, float], int]) -> CheckResult:
    """``func(a, c)``: the ``k ≥ 0`` of the largest ``(1 − a^(k+1)) / ((1 − a)(kc + 1))``."""
    rates = [(0.8, 0.05), (0.9, 0.02), (0.6, 0.1), (0.8, 0.1), (0.95, 0.01), (0.6, 0.3), (0.5, 0.6)]
    mistakes: dict[str, Callable] = {why: partial(_best, **how) for why, how in [
        ("it leaves out the draft's cost: its k passes of a round take time too", {"cost": 0}),
        ("the tokens are off by one: a round keeps the accepted proposals and adds one token of "
         "the target's own, so k proposals give up to k + 1 tokens", {"bonus": 0}),
        ("it never returns 0: when no k beats plain decoding, do not speculate", {"first": 1}),
        ("it charges the draft one pass too many: a round runs it k times", {"extra": 1})]}
    mistakes["it returns a position in its array of k, not k: the array starts at k = 1"] = (
        lambda a, c: _best(a, c, first=1) - 1)
    mistakes["it always returns 0: the cost of a round leaves out the target's pass, so "
             "k = 0 costs nothing and wins"] = lambda a, c: 0
    return check_function(func, cases=[Case(ac, "a = {}, c = {}".format(*ac)) for ac in rates],
                          reference=_best, name="best_draft_length", mistakes=mistakes)


def store_given(k_buffer, v_buffer, p, k_p, v_p):
    """Exercise 3's function with its bug: the key is rotated at its slot, not its position."""
    slot = p % len(k_buffer)
    k_buffer[slot] = positional.apply_rope(k_p[None], [slot])[0]
    v_buffer[slot] = v_p


def _store_value_rotated(k_buffer, v_buffer, p, k_p, v_p):
    """The key right, and the value rotated at its position too (a mistake)."""
    slot = p % len(k_buffer)
    k_buffer[slot], v_buffer[slot] = (positional.apply_rope(x[None], [p])[0] for x in (k_p, v_p))


def _decode(store: Callable | None, q, k, v, window: int) -> torch.Tensor:
    """Outputs ``(n, d)`` decoded with ``store`` into W slots; ``store=None``: the band mask."""
    j = torch.arange(len(q))
    if store is None:
        q, k = (positional.apply_rope(x, j) for x in (q, k))
        return softmax_attention(q, k, v, (j <= j[:, None]) & (j > j[:, None] - window))[0]
    buffers, rows = torch.zeros(2, window, q.shape[1], dtype=q.dtype), []
    for p in j.tolist():
        store(buffers[0], buffers[1], p, k[p].clone(), v[p].clone())
        q_p = positional.apply_rope(q[p : p + 1], [p])
        rows.append(softmax_attention(q_p, *buffers[:, : p + 1])[0])
    return torch.cat(rows)


@exercise("debug")
def check_store(func: Callable) -> CheckResult:
    """``func(k_buffer, v_buffer, p, k_p, v_p)`` stores k_p rotated at p and v_p in slot p mod W."""
    cases = [Case((*torch.randn(3, n, d, generator=torch.Generator().manual_seed(n),
                                dtype=torch.float64), w), f"{n} tokens, W = {w}")
             for n, w, d in [(6, 8, 4), (8, 8, 4), (20, 8, 4), (13, 4, 6), (10, 3, 2)]]
    mistakes = {"still the given function's numbers: right until the buffer wraps, wrong from "
                "token W on": partial(_decode, store_given),
                "the value is rotated too: RoPE turns the queries and the keys, and each value is "
                "stored as it comes": partial(_decode, _store_value_rotated),
                "the buffers stay zero: write into k_buffer and v_buffer themselves, in place "
                "(k_buffer[slot] = ...), not into copies": partial(_decode, lambda *args: None)}
    return check_function(partial(_decode, func), cases=cases, reference=partial(_decode, None),
                          name="store", rtol=1e-9, atol=1e-9, mistakes=mistakes)


@exercise("constrain")
def check_gather(func: Callable) -> CheckResult:
    """``func(pool (n_blocks, s, d), tables (B, n_table) padded with -1, lengths (B,))`` → ``(B,
    max(lengths), d)``, zeros after each length; no Python loop, checked by a scan of the code."""
    def paged(lengths: list[int], size: int, d: int, seed: int, label: str) -> Case:
        g, blocks = torch.Generator().manual_seed(seed), [math.ceil(n / size) for n in lengths]
        pool = torch.randn(sum(blocks) + 3, size, d, generator=g, dtype=torch.float64)
        owned = torch.randperm(len(pool), generator=g)[: sum(blocks)].split(blocks)  # any order
        keys = [pool[t].flatten(0, 1)[:n] for t, n in zip(owned, lengths, strict=True)]
        return Case((pool, pad_sequence(owned, True, -1), torch.tensor(lengths)), label,
                    expected=pad_sequence(keys, True))

    cases = [paged([9, 8], 4, 2, 0, "section 4's two requests: 9 and 8 positions, blocks of 4"),
             paged([5, 1, 12], 4, 3, 1, "lengths 5, 1, 12: short tables padded with -1"),
             paged([7], 8, 2, 2, "one sequence shorter than one block")]
    rule = Rule("no Python loop (no for, while, comprehension, map or np.vectorize)",
                names={"map", "vectorize"}, loops=True)
    return check_function(func, cases=cases, name="gather", rtol=0, atol=0, rule=rule)
