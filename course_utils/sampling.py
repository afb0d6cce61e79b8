"""Choosing the next token: temperature, top-k and top-p (nucleus) filtering, and sampling.

A language model gives logits ``z`` over the vocabulary; :func:`filter_probs` turns them into the
distribution a sampler draws from, in the order temperature → top-k → top-p (the order of
Hugging Face's ``generate``):

1. **temperature** ``T > 0``: ``p = softmax(z / T)`` (``T < 1`` sharpens, ``T > 1`` flattens);
2. **top-k**: keep the ``k`` most probable tokens (and any tied with the k-th), renormalise;
3. **top-p**: keep the smallest set of most probable tokens whose total probability reaches
   ``p``, never fewer than one, renormalise.

Every removed token has probability exactly 0. Greedy decoding (always the argmax) is the limit
``T → 0``; it is not a distribution, so it is not done here (``generate(temperature=0)`` in
:mod:`course_utils.language_model` is greedy).
"""

from __future__ import annotations

import torch
from torch import Tensor

from course_utils.validation import check_int, check_real, check_tensor

__all__ = ["check_filters", "filter_probs", "sample"]


def check_filters(top_k: int | None, top_p: float | None) -> tuple[int | None, float | None]:
    """``top_k`` an int >= 1 or None, ``top_p`` a number in (0, 1] or None."""
    if top_k is not None:
        top_k = check_int(top_k, "top_k")
    if top_p is not None:
        top_p = check_real(top_p, "top_p", low=0, high=1, low_open=True)
    return top_k, top_p


def _check_logits(value: object) -> Tensor:
    logits = check_tensor(value, "logits")
    if logits.ndim < 1 or logits.shape[-1] == 0:
        raise ValueError(f"logits must have shape (..., V) with V >= 1, got {tuple(logits.shape)}")
    if torch.isnan(logits).any() or torch.isposinf(logits).any():
        raise ValueError("logits must not hold NaN or +inf (-inf marks an impossible token)")
    if torch.isneginf(logits).all(dim=-1).any():
        raise ValueError("every logit of a row is -inf: no token is possible")
    return logits


def filter_probs(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Tensor:
    """The next-token distribution after temperature, top-k and top-p, in that order.

    ``p = softmax(z / T)``; top-k zeroes every token whose probability is below the k-th largest
    (ties with the k-th are kept; ``k >= V`` keeps all) and renormalises; top-p sorts the tokens
    by probability (ties by index, lower first), keeps token ``j`` of that order when the total
    of the tokens before it is below ``p`` — the smallest prefix whose total reaches ``p``, never
    fewer than one token — and renormalises.

    Shapes: ``logits`` ``(..., V)``, floating point, no NaN or +inf (``-inf`` = impossible);
    returns probabilities of the same shape and dtype, each row summing to 1, removed tokens
    exactly 0. ``temperature`` must be > 0; ``top_k`` an int >= 1 or None; ``top_p`` in (0, 1]
    or None (``top_p = 1`` and ``top_k >= V`` change nothing).
    """
    logits = _check_logits(logits)
    temperature = check_real(temperature, "temperature", low=0, low_open=True)
    top_k, top_p = check_filters(top_k, top_p)
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_k is not None and top_k < probs.shape[-1]:
        kth = probs.topk(top_k, dim=-1).values[..., -1:]  # (..., 1) the k-th largest
        probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
        probs = probs / probs.sum(dim=-1, keepdim=True)
    if top_p is not None and top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True, stable=True)
        before = sorted_probs.cumsum(dim=-1) - sorted_probs  # the total of the tokens before
        keep_sorted = before < top_p  # the first token always (before = 0 < p)
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        probs = torch.where(keep, probs, torch.zeros_like(probs))
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def sample(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Draw one token id per row from :func:`filter_probs` ``(logits, temperature, top_k, top_p)``.

    Shapes: ``logits`` ``(..., V)`` → int64 ids ``(...)``. ``generator`` (a seeded
    ``torch.Generator``) makes the draws reproducible.
    """
    probs = filter_probs(logits, temperature, top_k, top_p)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got "
                        f"{type(generator).__name__}")
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])
