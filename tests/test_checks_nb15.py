"""Notebook 15's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
from checker_table import right, table_test, wrong

from course_utils.checks import nb15


def rotate_pairs(x, pos, theta):
    if len(x) % 2:
        raise ValueError(f"d must be even, got {len(x)}")
    c, s = np.cos(pos * theta), np.sin(pos * theta)
    out = np.empty_like(x)
    out[0::2] = x[0::2] * c - x[1::2] * s
    out[1::2] = x[0::2] * s + x[1::2] * c
    return out


def rope(x, pos, base=10000.0):
    return rotate_pairs(x, pos, base ** (-np.arange(0, len(x), 2) / len(x)))


def rope_by_matrix(x, pos, base=10000.0):  # the block-diagonal R_pos, built pair by pair
    d = len(x)
    if d % 2:
        raise ValueError("odd d")
    r = np.zeros((d, d))
    for i in range(d // 2):
        angle = pos * base ** (-2 * i / d)
        r[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[np.cos(angle), -np.sin(angle)],
                                               [np.sin(angle), np.cos(angle)]]
    return r @ x


def rope_half_split(x, pos, base=10000.0):
    d = len(x)
    if d % 2:
        raise ValueError("odd d")
    theta = base ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(pos * theta), np.sin(pos * theta)
    x1, x2 = x[: d // 2], x[d // 2:]
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c])


def rope_in_place(x, pos, base=10000.0):
    x[:] = rope(x, pos, base)
    return x


def kv_bytes(n_layers, n_heads, n_kv_heads, head_dim, n_tokens, dtype):
    return 2 * n_layers * n_kv_heads * head_dim * n_tokens * dtype.itemsize


def top_p_probs(logits, temperature, top_p, inclusive=False, renormalise=True):
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    z = logits / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.argsort(-p, kind="stable")
    total = np.cumsum(p[order]) - (0 if inclusive else p[order])  # up to / before each token
    keep = np.zeros(len(p), dtype=bool)
    keep[order[(total <= top_p) if inclusive else (total < top_p)]] = True
    keep[order[0]] = True
    out = np.where(keep, p, 0.0)
    return out / out.sum() if renormalise else out


def top_p_before_temperature(logits, temperature, top_p):
    keep = top_p_probs(logits, 1.0, top_p) > 0
    z = logits / temperature
    p = np.where(keep, np.exp(z - z.max()), 0.0)
    return p / p.sum()


def repeat_kv(k, n_heads):
    if n_heads % k.shape[1]:
        raise ValueError(f"{n_heads} query heads cannot share {k.shape[1]} KV heads")
    return k.repeat_interleave(n_heads // k.shape[1], dim=1)


def repeat_kv_by_expand(k, n_heads):
    b, h, length, d = k.shape
    if n_heads % h:
        raise ValueError("not a multiple")
    return k[:, :, None].expand(b, h, n_heads // h, length, d).reshape(b, n_heads, length, d)


def repeat_kv_tiled(k, n_heads):  # heads 0, 1, 0, 1 instead of 0, 0, 1, 1
    if n_heads % k.shape[1]:
        raise ValueError("not a multiple")
    return k.repeat(1, n_heads // k.shape[1], 1, 1)


ROWS = [
    *right(nb15.check_rope, worked=rope, matrix=rope_by_matrix),
    *wrong(
        nb15.check_rope,
        wrong_direction=(lambda x, pos, base=10000.0: rope(x, -pos, base),
                         "expected 0.8414709848078965, got -0.8414709848078965"),
        half_split_layout=(rope_half_split, "d = 8 at position 3: values differ"),
        theta_base_to_minus_i_over_d=(
            lambda x, pos, base=10000.0: rotate_pairs(x, pos, base ** (-np.arange(len(x) // 2)
                                                                       / len(x))),
            "6 of 8 entries differ"),
        no_rotation=(lambda x, pos, base=10000.0: rope(x, 0), "expected [0.54030231, 0.84147098]"),
        changes_x=(rope_in_place, "changed its argument `x` in place"),
    ),
    *right(nb15.check_kv_cache_bytes, worked=kv_bytes),
    *wrong(
        nb15.check_kv_cache_bytes,
        forgets_values=(lambda n_l, n_h, n_kv, d, n, dt: kv_bytes(n_l, n_h, n_kv, d, n, dt) // 2,
                        "expected 131072, got 65536"),
        query_heads=(lambda n_l, n_h, n_kv, d, n, dt: kv_bytes(n_l, n_h, n_h, d, n, dt),
                     "expected 131072, got 524288"),
        bits=(lambda n_l, n_h, n_kv, d, n, dt: kv_bytes(n_l, n_h, n_kv, d, n, dt) * 8,
              "expected 131072, got 1048576"),
        kib=(lambda *args: kv_bytes(*args) / 1024, "expected an integer, got float 128.0"),
        one_layer=(lambda n_l, n_h, n_kv, d, n, dt: kv_bytes(1, n_h, n_kv, d, n, dt),
                   "expected 131072, got 4096"),
    ),
    *right(nb15.check_top_p, worked=top_p_probs),
    *wrong(
        nb15.check_top_p,
        drops_the_crossing_token=(lambda z, t, p: top_p_probs(z, t, p, inclusive=True),
                                  "expected [0.55555556, 0., 0.27777778, 0.16666667], got "
                                  "[0.66666667, 0., 0.33333333, 0.]"),
        not_renormalised=(lambda z, t, p: top_p_probs(z, t, p, renormalise=False),
                          "got [0.5, 0., 0.25, 0.15]"),
        top_p_before_temperature=(top_p_before_temperature,
                                  "temperature 3 first: the flatter distribution needs 3 tokens"),
        no_check=(lambda z, t, p: top_p_probs(z, t, min(max(p, 1e-9), 1.0)),
                  "should raise ValueError"),
    ),
    *right(nb15.check_repeat_kv, worked=repeat_kv, expand=repeat_kv_by_expand),
    *wrong(
        nb15.check_repeat_kv,
        tiled=(repeat_kv_tiled, "2 KV heads for 4 query heads: 0, 0, 1, 1: values differ"),
        no_check=(lambda k, n: k.repeat_interleave(n // k.shape[1], dim=1),
                  "should raise ValueError"),
        not_repeated=(lambda k, n: k, "shape: expected (2, 4, 3, 4), got (2, 2, 3, 4)"),
        float32=(lambda k, n: repeat_kv(k, n).float(), "dtype: expected torch.float64"),
    ),
]

test_checker = table_test(ROWS)
