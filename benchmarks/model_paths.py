"""The model paths, timed: greedy generation with notebook 15's language model (tokens per
second) and one training step of notebook 14's encoder–decoder (milliseconds), on the CPU.

    python benchmarks/model_paths.py                      # this checkout, 5 rounds
    python benchmarks/model_paths.py --against ../old     # side by side with another checkout

With ``--against`` each round runs the measurement once in a fresh process per checkout
(``PYTHONPATH`` set to it), the checkouts taking turns, so that a busy moment of the machine
slows both alike; the table gives the best of the rounds and the ratio new ÷ old. One thread
(``torch.set_num_threads(1)``): small models spend their time in Python and in PyTorch's
per-call overhead, which is what the checks on the model paths add to.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(repeats: int) -> dict[str, float]:
    """Seconds per generated token and per training step, the best of ``repeats``."""
    import torch

    from course_utils import language_model as lm
    from course_utils import layers, measure

    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = lm.LMConfig(vocab_size=40, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2,
                         d_ff=172, max_len=256)
    model = lm.DecoderLM(config).eval()
    prompt = torch.randint(0, 40, (1, 8))
    n_new = 128
    enc_dec = layers.Transformer(layers.TransformerConfig(
        d_model=32, n_heads=2, d_ff=64, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0,
        src_vocab_size=40, tgt_vocab_size=40, tie_embeddings=True, max_len=32))
    optimizer = torch.optim.AdamW(enc_dec.parameters(), lr=1e-3)
    src, tgt = torch.randint(0, 40, (256, 12)), torch.randint(0, 40, (256, 10))
    src_mask = torch.arange(12)[None, :] < torch.randint(4, 13, (256, 1))
    tgt_mask = torch.arange(9)[None, :] < torch.randint(3, 10, (256, 1))

    def generate() -> None:
        with torch.no_grad():
            lm.generate(model, prompt, n_new)

    def train_step() -> None:
        logits = enc_dec(src, tgt[:, :-1], src_mask, tgt_mask)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    best = measure.best_times({"generate": generate, "train_step": train_step}, repeats)
    return {"generate": best["generate"] / n_new, "train_step": best["train_step"]}


def _run(tree: Path, repeats: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, __file__, "--child", "--repeats", str(repeats)],
                         cwd=tree, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="another checkout to time side by side")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.repeats)))
        return
    trees = {"this": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    best: dict[str, dict[str, float]] = {name: {} for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            for key, value in _run(tree, args.repeats).items():
                best[name][key] = min(best[name].get(key, float("inf")), value)
    print(f"{'checkout':<10} {'generate: tokens/s':>20} {'train step: ms':>16}")
    for name in trees:
        gen, step = best[name]["generate"], best[name]["train_step"]
        print(f"{name:<10} {1 / gen:>20.0f} {1000 * step:>16.1f}")
    if args.against:
        new, old = best["this"], best["against"]
        print(f"{'ratio':<10} {old['generate'] / new['generate']:>19.2f}× "
              f"{new['train_step'] / old['train_step']:>15.2f}×  (tokens/s new ÷ old; "
              "step time new ÷ old)")


if __name__ == "__main__":
    main()
