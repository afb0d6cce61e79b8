"""Checkers for notebook 10 (scaled dot-product attention): the weight a saturated softmax leaves,
causal attention aligned bottom-right, and a padding mask with a causal mask in a batch."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import torch

from course_utils.checks import Case, CheckResult, check_function, check_number, exercise, randn


@exercise("predict")
def check_saturated_weight(answer: object, *, show_answer: bool = False) -> CheckResult:
    """The weight of the lower of two keys whose scores differ by 8: ``1 / (1 + e⁸)`` = 3.35e-4,
    to two significant figures (rtol 3%: 3.3e-4 and 3.4e-4 pass, 3.0e-4 and 3.5e-4 do not)."""
    mistakes = {
        1 / (1 + math.e): "the weight with the scaling (a gap of 1); without it the gap is 8",
        1 / (1 + math.exp(-8)): "the weight of the higher key; the question asks for the lower",
        0.5: "the weight of two equal scores; these differ by 8",
        3e-4: "that is one significant figure, and the question asks for two: carry more digits "
              "through the exponential before rounding",
    }
    explanation = ("a₂ = e^{s₂} / (e^{s₁} + e^{s₂}) = 1 / (1 + e^{s₁ - s₂}) = 1 / (1 + e⁸) ≈ "
                   "3.4e-4: the lower key is all but ignored, and the softmax slope a₂(1 - a₂) is "
                   "just as small. With the scaling the gap is 1 and a₂ = 1 / (1 + e) ≈ 0.27")
    hint = ("only the difference of the two scores matters to a softmax: take s₁ = 8 and s₂ = 0 "
            "and write a₂ as a fraction of exponentials")
    return check_number(answer, 1 / (1 + math.exp(8)), name="saturated_weight", rtol=0.03,
                        label="weight of the lower key, gap 8", explanation=explanation,
                        hint=hint, mistakes=mistakes, show_answer=show_answer)


_SHORTCUTS = ("softmax_attention", "causal_mask", "token_mask", "scaled_dot_product_attention",
              "causal_lower_right", "causal_upper_left", "generate_square_subsequent_mask")
_BUG = "masked_fill(~future, ...) hides the past and keeps the future keys"


def _attend(q, k, v, visible=None, shift=0, future=False, zero_empty=True, top_left=False,
            scaled=True):
    """``(softmax(q kᵀ / √d_k) v, weights)``, the keys where ``visible`` is False hidden; by
    default key j is visible to query i when ``j <= i + N_k - N_q + shift`` (causal)."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    if visible is None:
        visible = torch.ones(n_q, n_k).bool().tril(shift + (0 if top_left else n_k - n_q)) ^ future
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scaled else 1.0)
    weights = scores.masked_fill(~visible, -math.inf)
    weights = torch.softmax(weights, -1).nan_to_num(0.0) if zero_empty else weights.softmax(-1)
    return weights @ v, weights


def _check(func, shapes, **how):
    """check_function on q (*b, n_q, 8), k (*b, n_k, 8), v (*b, n_k, 3) and the lengths if any."""
    cases = [Case((randn(*b, n_q, 8, seed=s), randn(*b, n_k, 8, seed=s + 1),
                   randn(*b, n_k, 3, seed=s + 2), *lengths), label)
             for b, n_q, n_k, s, label, *lengths in shapes]
    return check_function(func, cases=cases, names=("output", "weights"), rtol=1e-9, atol=1e-12,
                          shortcuts=_SHORTCUTS, **how)


@exercise("debug")
def check_causal_attention(func: Callable) -> CheckResult:
    """``func(q, k, v)``: ``(output, weights)`` of causal attention aligned bottom-right (key j
    visible to query i when ``j <= i + N_k - N_q``); a query that sees no key gets zeros."""
    mistakes = {
        f"still the bug: {_BUG}": partial(_attend, future=True, zero_empty=False),
        f"the map still looks into the future: {_BUG}": partial(_attend, future=True),
        "the mask is one key off: each query also sees the next key, so the map still looks "
        "into the future": partial(_attend, shift=1),
        "the mask is aligned top-left: the N_q queries are the last N_q positions, so query i "
        "sees keys 0 .. i + N_k - N_q": partial(_attend, top_left=True),
        "the mask is right, but the scores are not divided by √d_k": partial(_attend, scaled=False),
    }
    return _check(func, [
        ((), 4, 4, 20, "4 tokens: query i sees keys 0..i"),
        ((), 2, 5, 23, "2 new queries after 3 cached keys: the last query sees all 5"),
        ((2, 3), 4, 4, 26, "a batch of 2 with 3 heads"),
        ((), 5, 3, 29, "5 queries, 3 keys: queries 0 and 1 see nothing, so their rows must be 0")],
                  reference=_attend, name="causal_attention", mistakes=mistakes)


def _padded(q, k, v, lengths, axis=-2, last=0):
    """Query i of sentence b sees key j when j <= i and j < lengths[b] + last (axis -1 or
    last = 1: a mistake)."""
    n = q.shape[-2]
    real = (torch.arange(n) < torch.tensor(lengths)[:, None] + last).unsqueeze(axis)
    return _attend(q, k, v, real & torch.ones(n, n).bool().tril())


@exercise("extend")
def check_padded_causal_attention(func: Callable) -> CheckResult:
    """``func(q, k, v, lengths)`` for (B, N, d) tensors and B lengths: ``(output, weights)``, key j
    visible to query i of sentence b when j <= i and j < lengths[b]; no key seen: zeros."""
    mistakes = {"the rows of padded queries are all 0: the padding mask is about keys (the last "
                "axis), and a padded query still sees the real keys before it":
                partial(_padded, axis=-1),
                "the padding mask keeps one key too many: key j is real when j < lengths[b] "
                "(a sentence of length 2 has keys 0 and 1)": partial(_padded, last=1)}
    return _check(func, [
        ((2,), 4, 4, 40, "two full sentences: the causal mask alone", [4, 4]),
        ((2,), 4, 4, 43, "sentence 1 has 2 real tokens: keys 2 and 3 are padding", [4, 2]),
        ((3,), 5, 5, 46, "three sentences of lengths 5, 1 and 3", [5, 1, 3]),
        ((2,), 3, 3, 49, "sentence 1 is empty: every row sees nothing and must be 0", [3, 0])],
                  reference=_padded, name="padded_causal_attention", mistakes=mistakes)
