"""Does bf16 autocast cost quality? The same pretraining twice, fp32 and bf16, compared step by step.

bert-mini, masked LM on wiki-leads + news (WordPiece 8,192), the same seed, data order and masks; only
``train.bf16`` differs. Reports the train loss of both (mean over windows of 20 steps), the largest gap
between the two windowed curves, and the validation loss at the end; writes a plot. Prints a Markdown table
and one JSON line.

    python benchmarks/bf16_convergence.py --steps 300 --out runs/bf16_check
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from warmstart.commands.pretrain import pretrain
from warmstart.data.corpus import corpus_texts, prepare_corpus
from warmstart.data.dataset import DataOptions
from warmstart.report.plots import line_plot
from warmstart.tokenization.train import train_tokenizer

CORPORA = ["wiki-leads", "news"]
WINDOW = 20


def records(run: Path, split: str) -> list[dict]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if r["split"] == split]


def windowed(rows: list[dict]) -> tuple[list[int], list[float]]:
    """Mean train loss over consecutive windows of WINDOW logged steps."""
    steps, means = [], []
    for i in range(0, len(rows) - WINDOW + 1, WINDOW):
        chunk = rows[i : i + WINDOW]
        steps.append(chunk[-1]["step"])
        means.append(statistics.fmean(r["loss"] for r in chunk))
    return steps, means


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--out", default="runs/bf16_check")
    a = p.parse_args()
    out = Path(a.out)
    opts = DataOptions(label_column=None)
    tok = train_tokenizer(
        corpus_texts(CORPORA, opts, "train"), "wordpiece", 8192, out / "tokenizer", overwrite=True
    )
    prepare_corpus(CORPORA, opts, tok, out / "shards", overwrite=True, splits=("train", "validation"))
    runs = {}
    for precision in ("fp32", "bf16"):
        runs[precision] = out / precision
        flags = {
            "out": str(runs[precision]),
            "train": {"steps": a.steps},
            "data": {"shards": str(out / "shards")},
        }
        overrides = [
            f"train.bf16={'true' if precision == 'bf16' else 'false'}",
            f"train.batch_size={a.batch}",
            f"data.seq_len={a.seq}",
            "train.log_every=1",
            f"train.eval_every={a.steps}",
            "train.eval_batches=20",
            "train.progress=false",
        ]
        pretrain("bert-mini", None, flags, overrides, overwrite=True)
    curves = {k: windowed(records(run, "train")) for k, run in runs.items()}
    gaps = [abs(x - y) for x, y in zip(curves["fp32"][1], curves["bf16"][1], strict=True)]
    final = {k: records(run, "validation")[-1]["loss"] for k, run in runs.items()}
    plot = line_plot(
        {f"{k} (train, mean of {WINDOW} steps)": v for k, v in curves.items()},
        "bf16 autocast vs fp32: bert-mini masked LM",
        "step",
        "loss",
        out / "bf16_vs_fp32.png",
    )
    print("\n| step | fp32 loss | bf16 loss | gap |\n|---:|---:|---:|---:|")
    for s, x, y in zip(curves["fp32"][0], curves["fp32"][1], curves["bf16"][1], strict=True):
        print(f"| {s} | {x:.4f} | {y:.4f} | {abs(x - y):.4f} |")
    print(f"\nvalidation loss at step {a.steps}: fp32 {final['fp32']:.4f}, bf16 {final['bf16']:.4f}")
    print(f"largest windowed gap {max(gaps):.4f}; plot: {plot}")
    summary = {
        "benchmark": "bf16_convergence",
        "steps": a.steps,
        "max_windowed_gap": round(max(gaps), 4),
        "validation_loss": {k: round(v, 4) for k, v in final.items()},
        "relative_validation_gap": round(abs(final["bf16"] - final["fp32"]) / final["fp32"], 4),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
