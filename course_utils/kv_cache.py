"""Key/value caches for generation: grown by concatenation, preallocated, rolling, and paged.

A decoder generating token N must attend over the keys and values of all N − 1 earlier tokens
of every layer. The cache stores them, per layer ``(B, H_kv, L, head_dim)`` (batch, key/value
heads, positions, features), so each step computes only the new token's. The four kinds store
the same numbers and differ in what a step costs and in the memory they hold:

========================  ===================================  ==================================
kind                      one new token costs (per layer)      memory held
========================  ===================================  ==================================
grow (``torch.cat``)      a copy of all L cached positions:    exactly the L positions so far
                          O(L·d) bytes moved, O(L²·d) in all
preallocated (max_len=M)  a write of one position: O(d)        M positions from the start
rolling (window=W)        a write of one position: O(d)        W positions, however long L grows
paged (blocks of size S)  a write of one position: O(d)        ⌈L/S⌉ blocks of S positions each
========================  ===================================  ==================================

(d = H_kv·head_dim numbers of keys and as many of values.) The rolling buffer keeps only the W
most recent positions, as a model with a sliding window of W needs (Mistral 7B v0.1: W = 4,096):
position p sits in slot p mod W, overwriting position p − W, which no later query sees. The
paged cache hands out fixed-size blocks from one pool shared by the whole batch and keeps, per
sequence, a block table of the blocks it holds, in order (vLLM's PagedAttention; Kwon et al.,
2023): memory grows a block at a time instead of being reserved for the longest possible
sequence.

A cache is filled layer by layer: ``update(layer, k, v)`` stores the keys and values of the new
tokens and returns the keys and values attention must read, with the position of each.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod

import torch
from torch import Tensor

from course_utils.validation import check_int, check_tensor

__all__ = ["KVCache", "PagedKVCache"]


def _check_dims(n_layers: object, batch_size: object, n_kv_heads: object, head_dim: object,
                dtype: object) -> tuple[int, int, int, int]:
    """The shape arguments every cache takes, as ints; ``dtype`` must be a ``torch.dtype``."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    return (check_int(n_layers, "n_layers"), check_int(batch_size, "batch_size"),
            check_int(n_kv_heads, "n_kv_heads"), check_int(head_dim, "head_dim"))


class _Cache(ABC):
    """What every cache shares: its shape, a fill count per layer, and the checks of
    ``update``. ``_lengths[l]`` is how many positions layer ``l`` holds; ``length`` is the last
    layer's, so it moves once the whole model has seen the new tokens."""

    def __init__(self, n_layers: int, batch_size: int, n_kv_heads: int, head_dim: int,
                 dtype: torch.dtype, device: torch.device | str | None):
        self.n_layers, self.batch_size = n_layers, batch_size
        self.n_kv_heads, self.head_dim = n_kv_heads, head_dim
        self.dtype, self.device = dtype, torch.device("cpu") if device is None else device
        self._lengths = [0] * n_layers
        self._k: list[Tensor] = []
        self._v: list[Tensor] = []

    def _allocate(self, shape: tuple[int, ...]) -> None:
        """One zero tensor of ``shape`` per layer for the keys, one for the values."""
        self._k = [torch.zeros(shape, dtype=self.dtype, device=self.device)
                   for _ in range(self.n_layers)]
        self._v = [torch.zeros(shape, dtype=self.dtype, device=self.device)
                   for _ in range(self.n_layers)]

    @property
    def nbytes(self) -> int:
        """The bytes allocated for keys and values (every slot or block, used or not)."""
        return sum(t.numel() * t.element_size() for t in (*self._k, *self._v))

    @property
    def length(self) -> int:
        """The number of positions seen so far (the position of the next token)."""
        return self._lengths[-1]

    def room(self, layer: int) -> int | None:
        """How many more positions layer ``layer`` can take (None: no limit)."""
        return self._room(check_int(layer, "layer", minimum=0, maximum=self.n_layers - 1))

    def _room(self, layer: int) -> int | None:
        return None

    def update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Store the keys and values ``(B, H_kv, L_new, head_dim)`` of ``L_new`` new positions in
        layer ``layer``; return ``(keys, values, positions)``: what attention must read,
        ``(B, H_kv, L_k, head_dim)`` each, and the position of each of those keys, int64
        ``(L_k,)`` (a rolling buffer returns them in slot order, not position order)."""
        layer = check_int(layer, "layer", minimum=0, maximum=self.n_layers - 1)
        shape = (self.batch_size, self.n_kv_heads, None, self.head_dim)
        for name, t in (("k", k), ("v", v)):
            check_tensor(t, name, dtype=self.dtype)
            if t.ndim != 4 or t.shape[0] != shape[0] or t.shape[1] != shape[1] or (
                    t.shape[3] != shape[3]) or t.shape[2] == 0:
                raise ValueError(f"{name} must have shape (B, H_kv, L_new, head_dim) = "
                                 f"({shape[0]}, {shape[1]}, L_new >= 1, {shape[3]}), got "
                                 f"{tuple(t.shape)}")
        if k.shape != v.shape:
            raise ValueError(f"k and v must have one shape, got {tuple(k.shape)} and "
                             f"{tuple(v.shape)}")
        left = self._room(layer)
        if left is not None and k.shape[2] > left:
            raise ValueError(f"k holds {k.shape[2]} new positions, the cache has room for {left}")
        return self._update(layer, k, v)

    @abstractmethod
    def _update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``update`` on checked arguments."""

    def _positions(self, n: int) -> Tensor:
        return torch.arange(n, device=self.device)


class KVCache(_Cache):
    """A contiguous cache: per layer a ``(B, H_kv, ·, head_dim)`` tensor of keys and one of
    values, in one of three modes.

    - ``max_len=None, window=None``: **grow** by ``torch.cat`` each step, the naive cache (each
      step copies all L cached positions into a new tensor: O(L·d) per token). Its tensors are
      never written in place, so the model hands back a new cache and the old one stays valid
      (a prompt's cache can be continued in two ways).
    - ``max_len=M``: **preallocated**, ``(B, H_kv, M, head_dim)`` zeros allocated once; step t
      writes slot t in place (O(d) per token). The model writes into it and returns it.
    - ``window=W``: **rolling**, ``(B, H_kv, W, head_dim)``; position p goes to slot p mod W,
      so memory stays at W positions however long the sequence grows. Only for a model whose
      attention looks back at most W positions (``LMConfig(sliding_window=W)``).

    ``keys[l]``, ``values[l]``: layer l's cached keys/values in position order,
    ``(B, H_kv, L, head_dim)`` (the last ``min(L, W)`` for a rolling cache); ``nbytes``: the
    bytes allocated.
    """

    def __init__(self, n_layers: int, batch_size: int, n_kv_heads: int, head_dim: int, *,
                 max_len: int | None = None, window: int | None = None,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None):
        dims = _check_dims(n_layers, batch_size, n_kv_heads, head_dim, dtype)
        super().__init__(*dims, dtype, device)
        if max_len is not None and window is not None:
            raise ValueError("give max_len (a preallocated cache) or window (a rolling one), "
                             "not both")
        self.max_len = None if max_len is None else check_int(max_len, "max_len")
        self.window = None if window is None else check_int(window, "window")
        slots = self.max_len or self.window or 0  # 0: the grown cache starts empty
        self._allocate((self.batch_size, n_kv_heads, slots, head_dim))

    @property
    def grows(self) -> bool:
        """True for the cache grown by ``torch.cat`` (never written in place)."""
        return self.max_len is None and self.window is None

    def _room(self, layer: int) -> int | None:
        return None if self.max_len is None else self.max_len - self._lengths[layer]

    def branch(self) -> KVCache:
        """A grown cache that shares this one's tensors (no copy): the model extends the branch
        and leaves this cache as it was."""
        twin = copy.copy(self)
        twin._k, twin._v, twin._lengths = list(self._k), list(self._v), list(self._lengths)
        return twin

    def _update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        n, n_new = self._lengths[layer], k.shape[2]
        self._lengths[layer] = n + n_new
        if self.grows:  # copies all n cached positions
            self._k[layer] = torch.cat([self._k[layer], k], dim=2)
            self._v[layer] = torch.cat([self._v[layer], v], dim=2)
            return self._k[layer], self._v[layer], self._positions(n + n_new)
        if self.max_len is not None:  # writes n_new positions; the slices are views, no copy
            self._k[layer][:, :, n:n + n_new] = k
            self._v[layer][:, :, n:n + n_new] = v
            return (self._k[layer][:, :, :n + n_new], self._v[layer][:, :, :n + n_new],
                    self._positions(n + n_new))
        return self._roll(layer, n, k, v)

    def _roll(self, layer: int, n: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The rolling buffer: positions ``n, …, n + L_new − 1`` go to their slots p mod W."""
        w, n_new, buf_k, buf_v = self.window, k.shape[2], self._k[layer], self._v[layer]
        assert w is not None
        if n_new == 1:  # decode: slot n mod W held position n − W, which query n does not see
            buf_k[:, :, n % w], buf_v[:, :, n % w] = k[:, :, 0], v[:, :, 0]
            filled = min(n + 1, w)
            return buf_k[:, :, :filled], buf_v[:, :, :filled], self._slot_positions(n + 1)
        # a chunk (the prompt): its first queries still need keys the chunk would overwrite, so
        # attention reads the old slots and the new keys side by side, then the chunk's last W
        # positions are written
        old = min(n, w)
        keys, values = torch.cat([buf_k[:, :, :old], k], 2), torch.cat([buf_v[:, :, :old], v], 2)
        positions = torch.cat([self._slot_positions(n), torch.arange(n, n + n_new,
                                                                     device=self.device)])
        kept = torch.arange(max(n, n + n_new - w), n + n_new, device=self.device)
        buf_k[:, :, kept % w], buf_v[:, :, kept % w] = k[:, :, kept - n], v[:, :, kept - n]
        return keys, values, positions

    def _slot_positions(self, n: int) -> Tensor:
        """The position held by each filled slot of a rolling buffer after n positions:
        slot s holds the latest p < n with p mod W = s."""
        assert self.window is not None
        s = torch.arange(min(n, self.window), device=self.device)
        return s + self.window * ((n - 1 - s) // self.window)

    def _in_order(self, buffers: list[Tensor]) -> tuple[Tensor, ...]:
        n = self.length
        if self.window is None:
            return tuple(b[:, :, :n] for b in buffers)
        # slots in position order: the oldest sits in slot n mod W once the buffer is full
        shift = n % self.window if n >= self.window else 0
        return tuple(torch.roll(b[:, :, :min(n, self.window)], -shift, dims=2) for b in buffers)

    @property
    def keys(self) -> tuple[Tensor, ...]:
        """Per layer, the cached keys ``(B, H_kv, L, head_dim)`` in position order."""
        return self._in_order(self._k)

    @property
    def values(self) -> tuple[Tensor, ...]:
        """Per layer, the cached values ``(B, H_kv, L, head_dim)`` in position order."""
        return self._in_order(self._v)


class PagedKVCache(_Cache):
    """A paged cache: keys and values live in fixed-size blocks of ``block_size`` positions taken
    from one pool of ``n_blocks`` blocks per layer, ``(n_blocks, H_kv, block_size, head_dim)``,
    shared by all sequences of the batch. ``block_tables[b]`` lists, in order, the blocks that
    hold sequence b: position p of sequence b is slot ``p mod block_size`` of block
    ``block_tables[b][p // block_size]``. A block is taken from the free list when a sequence
    fills its last one, so a sequence of L positions holds ⌈L / block_size⌉ blocks, and at most
    ``block_size − 1`` reserved slots are unused, against ``M − L`` for a cache preallocated to
    M positions (``reserved_slots`` counts them).

    The keys and values are those of the contiguous cache; ``update`` gathers a sequence's blocks
    through its table, a copy a real kernel (vLLM's PagedAttention) avoids by reading the blocks
    inside the attention kernel. Here the point is the data structure, not the speed.
    """

    def __init__(self, n_layers: int, batch_size: int, n_kv_heads: int, head_dim: int, *,
                 n_blocks: int, block_size: int = 16, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None):
        dims = _check_dims(n_layers, batch_size, n_kv_heads, head_dim, dtype)
        super().__init__(*dims, dtype, device)
        self.n_blocks = check_int(n_blocks, "n_blocks")
        self.block_size = check_int(block_size, "block_size")
        self._allocate((self.n_blocks, n_kv_heads, self.block_size, head_dim))
        self._free = list(range(self.n_blocks))
        self.block_tables: list[list[int]] = [[] for _ in range(self.batch_size)]

    def _room(self, layer: int) -> int:
        held = len(self.block_tables[0]) * self.block_size - self._lengths[layer]
        return held + len(self._free) // self.batch_size * self.block_size

    @property
    def reserved_slots(self) -> int:
        """The positions the blocks held by the batch can store (used or not)."""
        return sum(len(table) for table in self.block_tables) * self.block_size

    def _update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        n, n_new = self._lengths[layer], k.shape[2]
        if layer == 0:  # the first layer takes the blocks the new positions need, for all layers
            need = math.ceil((n + n_new) / self.block_size) - len(self.block_tables[0])
            for table in self.block_tables:  # from one free list: sequences' blocks interleave
                table.extend(self._free.pop(0) for _ in range(need))
        p = torch.arange(n, n + n_new, device=self.device)
        for b, table in enumerate(self.block_tables):
            blocks = torch.tensor(table, device=self.device)[p // self.block_size]
            self._k[layer][blocks, :, p % self.block_size] = k[b].transpose(0, 1)
            self._v[layer][blocks, :, p % self.block_size] = v[b].transpose(0, 1)
        self._lengths[layer] = n + n_new
        keys, values = self._gather(layer, n + n_new)
        return keys, values, self._positions(n + n_new)

    def _gather(self, layer: int, n: int) -> tuple[Tensor, Tensor]:
        """Each sequence's first n positions, read through its block table: ``(B, H_kv, n, d)``."""
        used = math.ceil(n / self.block_size)
        out = []
        for pool in (self._k[layer], self._v[layer]):
            rows = [pool[table[:used]].transpose(0, 1).flatten(1, 2)[:, :n]  # (H_kv, n, d)
                    for table in self.block_tables]
            out.append(torch.stack(rows))
        return out[0], out[1]

    @property
    def keys(self) -> tuple[Tensor, ...]:
        """Per layer, the cached keys ``(B, H_kv, L, head_dim)`` in position order."""
        return tuple(self._gather(layer, self.length)[0] for layer in range(self.n_layers))

    @property
    def values(self) -> tuple[Tensor, ...]:
        """Per layer, the cached values ``(B, H_kv, L, head_dim)`` in position order."""
        return tuple(self._gather(layer, self.length)[1] for layer in range(self.n_layers))
