"""Notebook 13's checkers: right answers pass, plausible mistakes fail with a reason."""

import functools
import math

import numpy as np
import pytest
import torch
from checker_table import right, table_test, wrong
from torch.utils.flop_counter import FlopCounterMode

from course_utils import attention, layers
from course_utils.checks import nb13


def decoder_masks(tgt_mask, src_mask, key_padding="keys", upper=False, causal_cross=False,
                  expand=True):
    b, t = tgt_mask.shape
    s = src_mask.shape[1]
    i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
    causal = j >= i if upper else j <= i
    if key_padding == "keys":
        self_mask = causal & tgt_mask[:, None, :]
    elif key_padding == "queries":  # the padding mask laid along the rows instead
        self_mask = causal & tgt_mask[:, :, None]
    else:
        self_mask = causal.expand(b, t, t)
    cross_mask = src_mask[:, None, :]
    if causal_cross:
        cross_mask = cross_mask & attention.causal_mask(t, s)
    return self_mask, cross_mask.expand(b, t, s) if expand else cross_mask


def decoder_masks_by_loops(tgt_mask, src_mask):
    (b, t), s = tgt_mask.shape, src_mask.shape[1]
    self_mask = torch.zeros(b, t, t, dtype=torch.bool)
    cross_mask = torch.zeros(b, t, s, dtype=torch.bool)
    for n in range(b):
        for i in range(t):
            for j in range(t):
                self_mask[n, i, j] = j <= i and bool(tgt_mask[n, j])
            cross_mask[n, i] = src_mask[n]
    return self_mask, cross_mask


def causal_mask(n):  # the learner's own helper, under the course function's name
    return torch.ones(n, n, dtype=torch.bool).tril()


def decoder_masks_by_own_causal_mask(tgt_mask, src_mask):
    (b, t), s = tgt_mask.shape, src_mask.shape[1]
    return causal_mask(t) & tgt_mask[:, None, :], src_mask[:, None, :].expand(b, t, s)


def given_decoder_masks(tgt_mask, src_mask, diagonal=1, padding_axis="queries"):
    # the notebook's buggy function, and its half-fixed versions
    (b, t), s = tgt_mask.shape, src_mask.shape[1]
    causal = torch.ones(t, t, dtype=torch.bool).tril(diagonal=diagonal)
    padding = tgt_mask[:, :, None] if padding_axis == "queries" else tgt_mask[:, None, :]
    return causal & padding, src_mask[:, None, :].expand(b, t, s)


def parameters(d, d_ff=None, attentions_per_decoder_layer=2, embeddings=1, biases=True,
               ffn_matrices=2, vocab=37_000):
    """Section 6's count of the 6 + 6 layer model at width d (d_ff = 4d unless given)."""
    d_ff = 4 * d if d_ff is None else d_ff
    attn = 4 * d * d + (4 * d if biases else 0)
    ffn = ffn_matrices * d * d_ff + (d_ff + d if biases else 0)
    norm = 2 * d if biases else 0
    layers_ = 6 * (attn + ffn + 2 * norm) + 6 * (attentions_per_decoder_layer * attn + ffn
                                                  + 3 * norm)
    return layers_ + embeddings * vocab * d


def width_for_tenth(**kw):
    """The d at which the embedding is 10% of parameters(d, **kw), by bisection."""
    of_layers = kw.pop("of_layers", False)
    embeddings = kw.get("embeddings", 1)

    def share(d):
        embedding = embeddings * 37_000 * d
        total = parameters(d, **kw) - (embedding if of_layers else 0)
        return embedding / total

    low, high = 1.0, 1e6
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if share(middle) > 0.1 else (low, middle)
    return low


def rnn_jacobian(s0, xs, w_h, w_x, transpose=False, state="new", order="forward", rows=False):
    s, factors = s0, []
    for x_t in xs:
        pre = s @ w_h + x_t @ w_x
        new = np.tanh(pre)
        slope = 1 - {"new": new, "old": s, "pre": pre}[state] ** 2  # tanh'(a) = 1 - tanh(a)^2
        factors.append(w_h * (slope[:, None] if rows else slope[None, :]))  # W_h diag(1 - s_t^2)
        s = new
    m = np.eye(len(s0))
    for factor in factors if order == "forward" else factors[::-1]:
        m = m @ factor
    return m.T if transpose else m


def rnn_jacobian_by_stack(s0, xs, w_h, w_x):
    states = [s0]
    for x_t in xs:
        states.append(np.tanh(states[-1] @ w_h + x_t @ w_x))
    slopes = 1 - np.stack(states[1:]) ** 2 if len(xs) else []  # (N, d): one row per step
    return functools.reduce(np.matmul, [w_h * c[None, :] for c in slopes], np.eye(len(s0)))


def rnn_jacobian_by_perturbation(s0, xs, w_h, w_x, h=1e-6):
    def run(s):
        for x_t in xs:
            s = np.tanh(s @ w_h + x_t @ w_x)
        return s

    rows = [(run(s0 + h * e) - run(s0 - h * e)) / (2 * h) for e in np.eye(len(s0))]
    return np.array(rows)  # row i: how s_N moves when s_0[i] moves


def rnn_jacobian_by_complex_step(s0, xs, w_h, w_x, h=1e-30):
    """The complex-step derivative, Im s_N(s_0 + i h e_i) / h: exact to rounding, no chain rule."""
    def run(s):
        for x_t in xs:
            s = np.tanh(s @ w_h + x_t @ w_x)
        return s

    return np.array([run(s0 + 1j * h * e).imag / h for e in np.eye(len(s0))]) if len(xs) else (
        np.eye(len(s0)))


def rnn_jacobian_by_autograd(s0, xs, w_h, w_x):
    w_h, w_x, xs = (torch.from_numpy(a) for a in (w_h, w_x, xs))

    def run(s):
        for x_t in xs:
            s = torch.tanh(s @ w_h + x_t @ w_x)
        return s

    return torch.autograd.functional.jacobian(run, torch.from_numpy(s0)).numpy().T


def decoder_layer_flops(t, s, d, d_ff, kv_length=None, cross=True, ffn_matrices=2,
                        projections=True, cross_output=True, per_multiply_add=2):
    kv = s if kv_length is None else kv_length(t, s)
    flops = (8 * t * d * d if projections else 0) + 4 * t * t * d
    if cross:
        if projections:
            flops += 2 * t * d * d + (2 * t * d * d if cross_output else 0) + 4 * kv * d * d
        flops += 4 * t * kv * d
    flops += 2 * ffn_matrices * t * d * d_ff
    return flops * per_multiply_add // 2


def decoder_layer_flops_counted(t, s, d, d_ff):
    config = layers.TransformerConfig(d_model=d, n_heads=1, d_ff=d_ff)
    layer = layers.DecoderLayer(config).to("meta").eval()  # shapes only, no numbers
    x, memory = torch.zeros(1, t, d, device="meta"), torch.zeros(1, s, d, device="meta")
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        layer(x, memory)
    return counter.get_total_flops()


def decoder_layer_flops_counted_inside(t, s, d, d_ff):
    import torch.utils.flop_counter as flop_counter  # the class reached through its module

    config = layers.TransformerConfig(d_model=d, n_heads=1, d_ff=d_ff)
    layer = layers.DecoderLayer(config).to("meta").eval()
    x, memory = torch.zeros(1, t, d, device="meta"), torch.zeros(1, s, d, device="meta")
    counter = flop_counter.FlopCounterMode(display=False)
    with counter, torch.no_grad():
        layer(x, memory)
    return counter.get_total_flops()


ROWS = [
    *right(nb13.check_decoder_masks, worked=decoder_masks, loops=decoder_masks_by_loops,
           own_causal_mask=decoder_masks_by_own_causal_mask,
           given_fixed=lambda t, s: given_decoder_masks(t, s, diagonal=0, padding_axis="keys")),
    *wrong(
        nb13.check_decoder_masks,
        as_given=(given_decoder_masks, "still the bug: these are the given function's masks"),
        diagonal_fixed_only=(lambda t, s: given_decoder_masks(t, s, diagonal=0),
                             "self_mask blanks the whole row of a padded query: only keys are "
                             "masked"),
        padding_fixed_only=(lambda t, s: given_decoder_masks(t, s, padding_axis="keys"),
                            "self_mask lets query i read key i + 1, the token it has to predict"),
        causal_cross_top_left=(lambda t, s: (decoder_masks(t, s)[0], decoder_masks(t, s)[1]
                                             & torch.ones(t.shape[1], s.shape[1],
                                                          dtype=torch.bool).tril()),
                               "N_tgt = 1: cross_mask is causal (a lower triangle)"),
        causal_cross=(lambda t, s: decoder_masks(t, s, causal_cross=True),
                      "N_tgt = N_src = 4, no padding: cross-attention is not causal: "
                      "cross_mask is causal"),
        no_target_padding=(lambda t, s: decoder_masks(t, s, key_padding=None),
                           "self_mask lets queries read padded target keys (the last axis)"),
        no_source_padding=(lambda t, s: (decoder_masks(t, s)[0],
                                         torch.ones(t.shape[0], t.shape[1], s.shape[1],
                                                    dtype=torch.bool)),
                           "cross_mask lets target positions read padded source keys"),
        padded_queries=(lambda t, s: decoder_masks(t, s, key_padding="queries"),
                        "self_mask blanks the whole row of a padded query"),
        queries_and_keys=(lambda t, s: (decoder_masks(t, s)[0] & t[:, :, None],
                                        decoder_masks(t, s)[1]),
                          "self_mask blanks the whole row of a padded query"),
        upper_triangle=(lambda t, s: decoder_masks(t, s, upper=True),
                        "self_mask lets query i read keys j > i (the upper triangle)"),
        broadcast_only=(lambda t, s: decoder_masks(t, s, expand=False),
                        "cross_mask: shape: expected (2, 3, 5), got (2, 1, 5)"),
        pytorch_convention=(lambda t, s: tuple(~m for m in decoder_masks(t, s)),
                            "both masks are inverted"),
        swapped=(lambda t, s: decoder_masks(t, s)[::-1],
                 "self_mask: shape: expected (2, 3, 3), got (2, 3, 5)"),
        integers=(lambda t, s: tuple(m.long() for m in decoder_masks(t, s)),
                  "self_mask: dtype: expected torch.bool, got torch.int64"),
    ),
    *right(nb13.check_embedding_share_width, worked=(9 * 37_000 - 192) / 168,
           bisected=width_for_tenth(), no_biases=width_for_tenth(biases=False),
           rounded=1980),
    *wrong(
        nb13.check_embedding_share_width,
        one_attention_per_decoder_layer=(width_for_tenth(attentions_per_decoder_layer=1),
                                         "a decoder layer has two attentions"),
        no_feed_forward=(width_for_tenth(ffn_matrices=0), "the feed-forward networks are "
                         "missing"),
        one_ffn_matrix=(width_for_tenth(ffn_matrices=1), "each feed-forward network has two"),
        three_embeddings=(width_for_tenth(embeddings=3), "the vocabulary is shared"),
        of_the_layers=(width_for_tenth(of_layers=True), "10% of the layers alone"),
        fixed_d_ff=(width_for_tenth(d_ff=2048), "that keeps d_ff = 2048"),
        like_one_over_d=(1536, "the share does not fall like 1/d"),
        big_model=(1024, "is too low: write section 6's total as a function of d alone"),
        a_string=("1981", "expected a number, got str"),
    ),
    *right(nb13.check_rnn_jacobian, worked=rnn_jacobian, stacked=rnn_jacobian_by_stack,
           autograd=rnn_jacobian_by_autograd,
           complex_step=rnn_jacobian_by_complex_step),
    *wrong(
        nb13.check_rnn_jacobian,
        perturbation=(rnn_jacobian_by_perturbation, "to rounding: close (within 1e-4), but not "
                      "to rounding: an estimate such as a finite difference is not accurate "
                      "enough"),
        column_convention=(lambda *args: rnn_jacobian(*args, transpose=True),
                           "five steps, d = 4: this is the transpose"),
        previous_state=(lambda *args: rnn_jacobian(*args, state="old"),
                        "one step, d = 3: the tanh slope is taken at the previous state"),
        pre_activation=(lambda *args: rnn_jacobian(*args, state="pre"),
                        "one step, d = 3: the tanh slope is 1 − a² of the pre-activation"),
        backward_order=(lambda *args: rnn_jacobian(*args, order="backward"),
                        "five steps, d = 4: the one-step matrices are in the reverse order"),
        rows_scaled=(lambda *args: rnn_jacobian(*args, rows=True),
                     "one step, d = 3: the slopes scale the rows of W_s"),
        no_tanh_slope=(lambda s0, xs, w_h, w_x: np.linalg.matrix_power(w_h, len(xs)),
                       "a large W_s: tanh saturates: the tanh slope is missing"),
    ),
    *right(nb13.check_decoder_layer_flops, worked=decoder_layer_flops,
           counted=decoder_layer_flops_counted,
           counted_imported_inside=decoder_layer_flops_counted_inside),
    *wrong(
        nb13.check_decoder_layer_flops,
        q_from_source=(lambda t, s, d, d_ff: decoder_layer_flops(t, s, d, d_ff)
                       + 2 * (s - t) * d * d,
                       "N_tgt = 4, N_src = 6, d = 8, d_ff = 32: 9,984: cross-attention's Q is "
                       "projected from the N_tgt target rows"),
        keys_from_target=(lambda *args: decoder_layer_flops(*args, kv_length=lambda t, s: t),
                          "N_tgt = 20 != N_src = 35: keys and values come from the source: "
                          "cross-attention reads the N_src source positions"),
        kv_projections_from_target=(lambda t, s, d, d_ff: decoder_layer_flops(t, s, d, d_ff)
                                    - 4 * (s - t) * d * d,
                                    "N_tgt = 20 != N_src = 35: keys and values come from the "
                                    "source: "
                                    "cross-attention's K and V are projected from the N_src "
                                    "source rows"),
        causal_saving=(lambda t, s, d, d_ff: decoder_layer_flops(t, s, d, d_ff) - 2 * t * t * d,
                       "9,984: the causal mask saves nothing"),
        no_cross_attention=(lambda *args: decoder_layer_flops(*args, cross=False),
                            "N_tgt = 4, N_src = 6, d = 8, d_ff = 32: 9,984: cross-attention is "
                            "missing"),
        one_ffn_product=(lambda *args: decoder_layer_flops(*args, ffn_matrices=1),
                         "9,984: the feed-forward network has two products"),
        mixing_only=(lambda *args: decoder_layer_flops(*args, projections=False, ffn_matrices=0),
                     "expected 9984, got 1280"),
        no_cross_output=(lambda *args: decoder_layer_flops(*args, cross_output=False),
                         "9,984: cross-attention's W^O is missing, or its K and V are projected "
                         "from the N_tgt target rows"),
        no_cross_output_named=(lambda *args: decoder_layer_flops(*args, cross_output=False),
                               "N_tgt = N_src = 32: cross-attention's W^O is missing"),
        multiply_adds=(lambda *args: decoder_layer_flops(*args, per_multiply_add=1),
                       "9,984: that counts multiply-adds"),
        math_pow=(lambda t, s, d, d_ff: 12 * t * math.pow(d, 2) + decoder_layer_flops(t, s, d, d_ff)
                  - 12 * t * d * d,
                  "expected an integer, got float 9984.0"),
    ),
]

test_checker = table_test(ROWS)


@pytest.mark.parametrize("checker, answer, called", [
    (nb13.check_rnn_jacobian, rnn_jacobian_by_autograd, "jacobian"),
    (nb13.check_rnn_jacobian, rnn_jacobian, None),
    (nb13.check_decoder_layer_flops, decoder_layer_flops_counted, "FlopCounterMode"),
    (nb13.check_decoder_layer_flops, decoder_layer_flops_counted_inside, "FlopCounterMode"),
    (nb13.check_decoder_layer_flops, decoder_layer_flops, None),
])
def test_a_library_shortcut_passes_with_a_note(checker, answer, called, capsys):
    result = checker(answer)
    assert result.passed
    assert result.note == (called and f"passes; it calls {called}, and the exercise is to write "
                                      "that step yourself")
