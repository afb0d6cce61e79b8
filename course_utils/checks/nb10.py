"""Checkers for notebook 10 (scaled dot-product attention)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.attention.bias

from course_utils import attention
from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    names_used,
    randn,
    wraps_answer,
)


@exercise("predict")
def check_saturated_weight(answer: Any) -> CheckResult:
    """The weight of the lower of two keys whose scores differ by 8 (one standard deviation of an
    unscaled score at d_k = 64): ``1 / (1 + e⁸)`` = 3.35e-4, to two significant figures (rtol 3%:
    3.3e-4 and 3.4e-4 pass, 3.0e-4 and 3.5e-4 do not)."""
    expected = 1 / (1 + math.exp(8))
    mistakes = {
        1 / (1 + math.e): "the weight with the scaling (a gap of 1); without it the gap is 8",
        1 / (1 + math.exp(-8)): "the weight of the higher key; the question asks for the lower",
        0.5: "the weight of two equal scores; these differ by 8",
        3e-4: "that is one significant figure, and the question asks for two: carry more digits "
              "through the exponential before rounding",
    }
    explanation = ("a₂ = e^{s₂} / (e^{s₁} + e^{s₂}) = 1 / (1 + e^{s₁ - s₂}) = 1 / (1 + e⁸) "
                   "≈ 3.4e-4: the lower key is all but ignored, and the softmax slope "
                   "a₂(1 - a₂) is just as small. With the scaling the gap is 1 and "
                   "a₂ = 1 / (1 + e) ≈ 0.27")
    hint = ("only the difference of the two scores matters to a softmax: take s₁ = 8 and s₂ = 0 "
            "and write a₂ as a fraction of exponentials")
    return check_number(answer, expected, name="saturated_weight",
                        label="weight of the lower key, gap 8",
                        explanation=explanation, rtol=0.03, hint=hint, mistakes=mistakes)


_LIBRARY = {
    "softmax_attention": "attention.softmax_attention",
    "causal_mask": "attention.causal_mask",
    "padding_mask": "attention.padding_mask",
    "scaled_dot_product_attention": "F.scaled_dot_product_attention",
    "causal_lower_right": "torch.nn.attention.bias.causal_lower_right",
    "causal_upper_left": "torch.nn.attention.bias.causal_upper_left",
    "generate_square_subsequent_mask": "nn.Transformer.generate_square_subsequent_mask",
}
_LIBRARY_RULE = ("your code uses {name}, which builds the mask (or does the whole attention) for "
                 "you: the exercise is to build the mask yourself, from comparisons of positions "
                 "(or tril/triu), and apply it with masked_fill")


def refusing_library(func: Callable, run: Callable, library: dict[str, str], rule: str,
                     owners: Sequence[tuple[object, str]]) -> Callable:
    """``run`` (``func`` inside the other rules' watch), refused with :class:`RuleBroken` (``rule``
    naming ``library[name]``) when ``func``'s code names one of ``library``'s names, when a global,
    closure or default value it uses *is* one of the functions at ``owners`` (an alias such as
    ``import ... as sa``), or when one of those is called while it runs (``getattr`` with a built
    name); a helper of such a name the learner wrote next to ``func`` is theirs and allowed."""
    inner = inspect.unwrap(func)
    scope = getattr(inner, "__globals__", {})

    def own(name: str) -> bool:
        value = scope.get(name)
        return inspect.isfunction(value) and value.__module__ == getattr(inner, "__module__", None)

    originals = {id(getattr(owner, attr)): attr for owner, attr in owners}
    names = names_used(func)
    used = sorted(name for name in names & set(library) if not own(name))
    values = [scope.get(name) for name in names]
    values += [cell.cell_contents for cell in getattr(inner, "__closure__", None) or ()
               if _filled(cell)]
    values += list(getattr(inner, "__defaults__", None) or ())
    used += [originals[id(value)] for value in values
             if value is not None and id(value) in originals]

    def refuse(attr: str) -> Callable:
        def refused(*args: object, **kwargs: object) -> object:
            raise RuleBroken(rule.format(name=library[attr]))
        return refused

    @wraps_answer(func)
    def checked(*args: object) -> object:
        if used:
            raise RuleBroken(rule.format(name=library[used[0]]))
        # vars(): a class's staticmethod is saved as itself, so it comes back a staticmethod
        saved = [vars(owner).get(attr, getattr(owner, attr)) for owner, attr in owners]
        try:
            for owner, attr in owners:
                setattr(owner, attr, refuse(attr))
            return run(*args)
        finally:
            for (owner, attr), original in zip(owners, saved, strict=True):
                setattr(owner, attr, original)

    return checked


def _filled(cell: object) -> bool:
    """Whether a closure cell holds a value yet."""
    try:
        cell.cell_contents  # type: ignore[attr-defined]  # noqa: B018
    except ValueError:
        return False
    return True


def _builds_own_mask(func: Callable, run: Callable) -> Callable:
    """``run`` (``func`` inside the other rules' watch), refused with :class:`RuleBroken` when
    ``func``'s code names, aliases or calls one of the course's or PyTorch's attention or mask
    functions (PyTorch's ready-made causal masks of ``torch.nn.attention.bias`` and
    ``nn.Transformer.generate_square_subsequent_mask`` included); a
    helper of that name the learner wrote next to ``func`` is theirs and allowed."""
    owners: list[tuple[object, str]] = [
        (attention, "softmax_attention"), (attention, "causal_mask"), (attention, "padding_mask"),
        (torch.nn.functional, "scaled_dot_product_attention"),
        (torch.nn.attention.bias, "causal_lower_right"),
        (torch.nn.attention.bias, "causal_upper_left"),
        (torch.nn.Transformer, "generate_square_subsequent_mask"),
    ]
    return refusing_library(func, run, _LIBRARY, _LIBRARY_RULE, owners)


def _causal(q, k, v):
    return attention.softmax_attention(q, k, v, causal=True)


def _future_blind(func: Callable) -> Callable:
    """``func`` itself, after checking that changing the keys and values query 0 must not see
    leaves query 0's output unchanged."""
    @wraps_answer(func)
    def wrapper(q, k, v):
        got = func(q, k, v)
        lq, lk = q.shape[-2], k.shape[-2]
        first_visible = lk - lq + 1  # query 0 sees keys 0 .. lk - lq
        if 0 < first_visible < lk:
            k2, v2 = k.clone(), v.clone()
            k2[..., first_visible:, :] += 3.0
            v2[..., first_visible:, :] += 5.0
            again = func(q.clone(), k2, v2)
            out = got[0] if isinstance(got, tuple) else got
            out2 = again[0] if isinstance(again, tuple) else again
            if (isinstance(out, torch.Tensor) and isinstance(out2, torch.Tensor)
                    and out.shape == out2.shape and torch.isfinite(out).all()
                    and not torch.allclose(out[..., 0, :], out2[..., 0, :])):
                raise RuleBroken("query 0's output changed when only keys and values it must not "
                                 "see changed: the map still looks into the future")
        return got
    return wrapper


@exercise("debug")
def check_causal_attention(func: Callable) -> CheckResult:
    """``func(q, k, v)``: ``(output, weights)`` of causal attention aligned bottom-right (key j
    visible to query i when ``j <= i + N_k - N_q``); a query that sees no key gets zeros. The mask
    built by the learner: code that names the course's attention or mask functions,
    ``F.scaled_dot_product_attention`` or PyTorch's ``causal_lower_right`` / ``causal_upper_left``
    is refused."""
    cases = [
        Case((randn(4, 8, seed=20), randn(4, 8, seed=21), randn(4, 3, seed=22)),
             "4 tokens: query i sees keys 0..i"),
        Case((randn(2, 8, seed=23), randn(5, 8, seed=24), randn(5, 3, seed=25)),
             "2 new queries after 3 cached keys: the last query sees all 5"),
        Case((randn(2, 3, 4, 8, seed=26), randn(2, 3, 4, 8, seed=27), randn(2, 3, 4, 3, seed=28)),
             "a batch of 2 with 3 heads"),
        Case((randn(5, 8, seed=29), randn(3, 8, seed=30), randn(3, 3, seed=31)),
             "5 queries, 3 keys: queries 0 and 1 see nothing, so their rows must be 0"),
    ]
    return check_function(_builds_own_mask(func, _future_blind(func)), cases=cases,
                          reference=_causal,
                          name="causal_attention", names=("output", "weights"),
                          rtol=1e-9, atol=1e-12)


def _padded_causal(q, k, v, lengths):
    keep = attention.padding_mask(lengths, max_len=k.shape[-2])[:, None, :]
    return attention.softmax_attention(q, k, v, mask=keep, causal=True)


def _padded_queries_see(func: Callable) -> Callable:
    """``func`` itself, after checking that the rows of padded queries are not all zero: the
    padding mask hides padded keys, and a padded query still sees the real keys before it."""
    @wraps_answer(func)
    def wrapper(q, k, v, lengths):
        got = func(q, k, v, lengths)
        weights = got[1] if isinstance(got, tuple) and len(got) == 2 else None
        if isinstance(weights, torch.Tensor) and weights.shape == (len(lengths), q.shape[-2],
                                                                   k.shape[-2]):
            for b, length in enumerate(lengths):
                if 0 < length < q.shape[-2] and torch.all(weights[b, length:] == 0):
                    raise RuleBroken(f"the rows of sentence {b}'s padded queries ({length} and "
                                     "after) are all 0: the padding mask is about keys (the last "
                                     "axis), and a padded query still sees the real keys before "
                                     "it")
        return got
    return wrapper


@exercise("extend")
def check_padded_causal_attention(func: Callable) -> CheckResult:
    """``func(q, k, v, lengths)`` for (B, N, d) tensors and B real lengths: ``(output, weights)``
    with key j visible to query i of sentence b when ``j <= i`` and ``j < lengths[b]``; a query
    that sees no key gets zeros. The masks built by the learner, as in
    :func:`check_causal_attention`."""
    def qkv(b, n, seed):
        return (randn(b, n, 4, seed=seed), randn(b, n, 4, seed=seed + 1),
                randn(b, n, 3, seed=seed + 2))

    cases = [
        Case((*qkv(2, 4, 40), [4, 4]), "two full sentences: the causal mask alone"),
        Case((*qkv(2, 4, 43), [4, 2]), "sentence 1 has 2 real tokens: keys 2 and 3 are padding"),
        Case((*qkv(3, 5, 46), [5, 1, 3]), "three sentences of lengths 5, 1 and 3"),
        Case((*qkv(2, 3, 49), [3, 0]), "sentence 1 is empty: every row sees nothing and must be 0"),
    ]
    return check_function(_builds_own_mask(func, _padded_queries_see(func)), cases=cases,
                          reference=_padded_causal,
                          name="padded_causal_attention", names=("output", "weights"),
                          rtol=1e-9, atol=1e-12)
