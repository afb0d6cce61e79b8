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

Speculative sampling (:func:`speculative_accept`) lets a small draft model propose tokens that a
large target model accepts or replaces, so that the output still follows the target exactly;
:func:`expected_tokens_per_pass` is what it gains per pass of the target.
"""

from __future__ import annotations

import torch
from torch import Tensor

from course_utils.validation import check_generator, check_int, check_real, check_tensor

__all__ = ["check_filters", "expected_tokens_per_pass", "filter_probs", "sample",
           "speculative_accept"]


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
    check_generator(generator)
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])


def _check_distribution(value: object, name: str) -> Tensor:
    """A 1-D probability vector: floating, finite, >= 0, summing to 1 within
    ``max(1e-6, V · eps)``; returned as float64."""
    probs = check_tensor(value, name)
    if probs.ndim != 1 or probs.shape[0] == 0:
        raise ValueError(f"{name} must be a 1-D tensor of probabilities (V,), got shape "
                         f"{tuple(probs.shape)}")
    if not torch.isfinite(probs).all() or (probs < 0).any():
        raise ValueError(f"{name} must hold finite, non-negative probabilities")
    total = probs.double().sum().item()
    if abs(total - 1) > max(1e-6, probs.shape[0] * torch.finfo(probs.dtype).eps):
        raise ValueError(f"{name} must sum to 1, got {total:.9g}")
    return probs.detach().double().cpu()


def _acceptance(p: Tensor, q: Tensor) -> tuple[Tensor, Tensor]:
    """Per token ``x``: the probability ``min(1, p(x)/q(x))`` of accepting a proposed ``x``
    (1 where ``q(x) = 0``: never proposed), and the residual ``max(p − q, 0)`` normalised
    (all 0 when ``p <= q`` everywhere)."""
    accept = torch.where(q > 0, p / q.clamp(min=torch.finfo(q.dtype).tiny), 1.0).clamp(max=1.0)
    residual = (p - q).clamp(min=0.0)
    total = residual.sum()
    return accept, residual / total if total > 0 else residual


def speculative_accept(p: Tensor, q: Tensor, token: int,
                       rng: torch.Generator | None = None) -> int:
    """One position of speculative sampling (Leviathan et al. 2023; Chen et al. 2023).

    ``p`` is the target model's and ``q`` the draft model's distribution over the vocabulary,
    ``token`` the draft's proposal (drawn from ``q``). The proposal is accepted with probability
    ``min(1, p(token) / q(token))``; otherwise the result is drawn from the residual
    ``r = max(p − q, 0) / Σ max(p − q, 0)``. The result then follows ``p`` exactly:
    ``P(y) = q(y) min(1, p(y)/q(y)) + r(y) Σ_x max(q(x) − p(x), 0) = p(y)``.

    The result equals ``token`` exactly when the proposal was accepted: a rejection needs
    ``p(token) < q(token)``, where the residual is 0, so the resample never returns ``token``
    (in the one case the residual is all 0, ``p <= q`` everywhere up to rounding, the proposal
    is accepted). ``rng=None`` draws from torch's global generator.

    Shapes: ``p`` and ``q`` 1-D floating ``(V,)``, non-negative, each summing to 1 (within
    ``max(1e-6, V · eps)`` of their dtype), computed in float64; ``token`` an int in
    ``[0, V)`` with ``q[token] > 0``. Returns a Python int in ``[0, V)``.
    """
    p, q = _check_distribution(p, "p"), _check_distribution(q, "q")
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length V, got {p.shape[0]} and "
                         f"{q.shape[0]}")
    token = check_int(token, "token", minimum=0, maximum=q.shape[0] - 1)
    if q[token] <= 0:
        raise ValueError(f"token must have q[token] > 0 (the draft proposes tokens drawn from "
                         f"q), got q[{token}] = 0")
    return _speculative_accept(p, q, token, check_generator(rng, "rng"))


def _speculative_accept(p: Tensor, q: Tensor, token: int, rng: torch.Generator | None) -> int:
    """:func:`speculative_accept` on checked float64 ``p`` and ``q``."""
    accept, residual = _acceptance(p, q)
    if torch.rand((), generator=rng, dtype=torch.float64) < accept[token] or not residual.any():
        return token
    return int(torch.multinomial(residual, 1, generator=rng))


def expected_tokens_per_pass(alpha: float, gamma: int) -> float:
    """The expected number of tokens one target pass of speculative decoding yields when each of
    the ``gamma`` proposals is accepted independently with probability ``alpha``:
    ``1 + α + α² + … + α^γ = (1 − α^{γ+1}) / (1 − α)`` (``γ + 1`` at ``α = 1``): the accepted
    prefix plus the one token the target adds after it (Leviathan et al. 2023, eq. 1).

    ``alpha`` a real number in [0, 1], ``gamma`` an int >= 0 (``γ = 0``: no proposals, the one
    token of plain decoding). Returns a float in [1, γ + 1].
    """
    alpha = check_real(alpha, "alpha", low=0, high=1)
    gamma = check_int(gamma, "gamma", minimum=0)
    return float(gamma + 1) if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)
