"""What attention costs: floating-point operations, the memory of naive attention, and the
elements moved between slow and fast memory (the IO model of Dao et al. 2022).

Counts, not measurements: :mod:`course_utils.measure` measures the machine they are set against.
"""

from __future__ import annotations

from course_utils.validation import check_int


def attention_flops(lq: int, lk: int, d: int, d_v: int | None = None) -> int:
    """Floating-point operations of one attention head's forward pass: ``2·Lq·Lk·(d + d_v)``.

    ``Q Kᵀ`` costs ``2·Lq·Lk·d`` (a multiply and an add per term) and ``P V`` costs ``2·Lq·Lk·d_v``;
    with ``d_v = d`` and ``Lq = Lk = N`` that is the familiar ``4·N²·d``. Softmax (``O(N²)``) is
    not counted, as is customary.
    """
    lq, lk, d = check_int(lq, "lq"), check_int(lk, "lk"), check_int(d, "d")
    d_v = d if d_v is None else check_int(d_v, "d_v")
    return 2 * lq * lk * (d + d_v)


def naive_attention_bytes(lq: int, lk: int, itemsize: int = 4) -> int:
    """Bytes of the two ``Lq × Lk`` matrices naive attention keeps: scores and probabilities.

    ``2·Lq·Lk·itemsize``: about 2 GiB for ``N = 16,384`` in float32 (itemsize 4).
    """
    lq, lk, itemsize = check_int(lq, "lq"), check_int(lk, "lk"), check_int(itemsize, "itemsize")
    return 2 * lq * lk * itemsize


def standard_attention_io(n: int, d: int) -> int:
    """Elements standard attention moves between slow and fast memory: ``4·N·d + 4·N²``.

    Read Q and K, write S; read S, write P; read P and V, write O (Dao et al. 2022, Algorithm 0):
    ``Θ(N·d + N²)``.
    """
    n, d = check_int(n, "n"), check_int(d, "d")
    return 4 * n * d + 4 * n * n


def tiled_attention_io(n: int, d: int, m: int) -> int:
    """Elements tiled attention moves with a fast memory of ``M`` elements: ``2·N·d + T·2·N·d``.

    FlashAttention-2's loop order, with query blocks of ``B = ⌊M / 4d⌋`` rows and key blocks of
    ``d`` rows: the queries and the accumulator (``2·B·d``), one key and one value block
    (``2·d²``) and their ``B × d`` score tile (``B·d``) fit in ``M`` when ``d ≤ √(M/8)``. It reads
    Q and writes O once and streams K and V once per query block: ``T = ⌈N / B⌉`` passes,
    ``≈ 8·N²·d²/M`` elements, the ``Θ(N²·d²/M)`` that FlashAttention's Theorem 2 proves for
    FlashAttention-1's loop order. The log-sum-exp written (``N`` more) is not counted. ``M`` must
    hold at least one row of each, ``M ≥ 4·d``.
    """
    n, d = check_int(n, "n"), check_int(d, "d")
    m = check_int(m, "m", minimum=4 * d)
    rows = m // (4 * d)
    return 2 * n * d + -(-n // rows) * 2 * n * d
