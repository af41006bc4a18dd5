"""Continued pretraining (Gururangan et al., 2020): does more MLM on the task's own text help finetuning?

Usage:

    .venv/bin/python examples/continued_pretraining_study.py --out runs/continued --seeds 1,2,3

1. A WordPiece tokenizer and BERT-Mini pretrained by MLM on `news` (the general model).
2. TAPT: the same model continued by MLM on the text column of rotten-tomatoes' training split
   (`warmstart pretrain --init RUN --corpus rotten-tomatoes`: labels are never read, test text never seen).
3. Both finetuned on rotten-tomatoes over the seeds; OUT/study.md compares them, with the TAPT run's
   MLM loss on rotten-tomatoes' validation text before and after continuing.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from warmstart.commands.finetune import finetune
from warmstart.commands.pretrain import pretrain
from warmstart.data.corpus import corpus_texts, prepare_corpus
from warmstart.data.dataset import DataOptions
from warmstart.tokenization.train import train_tokenizer
from warmstart.train.logging import read_metrics

COMMON = ["data.seq_len=128", "train.batch_size=32", "train.bf16=true", "train.eval_batches=20"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default="news", help="general pretraining corpus")
    p.add_argument(
        "--dataset", default="rotten-tomatoes", help="task: its text for TAPT, its labels to finetune"
    )
    p.add_argument("--steps", type=int, default=1600, help="general MLM steps")
    p.add_argument("--tapt-steps", type=int, default=600, help="continued MLM steps on the task's text")
    p.add_argument("--seeds", default="1,2,3", help="finetuning seeds")
    p.add_argument("--epochs", type=float, default=3, help="finetuning epochs")
    p.add_argument("--lr", type=float, default=3e-4, help="finetuning peak learning rate")
    p.add_argument("--out", default="runs/continued", help="output directory")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    opts = DataOptions(label_column=None)
    if not (out / "shards" / "meta.json").is_file():
        tok = train_tokenizer(corpus_texts([a.corpus], opts, "train"), "wordpiece", 8192, out / "tokenizer")
        prepare_corpus([a.corpus], opts, tok, out / "shards", splits=("train", "validation"), overwrite=True)
    general, tapt = out / "general", out / "tapt"
    if not (general / "final").is_dir():
        flags = {"out": str(general), "data": {"shards": str(out / "shards")}, "train": {"steps": a.steps}}
        pretrain("bert-mini", None, flags, COMMON + ["train.eval_every=400"], overwrite=True)
    if not (tapt / "final").is_dir():
        flags = {"out": str(tapt), "init": str(general), "data": {"corpus": [a.dataset]}}
        flags["train"] = {"steps": a.tapt_steps, "lr": 5e-4}
        pretrain(None, None, flags, COMMON + ["train.eval_every=100"], overwrite=True)
    val = read_metrics(tapt, "validation")
    results = {}
    for name, init in [("general (no continuation)", general), ("general + TAPT", tapt)]:
        flags = {
            "init": str(init),
            "out": str(out / ("finetune-" + init.name)),
            "epochs": a.epochs,
            "seeds": a.seeds,
            "data": {"dataset": a.dataset},
            "task": {"max_length": 64},
            "train": {"lr": a.lr, "batch_size": 32, "bf16": True},
        }
        runs = finetune(None, flags, [], overwrite=True)["runs"]
        results[name] = [r["test_metrics"]["test"]["accuracy"] for r in runs.values()]
    lines = [
        f"# Continued pretraining on {a.dataset}'s text (TAPT) vs none",
        "",
        f"General model: BERT-Mini, {a.steps} MLM steps on {a.corpus}. TAPT: {a.tapt_steps} more MLM steps "
        f"on {a.dataset}'s training text; its MLM loss on {a.dataset}'s validation text went "
        f"{val[0]['loss']:.3f} -> {val[-1]['loss']:.3f}. Finetuning: seeds {a.seeds}, {a.epochs:g} epochs, "
        f"lr {a.lr:g}.",
        "",
        "| model | median test accuracy | min .. max | per seed |",
        "|---|---:|---|---|",
    ]
    for name, t in results.items():
        lines.append(
            f"| {name} | {statistics.median(t):.4f} | {min(t):.4f} .. {max(t):.4f} | "
            f"{', '.join(f'{x:.4f}' for x in t)} |"
        )
    (out / "study.md").write_text("\n".join(lines) + "\n")
    (out / "study.json").write_text(
        json.dumps({"tapt_val_loss": [val[0]["loss"], val[-1]["loss"]], **results})
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
