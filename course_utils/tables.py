"""Aligned text tables, so a notebook prints a table in one line and its maths lines stay bare.

Numbers are right-aligned and text left-aligned; each column can have its own format
specification (``".4f"``, ``","``, ``"+.3f"``; Python's format mini-language).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

__all__ = ["format_table", "print_table"]


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _is_sequence(value: object) -> bool:
    """A list, tuple, range or NumPy array (not a str)."""
    return isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes))


def format_table(rows: Sequence[Sequence[object]], headers: Sequence[str] | None = None,
                 formats: Sequence[str] | str | None = None, gap: int = 2) -> str:
    """The rows as aligned columns, one line per row, under an optional header line.

    ``formats`` is one format specification for every column or one per column (``""`` leaves a
    value as ``str`` would print it; a spec is applied to numbers only). Columns are as wide as
    their widest entry and separated by ``gap`` spaces; a column is right-aligned when all its
    entries are numbers. Raises ``ValueError`` for rows of different lengths or a ``formats``
    or ``headers`` of the wrong length.
    """
    if not _is_sequence(rows) or not all(_is_sequence(row) for row in rows):
        raise TypeError(f"rows must be a sequence of rows (sequences), got {type(rows).__name__}")
    if headers is not None and (isinstance(headers, str) or not isinstance(headers, Sequence)):
        raise TypeError(f"headers must be a sequence of str or None, got {type(headers).__name__}")
    if formats is not None and not isinstance(formats, (str, Sequence)):
        raise TypeError(f"formats must be a str, a sequence of str or None, got "
                        f"{type(formats).__name__}")
    if isinstance(gap, bool) or not isinstance(gap, numbers.Integral):
        raise TypeError(f"gap must be an int, got {type(gap).__name__}")
    if gap < 0:
        raise ValueError(f"gap must be at least 0, got {gap}")
    rows = [list(row) for row in rows]
    n_cols = len(headers) if headers is not None else (len(rows[0]) if rows else 0)
    if n_cols == 0:
        raise ValueError("a table needs at least one column (give rows or headers)")
    for i, row in enumerate(rows):
        if len(row) != n_cols:
            what = "headers has" if headers is not None else "rows[0] has"
            raise ValueError(f"rows[{i}] has {len(row)} entries, {what} {n_cols}")
    if formats is None or isinstance(formats, str):
        formats = [formats or ""] * n_cols
    formats = list(formats)
    if len(formats) != n_cols:
        raise ValueError(f"formats has {len(formats)} entries, expected one per column ({n_cols})")

    cells = [[format(v, spec) if _is_number(v) and spec else str(v)
              for v, spec in zip(row, formats, strict=True)] for row in rows]
    right = [bool(rows) and all(_is_number(row[c]) for row in rows) for c in range(n_cols)]
    lines = ([list(headers)] if headers is not None else []) + cells
    widths = [max(len(line[c]) for line in lines) for c in range(n_cols)]
    out = []
    for line in lines:
        parts = [text.rjust(w) if r else text.ljust(w)
                 for text, w, r in zip(line, widths, right, strict=True)]
        out.append((" " * gap).join(parts).rstrip())
    return "\n".join(out)


def print_table(rows: Sequence[Sequence[object]], headers: Sequence[str] | None = None,
                formats: Sequence[str] | str | None = None, gap: int = 2) -> None:
    """Print :func:`format_table` (same arguments)."""
    print(format_table(rows, headers, formats, gap))
