"""Tests for course_utils.data: the digits → number-words task, vocabulary, padded batches."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import data


@pytest.mark.parametrize(
    ("n", "words"),
    [
        (0, "zero"),
        (7, "seven"),
        (15, "fifteen"),
        (20, "twenty"),
        (47, "forty seven"),
        (100, "one hundred"),
        (110, "one hundred ten"),
        (1000, "one thousand"),
        (1007, "one thousand seven"),
        (3047, "three thousand forty seven"),
        (9999, "nine thousand nine hundred ninety nine"),
        (212_019, "two hundred twelve thousand nineteen"),
        (999_999, "nine hundred ninety nine thousand nine hundred ninety nine"),
    ],
)
def test_number_to_words_known_values(n, words):
    assert data.number_to_words(n) == words


def _words_to_number(words: str) -> int:
    """An independent parser (the inverse direction), used to check number_to_words."""
    small = {w: i for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen".split())}
    small.update({w: 10 * i for i, w in enumerate(
        "twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)})
    total = current = 0
    for w in words.split():
        if w == "hundred":
            current *= 100
        elif w == "thousand":
            total, current = total + current * 1000, 0
        else:
            current += small[w]
    return total + current


@settings(max_examples=50, deadline=None)
@given(st.integers(0, data.MAX_NUMBER))
def test_number_to_words_parses_back(n):
    assert _words_to_number(data.number_to_words(n)) == n
    assert data.number_to_digits(n).replace(" ", "") == str(n)


@pytest.mark.parametrize("bad", [-1, 1_000_000])
def test_number_to_words_range(bad):
    with pytest.raises(ValueError, match="n must be in"):
        data.number_to_words(bad)
    with pytest.raises(ValueError, match="n must be in"):
        data.number_to_digits(bad)


def test_number_to_words_type():
    with pytest.raises(TypeError, match="n must be an int"):
        data.number_to_words(3.0)
    with pytest.raises(TypeError, match="n must be an int"):
        data.number_to_words(True)


def test_number_pairs_and_split_are_deterministic():
    pairs = data.number_pairs(1000)
    assert pairs[0] == ("0", "zero") and pairs[305] == ("3 0 5", "three hundred five")
    train, test = data.split_pairs(pairs, 0.1, seed=3)
    train2, test2 = data.split_pairs(pairs, 0.1, seed=3)
    assert (train, test) == (train2, test2)
    assert len(test) == 100 and len(train) == 900
    assert set(train).isdisjoint(test) and sorted(train + test) == sorted(pairs)
    assert data.split_pairs(pairs, 0.1, seed=4)[1] != test


def test_split_bad_input():
    with pytest.raises(ValueError, match="test_fraction must be in"):
        data.split_pairs(data.number_pairs(10), 1.0)
    with pytest.raises(ValueError, match="leaves 0 of 10"):
        data.split_pairs(data.number_pairs(10), 0.01)
    with pytest.raises(ValueError, match="at least 2 pairs"):
        data.split_pairs([("0", "zero")])
    with pytest.raises(ValueError, match="n_numbers must be in"):
        data.number_pairs(0)


def test_vocabulary_ids_and_specials():
    vocab = data.Vocabulary(["b", "a", "b"])
    assert vocab.tokens == ["<pad>", "<bos>", "<eos>", "b", "a"] and len(vocab) == 5
    assert (vocab.pad_id, vocab.bos_id, vocab.eos_id) == (0, 1, 2)
    assert vocab.encode("a b a", add_bos=True, add_eos=True) == [1, 4, 3, 4, 2]
    assert vocab.decode([1, 4, 3, 2, 3, 0]) == "a b"  # stops at <eos>
    assert vocab.decode(torch.tensor([3, 0, 0])) == "b"
    with pytest.raises(ValueError, match="not in the vocabulary"):
        vocab.encode("a c")
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 5\), got 7"):
        vocab.decode([7])
    with pytest.raises(ValueError, match="without spaces"):
        data.Vocabulary(["a b"])
    with pytest.raises(TypeError, match="sentence must be a str"):
        vocab.encode(["a"])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, data.MAX_NUMBER), min_size=1, max_size=5))
def test_round_trip_encode_decode(numbers):
    pairs = [(data.number_to_digits(n), data.number_to_words(n)) for n in numbers]
    vocab = data.Vocabulary.from_sentences(s for pair in pairs for s in pair)
    for source, target in pairs:
        assert vocab.decode(vocab.encode(source, add_bos=True, add_eos=True)) == source
        assert vocab.decode(vocab.encode(target)) == target
    batch = data.make_batch(pairs, vocab)
    for row, (source, target) in enumerate(pairs):
        assert vocab.decode(batch.src[row]) == source
        assert vocab.decode(batch.tgt_in[row]) == target
        assert vocab.decode(batch.tgt_out[row]) == target


def test_pad_sequences_matches_torch():
    seqs = [[5, 6, 7], [8], [9, 10]]
    expected = torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(s) for s in seqs], batch_first=True, padding_value=0
    )
    torch.testing.assert_close(data.pad_sequences(seqs, 0), expected)
    with pytest.raises(ValueError, match="at least one sequence"):
        data.pad_sequences([], 0)


def test_batch_shapes_shift_and_masks():
    pairs = [("4 7", "forty seven"), ("1 5", "fifteen")]
    vocab = data.Vocabulary.from_sentences(s for pair in pairs for s in pair)
    batch = data.make_batch(pairs, vocab)
    assert batch.src.shape == (2, 3) and batch.tgt_in.shape == (2, 3)
    # tgt_out is tgt_in shifted left by one, ending with <eos> instead of starting with <bos>
    assert torch.equal(batch.tgt_in[0, 1:], batch.tgt_out[0, :-1])
    assert batch.tgt_in[1].tolist() == [vocab.bos_id, vocab.index["fifteen"], vocab.pad_id]
    assert batch.tgt_out[1].tolist() == [vocab.index["fifteen"], vocab.eos_id, vocab.pad_id]
    assert batch.tgt_token_mask.tolist() == [[True, True, True], [True, True, False]]
    assert batch.src_token_mask.all()
    assert batch.src.dtype == torch.long


def test_batch_loader_deterministic_and_covers_everything():
    pairs = data.number_pairs(103)
    vocab = data.Vocabulary.from_sentences(s for pair in pairs for s in pair)
    a = data.BatchLoader(pairs, vocab, 10, seed=1)
    b = data.BatchLoader(pairs, vocab, 10, seed=1)
    assert len(a) == 11
    for _ in range(2):  # two epochs: same sequence of batches, a fresh order each epoch
        batches_a, batches_b = list(a), list(b)
        for x, y in zip(batches_a, batches_b, strict=True):
            assert torch.equal(x.src, y.src) and torch.equal(x.tgt_out, y.tgt_out)
        seen = sorted(vocab.decode(row) for x in batches_a for row in x.src)
        assert seen == sorted(s for s, _ in pairs)
    first = [vocab.decode(r) for r in next(iter(data.BatchLoader(pairs, vocab, 10, seed=1))).src]
    second_epoch = [vocab.decode(r) for r in next(iter(a)).src]  # third epoch of a
    assert first != second_epoch
    ordered = next(iter(data.BatchLoader(pairs, vocab, 4, shuffle=False)))
    assert [vocab.decode(r) for r in ordered.tgt_out] == ["zero", "one", "two", "three"]
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        data.BatchLoader(pairs, vocab, 0)


def test_split_uses_numpy_permutation():
    pairs = data.number_pairs(20)
    order = np.random.default_rng(5).permutation(20)
    _, test = data.split_pairs(pairs, 0.25, seed=5)
    assert test == [pairs[i] for i in order[:5]]
