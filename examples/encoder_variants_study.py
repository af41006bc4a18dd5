"""Encoder pretraining variants at equal CPU time: BERT MLM+NSP, RoBERTa-style MLM, ALBERT, ELECTRA.

Usage:

    .venv/bin/python examples/encoder_variants_study.py --minutes 10 --seeds 1,2,3 --out runs/variants

Every arm has BERT-Mini's shape (4 layers, hidden 256, 4 heads), sequences of 128 and batches of 32, and
pretrains on wiki-leads for the same wall-clock budget: a short calibration run measures each arm's seconds
per step, which sets its step count (so every learning-rate schedule runs to its end). Each pretrained
model, and a random-init twin for reference, is then finetuned on rotten-tomatoes over the seeds; OUT/study.md
has the median test accuracy per arm, OUT/study.json the numbers and OUT/study.png the picture.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from warmstart.commands.finetune import finetune
from warmstart.commands.pretrain import pretrain
from warmstart.data.corpus import corpus_texts, prepare_corpus
from warmstart.data.dataset import DataOptions
from warmstart.report.plots import bar_plot
from warmstart.tokenization.train import train_tokenizer
from warmstart.train.logging import read_metrics

ARMS = {  # name: (preset, tokenizer kind, extra overrides)
    "bert-mlm-nsp": ("bert-mini", "wordpiece", ["objective=mlm+nsp"]),
    "roberta-mlm": ("roberta-mini", "bpe", []),
    "albert-mlm-sop": ("albert-mini", "wordpiece", []),
    "electra": ("electra-mini", "wordpiece", []),
}
COMMON = ["data.seq_len=128", "train.batch_size=32", "train.bf16=true", "train.eval_batches=20"]


def seconds_per_step(arm: str, shards: Path, out: Path) -> float:
    """Median time of steps 4..12 of a throwaway run (the first steps warm the kernels up)."""
    preset, _, extra = ARMS[arm]
    overrides = COMMON + extra + ["train.log_every=1", "train.eval_every=0", "train.eval_at_start=false"]
    overrides += ["train.save_every=0", "train.progress=false"]
    run = out / "calibration" / arm
    pretrain(
        preset,
        None,
        {"out": str(run), "data": {"shards": str(shards)}, "train": {"steps": 12}},
        overrides,
        overwrite=True,
    )
    times = [r["time"] for r in read_metrics(run, "train")]
    return statistics.median(b - a for a, b in zip(times[3:], times[4:]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10.0, help="pretraining wall-clock budget per arm")
    p.add_argument("--corpus", default="wiki-leads", help="pretraining corpus")
    p.add_argument("--dataset", default="rotten-tomatoes", help="labeled dataset for finetuning")
    p.add_argument("--seeds", default="1,2,3", help="finetuning seeds")
    p.add_argument("--epochs", type=float, default=2, help="finetuning epochs")
    p.add_argument("--lr", type=float, default=3e-4, help="finetuning peak learning rate")
    p.add_argument("--vocab", type=int, default=8192, help="tokenizer vocabulary size")
    p.add_argument("--arms", default=",".join(ARMS), help="which arms, comma-separated")
    p.add_argument("--no-scratch", action="store_true", help="skip the random-init reference")
    p.add_argument("--out", default="runs/variants", help="output directory")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    opts = DataOptions(label_column=None)
    arms = [x.strip() for x in a.arms.split(",")]
    shards = {}
    for kind in sorted({ARMS[x][1] for x in arms}):
        tok_dir, shards[kind] = out / f"tokenizer-{kind}", out / f"shards-{kind}"
        if not (shards[kind] / "meta.json").is_file():
            tok = train_tokenizer(corpus_texts([a.corpus], opts, "train"), kind, a.vocab, tok_dir)
            prepare_corpus(
                [a.corpus], opts, tok, shards[kind], splits=("train", "validation"), overwrite=True
            )
    results = json.loads((out / "study.json").read_text()) if (out / "study.json").is_file() else {}
    for arm in arms:
        if arm in results:
            continue  # finished in an earlier run of this script
        preset, kind, extra = ARMS[arm]
        per_step = seconds_per_step(arm, shards[kind], out)
        steps = max(20, int(a.minutes * 60 / per_step))
        print(f"{arm}: {per_step:.3f} s/step -> {steps} steps in {a.minutes:g} minutes")
        t = time.perf_counter()
        overrides = COMMON + extra + [f"train.eval_every={max(steps // 5, 1)}", "train.save_every=0"]
        run = out / arm
        r = pretrain(
            preset,
            None,
            {"out": str(run), "data": {"shards": str(shards[kind])}, "train": {"steps": steps}},
            overrides,
            overwrite=True,
        )
        minutes = (time.perf_counter() - t) / 60
        results[arm] = {
            "steps": steps,
            "minutes": minutes,
            "pretrain": r["metrics"],
            "test": finetune_arm(run, out / f"{arm}-finetune", a, scratch=False),
        }
        (out / "study.json").write_text(json.dumps(results, indent=2))
    if not a.no_scratch and "scratch" not in results:
        first = next(x for x in arms)
        results["scratch"] = {
            "steps": 0,
            "minutes": 0.0,
            "pretrain": {},
            "test": finetune_arm(out / first, out / "scratch-finetune", a, scratch=True),
        }
        (out / "study.json").write_text(json.dumps(results, indent=2))
    write_table(results, a, out)


def finetune_arm(init: Path, out: Path, a, scratch: bool) -> list[float]:
    flags = {
        "init": str(init),
        "from_scratch": scratch,
        "out": str(out),
        "epochs": a.epochs,
        "seeds": a.seeds,
        "data": {"dataset": a.dataset},
        "task": {"max_length": 64},
        "train": {"lr": a.lr, "batch_size": 32, "bf16": True},
    }
    result = finetune(None, flags, [], overwrite=True)
    return [r["test_metrics"]["test"]["accuracy"] for r in result["runs"].values()]


def write_table(results: dict, a, out: Path) -> None:
    lines = [
        f"# Encoder variants at equal CPU time ({a.minutes:g} min of pretraining on {a.corpus} each), "
        f"finetuned on {a.dataset}",
        "",
        f"Seeds {a.seeds}, {a.epochs:g} epochs at lr {a.lr:g}. BERT-Mini shape for every arm; the scratch "
        "row is the same encoder with random weights.",
        "",
        "| arm | pretraining steps | minutes | median test accuracy | min .. max | per seed |",
        "|---|---:|---:|---:|---|---|",
    ]
    for arm, r in sorted(results.items(), key=lambda kv: -statistics.median(kv[1]["test"])):
        t = r["test"]
        lines.append(
            f"| {arm} | {r['steps']} | {r['minutes']:.1f} | {statistics.median(t):.4f} | "
            f"{min(t):.4f} .. {max(t):.4f} | {', '.join(f'{x:.4f}' for x in t)} |"
        )
    (out / "study.md").write_text("\n".join(lines) + "\n")
    bar_plot(
        {k: v["test"] for k, v in results.items()},
        f"test accuracy on {a.dataset} (median, min-max)",
        "accuracy",
        out / "study.png",
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
