"""Notebook 15's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import torch
from checker_table import right, table_test, wrong

from course_utils import positional, sampling
from course_utils.checks import nb15


def rope_score_terms(q, k, phase_sign=1.0, with_phase=True):
    q0, q1, k0, k1 = q[0::2], q[1::2], k[0::2], k[1::2]
    amplitude = np.hypot(q0, q1) * np.hypot(k0, k1)
    phase = phase_sign * (np.arctan2(k1, k0) - np.arctan2(q1, q0))
    return amplitude, phase if with_phase else np.zeros_like(phase)


def rope_score_terms_complex(q, k):  # q̄ k per pair, as complex numbers
    product = np.conj(q[0::2] + 1j * q[1::2]) * (k[0::2] + 1j * k[1::2])
    return np.abs(product), np.angle(product)


def rope_score_as_dot(q, k):  # the dot product of the pairs, no phase
    return q[0::2] * k[0::2] + q[1::2] * k[1::2], np.zeros(len(q) // 2)


def top_p_probs(logits, temperature, top_p):
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    z = logits / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.argsort(-p, kind="stable")
    before = np.cumsum(p[order]) - p[order]
    keep = np.zeros(len(p), dtype=bool)
    keep[order[before < top_p]] = True
    out = np.where(keep, p, 0.0)
    return out / out.sum()


def top_p_keep_first_only(logits, temperature, top_p):  # the NaN fixed, the off-by-one kept
    z = logits / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    if not 0 < top_p <= 1:
        raise ValueError("top_p")
    order = np.argsort(-p, kind="stable")
    keep = np.zeros(len(p), dtype=bool)
    keep[order[np.cumsum(p[order]) <= top_p]] = True
    keep[order[0]] = True
    out = np.where(keep, p, 0.0)
    return out / out.sum()


def gqa(q, k, v):  # the group folded into the query axis: (G·N) queries per K/V head
    b, h_q, length, d = q.shape
    h_kv = k.shape[1]
    folded = q.reshape(b, h_kv, h_q // h_kv * length, d)        # (B, H_kv, G·N, d)
    scores = folded @ k.transpose(-1, -2) / math.sqrt(d)
    return (torch.softmax(scores, dim=-1) @ v).reshape(b, h_q, length, d)


def gqa_einsum(q, k, v):
    b, h_q, length, d = q.shape
    grouped = q.unflatten(1, (k.shape[1], -1))
    scores = torch.einsum("bhgqd,bhkd->bhgqk", grouped, k) / math.sqrt(d)
    return torch.einsum("bhgqk,bhkd->bhgqd", scores.softmax(-1), v).flatten(1, 2)


def gqa_broadcast_matmul(q, k, v):  # q in groups, `@` against k[:, :, None]: broadcasting
    b, h_q, length, d = q.shape
    h_kv = k.shape[1]
    grouped = q.view(b, h_kv, h_q // h_kv, length, d)           # (B, H_kv, g, L, d)
    scores = grouped @ k[:, :, None].transpose(-1, -2) / math.sqrt(d)
    return (torch.softmax(scores, dim=-1) @ v[:, :, None]).reshape(b, h_q, length, d)


def gqa_sdpa(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)




def gqa_broadcast_tensors(q, k, v):
    b, h_q, length, d = q.shape
    grouped = q.view(b, k.shape[1], -1, length, d)
    k5, _ = torch.broadcast_tensors(k[:, :, None], grouped)
    v5, _ = torch.broadcast_tensors(v[:, :, None], grouped)
    return _repeated_attention(q, k5.flatten(1, 2), v5.flatten(1, 2))


def gqa_expand(q, k, v):  # a view of k per group, flattened: a copy
    g = q.shape[1] // k.shape[1]
    k2 = k[:, :, None].expand(-1, -1, g, -1, -1).flatten(1, 2)
    v2 = v[:, :, None].expand(-1, -1, g, -1, -1).flatten(1, 2)
    return _repeated_attention(q, k2, v2)


def gqa_stack(q, k, v):  # G copies of each K/V head, side by side
    g = q.shape[1] // k.shape[1]
    return _repeated_attention(q, torch.stack([k] * g, dim=2).flatten(1, 2),
                               torch.stack([v] * g, dim=2).flatten(1, 2))


def gqa_tile(q, k, v):
    g = q.shape[1] // k.shape[1]
    k2 = torch.tile(k[:, :, None], (1, 1, g, 1, 1)).flatten(1, 2)
    v2 = torch.tile(v[:, :, None], (1, 1, g, 1, 1)).flatten(1, 2)
    return _repeated_attention(q, k2, v2)


def gqa_gather(q, k, v):  # each query head's K/V head picked by an index: G copies
    b, h_q, length, d = q.shape
    heads = torch.zeros(b, h_q, length, d, dtype=torch.long) + (
        torch.arange(h_q) // (h_q // k.shape[1])).view(1, -1, 1, 1)
    return _repeated_attention(q, k.gather(1, heads), v.gather(1, heads))


def gqa_per_head(q, k, v):  # a loop over the query heads, each reading a view of its K/V head
    g, d = q.shape[1] // k.shape[1], q.shape[-1]
    out = torch.empty_like(q)
    for i in range(q.shape[1]):
        weights = (q[:, i] @ k[:, i // g].transpose(-1, -2) / math.sqrt(d)).softmax(-1)
        out[:, i] = weights @ v[:, i // g]
    return out


def scaled_dot_product_attention(q, k, v):  # the learner's own, under the library's name
    grouped = q.unflatten(1, (k.shape[1], -1))
    weights = (grouped @ k.unsqueeze(2).transpose(-1, -2) / math.sqrt(q.shape[-1])).softmax(-1)
    return (weights @ v.unsqueeze(2)).flatten(1, 2)


def gqa_own_helper(q, k, v):
    return scaled_dot_product_attention(q, k, v)


def gqa_repeat(q, k, v):
    g = q.shape[1] // k.shape[1]
    return torch.nn.functional.scaled_dot_product_attention(q, k.repeat_interleave(g, 1),
                                                            v.repeat_interleave(g, 1))




def gqa_interleaved_groups(q, k, v):  # heads grouped 0, 1, 0, 1: a view, but the wrong one
    b, h_q, length, d = q.shape
    grouped = q.view(b, h_q // k.shape[1], k.shape[1], length, d).transpose(1, 2)
    scores = torch.einsum("bhgqd,bhkd->bhgqk", grouped, k) / math.sqrt(d)
    out = torch.einsum("bhgqk,bhkd->bhgqd", scores.softmax(-1), v)
    return out.transpose(1, 2).reshape(b, h_q, length, d)


def gqa_unscaled(q, k, v):
    b, h_q, length, d = q.shape
    folded = q.reshape(b, k.shape[1], -1, d)
    scores = folded @ k.transpose(-1, -2)
    return (torch.softmax(scores, dim=-1) @ v).reshape(b, h_q, length, d)


def top_p_before_at_most(logits, temperature, top_p):  # `<=` keeps a token that only ties
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    z = logits / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.argsort(-p, kind="stable")
    before = np.cumsum(p[order]) - p[order]
    keep = np.zeros(len(p), dtype=bool)
    keep[order[before <= top_p]] = True
    out = np.where(keep, p, 0.0)
    return out / out.sum()


def _repeated_attention(q, k, v):
    weights = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).softmax(dim=-1)
    return weights @ v


def gqa_detach_then_repeat(q, k, v):  # detach() first: the copy is still of k's heads
    g = q.shape[1] // k.shape[1]
    return _repeated_attention(q, k.detach().repeat_interleave(g, dim=1),
                               v.detach().repeat_interleave(g, dim=1))


def gqa_copy_then_repeat(q, k, v):  # k + 0 is a new tensor, then repeated
    g = q.shape[1] // k.shape[1]
    return _repeated_attention(q, (k + 0).repeat_interleave(g, dim=1),
                               (v * 1).repeat_interleave(g, dim=1))


def top_p_torch(logits, temperature, top_p):  # section 6's rule, right, but in torch
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    q = torch.softmax(torch.from_numpy(logits) / temperature, dim=-1)
    sorted_q, order = q.sort(descending=True, stable=True)
    keep = torch.zeros_like(q, dtype=torch.bool)
    keep[order[sorted_q.cumsum(-1) - sorted_q < top_p]] = True
    out = torch.where(keep, q, 0.0)
    return (out / out.sum()).numpy()






def top_p_library(logits, temperature, top_p):  # section 6's function does the work
    return sampling.filter_probs(torch.from_numpy(logits), temperature, top_p=top_p).numpy()


def top_p_refuses_only_zero(logits, temperature, top_p):  # top_p = 1.5 gets through
    if top_p <= 0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    return top_p_probs(logits, temperature, min(top_p, 1.0))


def rope_score_terms_half(q, k):  # pairs (i, i + d/2), the half layout's
    h = len(q) // 2
    return rope_score_terms(np.stack([q[:h], q[h:]], -1).ravel(),
                            np.stack([k[:h], k[h:]], -1).ravel())


def rope_score_terms_negative(q, k):  # A < 0 where the phase is shifted by π: same scores
    amplitude, phase = rope_score_terms(q, k)
    return -amplitude, phase + np.pi




def gqa_via_numpy(q, k, v):  # np.asarray(k) copies k out of PyTorch, np.repeat copies it G times
    g = q.shape[1] // k.shape[1]
    k2 = torch.from_numpy(np.repeat(np.asarray(k), g, axis=1))
    v2 = torch.from_numpy(np.repeat(np.asarray(v), g, axis=1))
    return _repeated_attention(q, k2, v2)


def gqa_unwatched(q, k, v):  # as_subclass(torch.Tensor) sheds the checker's watch, then repeats
    g = q.shape[1] // k.shape[1]
    return _repeated_attention(q, k.as_subclass(torch.Tensor).repeat_interleave(g, 1),
                               v.as_subclass(torch.Tensor).repeat_interleave(g, 1))


def ntk_frequencies(head_dim, base, factor):  # the worked solution
    return positional.rope_frequencies(head_dim, base * factor ** (head_dim / (head_dim - 2)))


def ntk_by_hand(head_dim, base, factor):  # the new base, the frequencies written out
    new_base = base * math.pow(factor, head_dim / (head_dim - 2))
    return new_base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)


def ntk_each_pair(head_dim, base, factor):  # pair i slowed by s^(2i / (d - 2)), the same thing
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    return positional.rope_frequencies(head_dim, base) / factor ** (2 * i / (head_dim - 2))


def ntk_interpolation(head_dim, base, factor):  # position interpolation: ω_i / s
    return positional.rope_frequencies(head_dim, base) / factor


def ntk_base_times_factor(head_dim, base, factor):
    return positional.rope_frequencies(head_dim, base * factor)


def ntk_exponent_upside_down(head_dim, base, factor):  # s^((d - 2)/d) for s^(d/(d - 2))
    return positional.rope_frequencies(head_dim, base * factor ** ((head_dim - 2) / head_dim))


def ntk_wavelengths(head_dim, base, factor):
    return 2 * math.pi / ntk_frequencies(head_dim, base, factor)


def ntk_pairs_from_one(head_dim, base, factor):  # i = 1, …, d/2 instead of 0, …, d/2 − 1
    new_base = base * factor ** (head_dim / (head_dim - 2))
    return new_base ** (-torch.arange(2, head_dim + 2, 2, dtype=torch.float64) / head_dim)


def ntk_float32(head_dim, base, factor):
    return ntk_frequencies(head_dim, base, factor).float()


ROWS = [
    *right(nb15.check_kv_cache_70b, exact=37027, as_float=37027.0),
    *wrong(
        nb15.check_kv_cache_70b,
        rounded_up=(37028, "37,028 is too high: that rounds up (as round() does here): the last "
                    "token would not fit"),
        python_round=(round(37027.64), "that rounds up (as round() does here)"),
        ceil=(math.ceil(37027.64), "that rounds up"),
        not_whole=(37027.64, "that is not a whole number of tokens"),
        near=(37020, "37,020 is too low: count the bytes the weights leave"),
        round_thousands=(37000, "37,000 is too low"),
        without_weights=(46603, "46,603 is too high: that is what 640 GiB holds with no weights"),
        query_heads=(4628, "4628 is too low: that counts the 64 query heads"),
        one_conversation=(1666243, "that is one conversation's context; 45 share the memory"),
        one_byte_per_number=(74055, "74,055 is too high: that halves a token's bytes: a key and a "
                             "value, 2 bytes a number"),
        gb_as_gib=(36321, "a GiB is 2³⁰ bytes, not 10⁹"),
        weights_one_byte=(41815, "41,815 is too high: that counts 1 byte per weight; a weight "
                          "takes 2 bytes"),
        machine_in_gb=(33827, "33,827 is too low: that reads 80 GiB as 80·10⁹ bytes; a GiB is 2³⁰ "
                       "bytes"),
        other=(20000, "20,000 is too low: count the bytes the weights leave"),
        string=("37027 tokens", "expected a number, got str"),
    ),
    *right(nb15.check_rope_score_terms, worked=rope_score_terms, complex=rope_score_terms_complex),
    *wrong(
        nb15.check_rope_score_terms,
        phase_sign=(lambda q, k: rope_score_terms(q, k, phase_sign=-1.0),
                    "the score is -sin Δ, so k's angle enters the phase: the phases have the "
                    "wrong sign"),
        no_phase=(lambda q, k: rope_score_terms(q, k, with_phase=False),
                  "the score is -sin Δ, so k's angle enters the phase: every phase is 0"),
        dot_per_pair=(rope_score_as_dot, "the score is -sin Δ"),
        one_total=(lambda q, k: (q @ k, 0.0),
                   "amplitudes: expected a numpy.ndarray, got numpy.float64"),
        negative_amplitude=(rope_score_terms_negative, "put the sign into the phase (ψ + π)"),
        half_layout=(rope_score_terms_half, "d = 8, q ≠ k: a phase per pair: it pairs entry i "
                     "with entry i + d/2"),
    ),
    *right(nb15.check_top_p, worked=top_p_probs, in_torch=top_p_torch,
           library=top_p_library),  # a note: it calls filter_probs
    *wrong(
        nb15.check_top_p,
        given=(nb15.top_p_given, "a confident model: 0.9 alone passes top_p = 0.5, and that one "
               "token must stay: still the bug"),
        before_at_most=(top_p_before_at_most, "the next token's total before it is 0.5, not "
                        "below, so it goes: values differ"),
        keep_first_only=(top_p_keep_first_only, "the 0.15 that crosses 0.8 stays: still the bug"),
        refuses_only_zero=(top_p_refuses_only_zero, "top_p = 1.5 is not in (0, 1]: ValueError: "
                           "should raise ValueError"),
    ),
    *right(nb15.check_gqa_attention, worked=gqa_einsum, folded=gqa,
           broadcast_matmul=gqa_broadcast_matmul, per_head=gqa_per_head,
           own_helper=gqa_own_helper),
    *wrong(
        nb15.check_gqa_attention,
        repeat_interleave=(gqa_repeat, "the rule: it calls repeat_interleave: the rule is no "
                           "copy of the K/V heads"),
        expand=(gqa_expand, "the rule: it calls expand"),
        stack=(gqa_stack, "the rule: it calls stack"),
        tile=(gqa_tile, "the rule: it calls tile"),
        gather=(gqa_gather, "the rule: it calls gather"),
        interleaved_groups=(gqa_interleaved_groups, "query heads 0, 1 read K/V head 0: the query "
                            "heads are grouped 0, 1, 0, 1, …"),
        unscaled=(gqa_unscaled, "these are the unscaled scores: divide QKᵀ by √d before the "
                  "softmax"),
        detach_then_repeat=(gqa_detach_then_repeat, "it calls repeat_interleave"),
        copy_then_repeat=(gqa_copy_then_repeat, "it calls repeat_interleave"),
        library_gqa=(gqa_sdpa, "it calls scaled_dot_product_attention"),
        broadcast_tensors=(gqa_broadcast_tensors, "it calls broadcast_tensors"),
        via_numpy=(gqa_via_numpy, "it calls repeat"),
        unwatched=(gqa_unwatched, "it calls repeat_interleave"),
    ),
    *right(nb15.check_ntk_frequencies, worked=ntk_frequencies, by_hand=ntk_by_hand,
           each_pair=ntk_each_pair),
    *wrong(
        nb15.check_ntk_frequencies,
        interpolation=(ntk_interpolation, "these are position interpolation's ω_i / s: pair 0 "
                       "slowed too"),
        base_times_factor=(ntk_base_times_factor, "the base b·s slows the slowest pair by "
                           "s^((d − 2)/d), not by s"),
        exponent_upside_down=(ntk_exponent_upside_down, "the slowest pair (i = d/2 − 1) turns "
                              "s^(((d − 2)/d)²) times slower than with b, not s times"),
        wavelengths=(ntk_wavelengths, "these are wavelengths 2π/ω_i, in positions"),
        pairs_from_one=(ntk_pairs_from_one, "pair 0's frequency is not 1"),
        float32=(ntk_float32, "dtype: expected torch.float64, got torch.float32"),
        numpy=(lambda d, b, s: ntk_frequencies(d, b, s).numpy(), "expected a torch.Tensor"),
    ),
]

test_checker = table_test(ROWS)
