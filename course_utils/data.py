"""A toy translation task built in code: digit strings into English number words.

``"3 0 4 7"`` → ``"three thousand forty seven"``. The task is small enough to learn on a CPU in
about a minute, yet the decoder must find, for every word it writes, the digit it comes from:
zeros produce no word, ``"1 5"`` becomes the single word ``"fifteen"``, and ``"thousand"`` and
``"hundred"`` depend on *where* a digit stands. That alignment is what cross-attention learns.

Pieces: :func:`number_to_words` (the "ground-truth translator"), :func:`number_pairs` (the
dataset), :func:`split_pairs` (a seeded train/test split), :class:`Vocabulary` (tokens ↔ ids,
with ``<pad>``, ``<bos>``, ``<eos>``), :func:`pad_sequences` and :class:`BatchLoader` (padded,
shuffled, deterministic batches for teacher forcing).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from course_utils.validation import check_bool, check_int, check_real

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
SPECIAL_TOKENS = (PAD, BOS, EOS)

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
MAX_NUMBER = 999_999


def _below_thousand(n: int) -> list[str]:
    """Words for 1 ≤ n ≤ 999 (no "and", no hyphens: "three hundred forty seven")."""
    words: list[str] = []
    hundreds, rest = divmod(n, 100)
    if hundreds:
        words += [_ONES[hundreds], "hundred"]
    if rest >= 20:
        tens, ones = divmod(rest, 10)
        words.append(_TENS[tens])
        if ones:
            words.append(_ONES[ones])
    elif rest:
        words.append(_ONES[rest])
    return words


def number_to_words(n: int) -> str:
    """English words for an integer 0 ≤ n ≤ 999,999, one space between words.

    ``number_to_words(3047) == "three thousand forty seven"``; ``0`` is ``"zero"``. No "and" and
    no hyphens, so every word is one token. Raises ``TypeError`` for a non-integer and
    ``ValueError`` outside the range.
    """
    n = check_int(n, "n", minimum=0, maximum=MAX_NUMBER)
    if n == 0:
        return "zero"
    thousands, rest = divmod(n, 1000)
    words = (_below_thousand(thousands) + ["thousand"]) if thousands else []
    if rest:
        words += _below_thousand(rest)
    return " ".join(words)


def number_to_digits(n: int) -> str:
    """The source sentence: the decimal digits of ``n`` separated by spaces (``47`` → ``"4 7"``)."""
    return " ".join(str(check_int(n, "n", minimum=0, maximum=MAX_NUMBER)))


def number_pairs(n_numbers: int = 10_000) -> list[tuple[str, str]]:
    """The whole dataset: ``(digits, words)`` for every n in ``0 … n_numbers − 1``, in order.

    ``number_pairs(3)[2] == ("2", "two")``. ``n_numbers`` must be in [1, 1,000,000].
    """
    n_numbers = check_int(n_numbers, "n_numbers", minimum=1, maximum=MAX_NUMBER + 1)
    return [(number_to_digits(n), number_to_words(n)) for n in range(n_numbers)]


def check_pairs(pairs: object, name: str = "pairs") -> list[tuple[str, str]]:
    """``pairs`` as a non-empty list of ``(source, target)`` str pairs (given as a list or tuple,
    not an array); ``TypeError``/``ValueError`` naming ``name`` otherwise."""
    if not isinstance(pairs, (list, tuple)):
        raise TypeError(f"{name} must be a list of (source, target) str pairs, got "
                        f"{type(pairs).__name__}")
    for pair in pairs:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2
                and all(isinstance(s, str) for s in pair)):
            raise TypeError(f"{name} must hold (source, target) str pairs, got {pair!r:.60}")
    if not pairs:
        raise ValueError(f"{name} must hold at least one pair")
    return [tuple(pair) for pair in pairs]


def split_pairs(
    pairs: Sequence[tuple[str, str]], test_fraction: float = 0.1, seed: int = 0
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Shuffle ``pairs`` with ``np.random.default_rng(seed)`` and cut off a held-out test set.

    Returns ``(train, test)`` with ``len(test) == round(test_fraction · len(pairs))``; the two
    are disjoint and together hold every pair once. Same seed, same split.
    """
    pairs = check_pairs(pairs)
    if len(pairs) < 2:
        raise ValueError(f"pairs must hold at least 2 pairs to split, got {len(pairs)}")
    test_fraction = check_real(test_fraction, "test_fraction", low=0, high=1, low_open=True,
                               high_open=True)
    seed = check_int(seed, "seed", minimum=0)
    n_test = round(test_fraction * len(pairs))
    if not 1 <= n_test < len(pairs):
        raise ValueError(
            f"test_fraction={test_fraction} leaves {n_test} of {len(pairs)} pairs for the test set"
        )
    order = np.random.default_rng(seed).permutation(len(pairs))
    shuffled = [pairs[i] for i in order]
    return shuffled[n_test:], shuffled[:n_test]


class Vocabulary:
    """Tokens ↔ integer ids. Ids 0, 1, 2 are ``<pad>``, ``<bos>``, ``<eos>``; the rest follow
    in the order given (duplicates are dropped, first occurrence wins).

    >>> vocab = Vocabulary(["4", "7", "forty", "seven"])
    >>> vocab.encode("4 7", add_bos=True, add_eos=True)
    [1, 3, 4, 2]
    >>> vocab.decode([1, 5, 6, 2, 0])
    'forty seven'
    """

    def __init__(self, tokens: Iterable[str]) -> None:
        if isinstance(tokens, str) or not isinstance(tokens, Iterable):
            raise TypeError(f"tokens must be an iterable of str, got {type(tokens).__name__}")
        self.tokens: list[str] = list(SPECIAL_TOKENS)
        for token in tokens:
            if not isinstance(token, str):
                raise TypeError(f"tokens must be str, got {type(token).__name__}")
            if not token or " " in token:
                raise ValueError(f"tokens must be non-empty strings without spaces, got {token!r}")
            if token not in self.tokens:
                self.tokens.append(token)
        self.index = {token: i for i, token in enumerate(self.tokens)}
        self.pad_id, self.bos_id, self.eos_id = (self.index[t] for t in SPECIAL_TOKENS)

    @classmethod
    def from_sentences(cls, sentences: Iterable[str]) -> Vocabulary:
        """The vocabulary of every space-separated token in ``sentences``, sorted."""
        if isinstance(sentences, str) or not isinstance(sentences, Iterable):
            raise TypeError(f"sentences must be an iterable of str, got {type(sentences).__name__}")
        sentences = list(sentences)
        if not all(isinstance(s, str) for s in sentences):
            raise TypeError("sentences must be an iterable of str")
        return cls(sorted({token for sentence in sentences for token in sentence.split()}))

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, sentence: str, *, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Split on spaces and map each token to its id (``ValueError`` for an unknown token)."""
        if not isinstance(sentence, str):
            raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
        unknown = [token for token in sentence.split() if token not in self.index]
        if unknown:
            raise ValueError(f"sentence holds tokens not in the vocabulary: {unknown[:5]}")
        ids = [self.index[token] for token in sentence.split()]
        return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos

    def decode(self, ids: Iterable[int] | torch.Tensor) -> str:
        """Ids back to a sentence: skip ``<bos>``/``<pad>``, stop at the first ``<eos>``."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        if isinstance(ids, str) or not isinstance(ids, Iterable):
            raise TypeError(f"ids must be an iterable of int, got {type(ids).__name__}")
        words = []
        for i in ids:
            i = check_int(i, "ids", minimum=None)
            if not 0 <= i < len(self.tokens):
                raise ValueError(f"ids must lie in [0, {len(self.tokens)}), got {i}")
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                words.append(self.tokens[i])
        return " ".join(words)


def pad_sequences(sequences: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """Stack sequences of different lengths into a (B, L_max) ``int64`` tensor, padding on the
    right with ``pad_id``. The padding mask of the course (True = real token) is
    ``padded != pad_id`` provided ``pad_id`` never occurs inside a sequence."""
    if not isinstance(sequences, (list, tuple)) or not all(
            isinstance(s, (Sequence, np.ndarray)) and not isinstance(s, str) for s in sequences):
        raise TypeError(f"sequences must be a list of lists of int, got {type(sequences).__name__}")
    if len(sequences) == 0:
        raise ValueError("sequences must hold at least one sequence")
    for seq in sequences:
        for i in seq:
            check_int(i, "sequences", minimum=None)
    longest = max(len(s) for s in sequences)
    if longest == 0:
        raise ValueError("sequences must not all be empty")
    return _pad(sequences, check_int(pad_id, "pad_id", minimum=None))


def _pad(sequences: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    longest = max(len(s) for s in sequences)
    return torch.tensor([[*seq] + [pad_id] * (longest - len(seq)) for seq in sequences],
                        dtype=torch.long)


@dataclass(frozen=True)
class Batch:
    """One padded batch for teacher forcing.

    ``src`` (B, S): source ids + ``<eos>``. ``tgt_in`` (B, T): ``<bos>`` + target ids — what the
    decoder reads. ``tgt_out`` (B, T): target ids + ``<eos>`` — what it must predict at each
    position (``tgt_in`` shifted left by one). All right-padded with ``pad_id``.
    """

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    pad_id: int

    @property
    def src_token_mask(self) -> torch.Tensor:
        """(B, S) bool, True = real token."""
        return self.src != self.pad_id

    @property
    def tgt_token_mask(self) -> torch.Tensor:
        """(B, T) bool, True = real token."""
        return self.tgt_in != self.pad_id


def make_batch(pairs: Sequence[tuple[str, str]], vocab: Vocabulary) -> Batch:
    """Encode and pad a list of ``(source, target)`` sentences into one :class:`Batch`."""
    pairs = check_pairs(pairs)
    _check_vocab(vocab)
    return _make_batch(pairs, vocab)


def _check_vocab(vocab: object) -> None:
    if not isinstance(vocab, Vocabulary):
        raise TypeError(f"vocab must be a Vocabulary, got {type(vocab).__name__}")


def _make_batch(pairs: list[tuple[str, str]], vocab: Vocabulary) -> Batch:
    src = [vocab.encode(s, add_eos=True) for s, _ in pairs]
    tgt = [vocab.encode(t) for _, t in pairs]
    return Batch(
        src=_pad(src, vocab.pad_id),
        tgt_in=_pad([[vocab.bos_id, *t] for t in tgt], vocab.pad_id),
        tgt_out=_pad([[*t, vocab.eos_id] for t in tgt], vocab.pad_id),
        pad_id=vocab.pad_id,
    )


class BatchLoader:
    """Iterate over ``pairs`` in padded batches of ``batch_size`` (the last one may be smaller).

    With ``shuffle=True`` each pass (epoch) uses a new order drawn from
    ``np.random.default_rng(seed)``, so two loaders built alike yield identical batches.
    """

    def __init__(
        self,
        pairs: Sequence[tuple[str, str]],
        vocab: Vocabulary,
        batch_size: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
    ) -> None:
        _check_vocab(vocab)
        self.pairs, self.vocab = check_pairs(pairs), vocab
        self.batch_size = check_int(batch_size, "batch_size")
        self.shuffle = check_bool(shuffle, "shuffle")
        self._rng = np.random.default_rng(check_int(seed, "seed", minimum=0))

    def __len__(self) -> int:
        return -(-len(self.pairs) // self.batch_size)

    def __iter__(self) -> Iterator[Batch]:
        n = len(self.pairs)
        order = self._rng.permutation(n) if self.shuffle else np.arange(n)
        for start in range(0, n, self.batch_size):
            chunk = [self.pairs[i] for i in order[start : start + self.batch_size]]
            yield _make_batch(chunk, self.vocab)
