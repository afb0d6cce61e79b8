"""Linear (kernelised) attention: ``O(N·d²)`` time and an ``O(d²)`` state instead of ``O(N²·d)``.

Softmax attention weighs value ``j`` for query ``i`` by ``exp(q_i·k_j/√d)``, a number that needs
both vectors at once, so every pair is computed. Linear attention (Katharopoulos et al. 2020,
"Transformers are RNNs") replaces it by a product of positive features, ``φ(q_i)·φ(k_j)``. The
sums over the keys then factor out of the query:

    out_i = Σ_j φ(q_i)ᵀφ(k_j) v_j / Σ_j φ(q_i)ᵀφ(k_j) = φ(q_i)ᵀ S / φ(q_i)ᵀ z,
    S = Σ_j φ(k_j) v_jᵀ  (r × d_v),   z = Σ_j φ(k_j)  (r),

computed once for all queries: ``O(N·r·d_v)``. With the default ``φ(x) = elu(x) + 1`` (positive,
``r = d``). Causal attention sums over ``j ≤ i`` only: ``S`` and ``z`` become running (prefix)
sums, and updating them one token at a time is a recurrent network whose hidden state is
``(S, z)`` (:func:`linear_attention_step`). It is *not* softmax attention: the weights
``φ(q_i)ᵀφ(k_j)`` form a matrix of rank at most ``r``, so it cannot be as sharp.

Conventions as in :mod:`course_utils.tiled`: ``q (..., Lq, d)``, ``k (..., Lk, d)``,
``v (..., Lk, d_v)``; causal masks are aligned bottom-right (query ``i`` sees keys
``j ≤ i + Lk − Lq``); a row that sees no key (or whose weights are all 0) gives output 0.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from course_utils.validation import check_attention_inputs, check_bool, check_tensor

CHUNK = 128  # rows per chunk of the causal prefix sums: memory O(N·CHUNK + (N/CHUNK)·r·d_v)
FeatureMap = Callable[[torch.Tensor], torch.Tensor]


def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """``φ(x) = elu(x) + 1``: ``x + 1`` for ``x > 0``, ``e^x`` below; positive, same shape."""
    return F.elu(check_tensor(x, "x")) + 1


def linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    feature_map: FeatureMap | None = None,
) -> torch.Tensor:
    """Linear attention ``out_i = φ(q_i)ᵀ S / φ(q_i)ᵀ z``: ``(..., Lq, d_v)``.

    Non-causal: ``S = φ(K)ᵀ V``, ``z = φ(K)ᵀ 1`` over all keys (``Lq`` and ``Lk`` may differ).
    Causal: over the keys ``j ≤ i + Lk − Lq`` only, by prefix sums computed chunk by chunk
    (:data:`CHUNK` rows): the state at the start of each chunk (a cumulative sum of the chunks
    before it) plus the chunk's own lower triangle. ``feature_map`` maps ``(..., L, d)`` to
    non-negative ``(..., L, r)`` features (default :func:`elu_feature_map`).
    """
    lq, lk, _, _ = check_attention_inputs(q, k, v, None)
    check_bool(causal, "causal")
    phi_q, phi_k = _features(q, k, feature_map)
    work = phi_q.dtype
    v = v.to(work)
    if not causal:
        num = phi_q @ (phi_k.transpose(-1, -2) @ v)  # φ(Q) S with S = φ(K)ᵀ V: (..., Lq, d_v)
        den = phi_q @ phi_k.sum(dim=-2, keepdim=True).transpose(-1, -2)  # φ(Q) z: (..., Lq, 1)
        return _divide(num, den).to(q.dtype)
    offset = lk - lq  # bottom-right: keys [0, offset) are seen by every query
    if offset >= 0:
        start = phi_k[..., :offset, :]
        state = (start.transpose(-1, -2) @ v[..., :offset, :], start.sum(dim=-2))
        num, den = _causal(phi_q, phi_k[..., offset:, :], v[..., offset:, :], state)
        return _divide(num, den).to(q.dtype)
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=work, device=q.device)
    num, den = _causal(phi_q[..., -offset:, :], phi_k, v, None)  # the first rows see nothing
    out[..., -offset:, :] = _divide(num, den)
    return out.to(q.dtype)


def linear_attention_step(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    state: tuple[torch.Tensor, torch.Tensor] | None = None,
    *,
    feature_map: FeatureMap | None = None,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """One token of causal linear attention as a recurrent network: ``(out, (S, z))``.

    ``S ← S + φ(k) vᵀ``, ``z ← z + φ(k)``, then ``out = φ(q)ᵀ S / φ(q)ᵀ z`` (the token sees
    itself). ``q, k (..., d)``, ``v (..., d_v)``; ``state = (S (..., r, d_v), z (..., r))``, or
    None to start from zeros. The state has the same size at every step: ``O(r·d_v)``, however
    long the sequence.
    """
    q, k, v = (check_tensor(t, name, min_ndim=1) for name, t in (("q", q), ("k", k), ("v", v)))
    check_attention_inputs(q.unsqueeze(-2), k.unsqueeze(-2), v.unsqueeze(-2), None)
    if state is not None and not (isinstance(state, tuple) and len(state) == 2):
        raise TypeError(f"state must be None or a pair (S, z) of tensors, got "
                        f"{type(state).__name__}")
    if state is not None:
        for name, t in zip(("S", "z"), state, strict=True):
            check_tensor(t, f"state's {name}")
    phi_q, phi_k = (t.squeeze(-2) for t in _features(q.unsqueeze(-2), k.unsqueeze(-2),
                                                       feature_map))
    v = v.to(phi_k.dtype)
    if state is None:
        state = (phi_k.new_zeros(*phi_k.shape, v.shape[-1]), phi_k.new_zeros(phi_k.shape))
    s, z = state
    if s.shape != (*phi_k.shape, v.shape[-1]) or z.shape != phi_k.shape:
        raise ValueError(f"state must be (S {(*phi_k.shape, v.shape[-1])}, z {tuple(phi_k.shape)}),"
                         f" got ({tuple(s.shape)}, {tuple(z.shape)})")
    s = s + phi_k.unsqueeze(-1) * v.unsqueeze(-2)  # + φ(k) vᵀ
    z = z + phi_k
    num = (phi_q.unsqueeze(-2) @ s).squeeze(-2)
    den = (phi_q * z).sum(dim=-1, keepdim=True)
    return _divide(num, den).to(q.dtype), (s, z)


def _causal(phi_q, phi_k, v, state):
    """Numerator ``(..., L, d_v)`` and denominator ``(..., L, 1)`` of causal linear attention for
    aligned queries and keys (query ``i`` sees keys ``j ≤ i``), after an initial ``state``."""
    length, r = phi_q.shape[-2:]
    pad = -length % CHUNK  # zero features at the end: they add nothing to any sum
    chunks = (length + pad) // CHUNK

    def split(t):  # (..., L, c) → (..., chunks, CHUNK, c)
        return F.pad(t, (0, 0, 0, pad)).unflatten(-2, (chunks, CHUNK))

    fq, fk, vc = split(phi_q), split(phi_k), split(v)
    kv = fk.transpose(-1, -2) @ vc  # each chunk's Σ φ(k) vᵀ: (..., chunks, r, d_v)
    s = kv.cumsum(dim=-3) - kv  # the state S at the start of each chunk (exclusive prefix sum)
    z = fk.sum(dim=-2)
    z = (z.cumsum(dim=-2) - z).unsqueeze(-1)  # (..., chunks, r, 1)
    if state is not None:
        s = s + state[0].unsqueeze(-3)
        z = z + state[1].unsqueeze(-2).unsqueeze(-1)
    weights = (fq @ fk.transpose(-1, -2)).tril()  # within a chunk: φ(q_i)ᵀφ(k_j), j ≤ i
    num = fq @ s + weights @ vc
    den = fq @ z + weights.sum(dim=-1, keepdim=True)
    return num.flatten(-3, -2)[..., :length, :], den.flatten(-3, -2)[..., :length, :]


def _divide(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """``num / den`` where ``den > 0``, else 0 (a row with no key, or all weights 0)."""
    return torch.where(den > 0, num / torch.where(den > 0, den, 1.0), 0.0)


def _features(q, k, feature_map) -> tuple[torch.Tensor, torch.Tensor]:
    """``φ(q), φ(k)`` in float32 or float64, checked: non-negative, finite, same width ``r``."""
    if feature_map is None:
        feature_map = elu_feature_map
    elif not callable(feature_map):
        raise TypeError(f"feature_map must be a function, got {type(feature_map).__name__}")
    work = torch.float64 if q.dtype == torch.float64 else torch.float32
    phi_q, phi_k = feature_map(q.to(work)), feature_map(k.to(work))
    for name, phi, x in (("phi(q)", phi_q, q), ("phi(k)", phi_k, k)):
        if not isinstance(phi, torch.Tensor) or phi.shape[:-1] != x.shape[:-1]:
            raise ValueError(f"feature_map must return a tensor of shape {tuple(x.shape[:-1])} "
                             f"+ (r,), got {getattr(phi, 'shape', type(phi).__name__)} for {name}")
        if not torch.isfinite(phi).all() or (phi < 0).any():
            raise ValueError(f"feature_map must return finite, non-negative features: {name} "
                             "has negative, NaN or inf entries")
    if phi_q.shape[-1] != phi_k.shape[-1]:
        raise ValueError(f"feature_map must give q and k the same width r, got "
                         f"{phi_q.shape[-1]} and {phi_k.shape[-1]}")
    return phi_q.to(work), phi_k.to(work)
