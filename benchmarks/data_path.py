"""The data path: how long the real commands' steps wait for their batches.

throughput.py times steps on batches made in advance; here `warmstart pretrain` and `warmstart finetune` run
as a user runs them (token shards read from disk, windows packed and masked per step; labeled examples
encoded once and grouped by length) and their metrics.jsonl give, per logged window, the tokens per second
and ``data_share``: the part of the window's wall time the steps spent waiting for their batches (the fit
loop makes micro-batch i as a pure function of i, for exact resume, on the training thread). Prints a
Markdown table and one JSON line per command.

    python benchmarks/data_path.py             # bert-mini, bf16: pretraining, classification, tagging
    python benchmarks/data_path.py --steps 200 --precision fp32
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

COMMON = ["train.progress=false", "train.log_every=10", "train.eval_every=0", "train.save_every=0"]


def warmstart(*argv: str) -> None:
    cmd = [sys.executable, "-m", "warmstart", *map(str, argv)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")


def windows(run: Path) -> dict:
    """Median tokens/s and data share over the logged windows after the first (which holds the warm-up)."""
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in rows if r.get("split") == "train" and "data_share" in r][1:]
    return {
        "windows": len(train),
        "tokens_per_s": round(statistics.median(r["tokens_per_s"] for r in train)),
        "data_share": round(statistics.median(r["data_share"] for r in train), 4),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--precision", choices=("fp32", "bf16"), default="bf16")
    a = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="data_path-"))
    bf16 = f"train.bf16={str(a.precision == 'bf16').lower()}"
    warmstart("tokenizer", "train", "--corpus", "wiki-leads", "--kind", "wordpiece", "--vocab-size", 8192,
              "--out", root / "tok")  # fmt: skip
    warmstart("prepare", "--corpus", "wiki-leads", "--tokenizer", root / "tok", "--out", root / "shards")
    runs = {
        "pretraining (masked LM, 32 x 128)": (
            "pretrain", "--preset", "bert-mini", "--shards", root / "shards", "--steps", a.steps,
            "train.batch_size=32", "data.seq_len=128",
        ),
        "finetuning (rotten-tomatoes, batch 32)": (
            "finetune", "--init", root / "pretrain", "--dataset", "rotten-tomatoes",
            "train.steps=" + str(a.steps), "train.batch_size=32", "task.max_length=64",
        ),
        "finetuning (brown-pos tagging, batch 32)": (
            "finetune", "--init", root / "pretrain", "--task", "tagging", "--dataset", "brown-pos",
            "train.steps=" + str(a.steps), "train.batch_size=32", "task.max_length=128",
            "task.unseen_tags=fallback",
        ),
    }  # fmt: skip
    results = []
    for (name, argv), out in zip(runs.items(), ("pretrain", "rt", "pos")):
        warmstart(*argv, "--out", root / out, *COMMON, bf16)
        results.append({"command": name, "precision": a.precision, "steps": a.steps, **windows(root / out)})
    print("| command | precision | tokens/s | waiting for batches |")
    print("|---|---|---:|---:|")
    for r in results:
        print(f"| {r['command']} | {r['precision']} | {r['tokens_per_s']:,} | {r['data_share']:.1%} |")
    for r in results:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
