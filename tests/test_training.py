"""Tests for course_utils.training: schedule, loss, progress bar, training loop, decoding."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils import data, layers, training


@pytest.mark.parametrize(("step", "expected"), [
    (1, 512**-0.5 * 4000**-1.5),
    (4000, 512**-0.5 * 4000**-0.5),  # the peak, where both branches meet
    (16000, 512**-0.5 * 16000**-0.5),
])
def test_warmup_lr_formula(step, expected):
    assert math.isclose(training.warmup_lr(step, 512, 4000), expected, rel_tol=1e-12)


def test_warmup_lr_shape():
    lrs = [training.warmup_lr(s, 64, 100, scale=2.0) for s in range(1, 1001)]
    peak = max(range(1000), key=lrs.__getitem__) + 1
    assert peak == 100
    assert all(a < b for a, b in zip(lrs[:99], lrs[1:100], strict=True))  # rises
    assert all(a > b for a, b in zip(lrs[100:-1], lrs[101:], strict=True))  # then decays


def test_warmup_scheduler_drives_a_torch_optimizer():
    w = nn.Parameter(torch.zeros(3))
    opt = torch.optim.AdamW([w], lr=1.0)
    sched = training.warmup_scheduler(opt, 32, 10, scale=0.5)
    seen = []
    for _ in range(30):
        seen.append(opt.param_groups[0]["lr"])  # the lr used by this step
        w.sum().backward()
        opt.step()
        sched.step()
    expected = [training.warmup_lr(s, 32, 10, 0.5) for s in range(1, 31)]
    assert seen == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="lr=1.0"):
        training.warmup_scheduler(torch.optim.SGD([w], lr=0.1), 32, 10)


def test_warmup_lr_bad_input():
    with pytest.raises(ValueError, match="step must be at least 1"):
        training.warmup_lr(0, 512, 4000)
    with pytest.raises(TypeError, match="warmup must be an int"):
        training.warmup_lr(1, 512, 40.0)
    with pytest.raises(ValueError, match="scale must be a finite number > 0, got nan"):
        training.warmup_lr(1, 512, 40, scale=float("nan"))


def test_sequence_loss_ignores_padding():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 6)
    targets = torch.tensor([[3, 1, 2, 0], [5, 2, 0, 0]])  # 0 = <pad>
    log_p = F.log_softmax(logits, dim=-1).gather(-1, targets[..., None])[..., 0]
    real = targets != 0
    expected = -(log_p * real).sum() / real.sum()
    got = training.sequence_loss(logits, targets, pad_id=0)
    torch.testing.assert_close(got, expected)
    changed = logits.clone()
    changed[~real] = 100.0  # whatever the model says at padded positions does not count
    torch.testing.assert_close(training.sequence_loss(changed, targets, 0), expected)
    with pytest.raises(ValueError, match="only padding"):
        training.sequence_loss(logits, torch.zeros(2, 4, dtype=torch.long), 0)
    with pytest.raises(ValueError, match=r"expected logits \(B, T, V\)"):
        training.sequence_loss(logits[0], targets, 0)


def test_the_progress_bar_stores_as_one_short_line_where_outputs_are_stored(capsys,
                                                                            monkeypatch):
    monkeypatch.setenv("COURSE_STORED_OUTPUTS", "1")
    bar = training.progress_bar(300)  # drawn at the start and at the end only
    for _ in range(300):
        bar.set_postfix_str("loss 0.5000", refresh=False)
        bar.update()
    bar.close()
    out, err = capsys.readouterr()
    assert err == "" and out.count("\r") == 2 and out.endswith("\n")
    assert "300/300" in out and "loss 0.5000" in out and len(out.splitlines()[-1]) < 200


class CopyModel(nn.Module):
    """A model whose answer is known: at target position t it predicts source token t."""

    def __init__(self, vocab_size: int, eos_id: int):
        super().__init__()
        self.vocab_size, self.eos_id = vocab_size, eos_id
        self.dummy = nn.Parameter(torch.zeros(1))

    def encode(self, src, src_token_mask):
        return F.one_hot(src, self.vocab_size).float()

    def decode(self, tgt, memory, src_token_mask, tgt_token_mask):
        b, t = tgt.shape
        extra = F.one_hot(torch.full((b, max(0, t - memory.shape[1])), self.eos_id),
                          self.vocab_size).float()
        return torch.cat([memory, extra], dim=1)[:, :t] + 0 * self.dummy


def test_greedy_decode_known_answer():
    vocab = data.Vocabulary("1 2 3".split())
    model = CopyModel(len(vocab), vocab.eos_id)
    src = data.pad_sequences([vocab.encode("1 2 3", add_eos=True),
                              vocab.encode("2", add_eos=True)], vocab.pad_id)
    out = training.greedy_decode(model, src, src != vocab.pad_id, vocab.bos_id, vocab.eos_id,
                                 max_len=10)
    b, e = vocab.bos_id, vocab.eos_id
    one, two, three = (vocab.index[x] for x in "1 2 3".split())
    # stops as soon as every row has produced <eos>; finished rows keep emitting <eos>
    assert out.tolist() == [[b, one, two, three, e], [b, two, e, e, e]]
    short = training.greedy_decode(model, src, src != vocab.pad_id, b, e, max_len=2)
    assert short.tolist() == [[b, one, two], [b, two, e]]
    assert training.translate(model, ["3 1", "2 2 2"], vocab) == ["3 1", "2 2 2"]
    pairs = [("1 2", "1 2"), ("3", "3"), ("2 1", "1 2"), ("3 3", "3")]
    assert training.exact_match(model, pairs, vocab, batch_size=3) == 0.5
    with pytest.raises(ValueError, match="max_len must be at least 1"):
        training.greedy_decode(model, src, src != 0, b, e, max_len=0)


def test_greedy_decode_agrees_with_teacher_forcing():
    torch.manual_seed(0)
    model = layers.Transformer(layers.TransformerConfig(
        d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0,
        src_vocab_size=9, tgt_vocab_size=9, max_len=16))
    src = torch.randint(3, 9, (4, 5))
    mask = torch.ones(4, 5, dtype=torch.bool)
    out = training.greedy_decode(model, src, mask, bos_id=1, eos_id=2, max_len=6)
    logits = model(src, out[:, :-1], mask)
    for row in range(4):  # each greedy token is the argmax of the teacher-forced logits
        n = out.shape[1] - 1
        if (out[row, 1:] == 2).any():
            n = int((out[row, 1:] == 2).nonzero()[0]) + 1  # up to and including <eos>
        assert torch.equal(out[row, 1 : n + 1], logits[row, :n].argmax(-1))


def test_short_training_run_lowers_the_loss(capsys, monkeypatch):
    monkeypatch.setenv("COURSE_STORED_OUTPUTS", "1")  # the bar in plain text on stdout
    torch.manual_seed(0)
    pairs = data.number_pairs(100)
    vocab = data.Vocabulary.from_sentences(s for pair in pairs for s in pair)
    model = layers.Transformer(layers.TransformerConfig(
        d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0,
        src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), tie_embeddings=True,
        max_len=16))
    opt = torch.optim.AdamW(model.parameters(), lr=1.0)
    sched = training.warmup_scheduler(opt, 16, 10)
    losses = training.train(model, data.BatchLoader(pairs, vocab, 25), opt, 40,
                            scheduler=sched)
    assert len(losses) == 40 and not model.training
    assert sum(losses[-5:]) / 5 < 0.6 * sum(losses[:5]) / 5
    out, err = capsys.readouterr()
    assert "40/40" in out and err == ""
    assert all(math.isfinite(x) for x in losses)
    with pytest.raises(ValueError, match="n_steps must be at least 1, got 0"):
        training.train(model, [], opt, 0)
    with pytest.raises(ValueError, match="batches must yield at least one batch"):
        training.train(model, [], opt, 1, progress=False)
