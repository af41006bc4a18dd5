"""What pretraining bought on rotten-tomatoes, over seeds: pretrained vs scratch twin, full vs frozen.

Usage (after `make demo`, which leaves the pretrained model in runs/demo/pretrain):

    .venv/bin/python examples/finetune_study.py --init runs/demo/pretrain --out runs/study --seeds 1,2,3

Runs `warmstart finetune` for each arm with the same data, order and seeds, then writes OUT/study.md with
the median and spread of test accuracy per arm. The frozen-encoder arm is the linear probe on [CLS].
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from warmstart.commands.finetune import finetune

ARMS = {
    "pretrained-full": {"from_scratch": False, "strategy": {"strategy": "full"}},
    "scratch-full": {"from_scratch": True, "strategy": {"strategy": "full"}},
    "pretrained-frozen": {"from_scratch": False, "strategy": {"strategy": "frozen"}},
    "scratch-frozen": {"from_scratch": True, "strategy": {"strategy": "frozen"}},
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--init", default="runs/demo/pretrain", help="pretrained run")
    p.add_argument("--dataset", default="rotten-tomatoes", help="labeled dataset")
    p.add_argument("--out", default="runs/study", help="output directory")
    p.add_argument("--seeds", default="1,2,3", help="comma-separated seeds")
    p.add_argument("--epochs", type=float, default=3, help="epochs per run")
    p.add_argument("--arms", default=",".join(ARMS), help="which arms, comma-separated")
    p.add_argument("--lr-full", type=float, default=1e-4, help="peak learning rate of the full arms")
    p.add_argument("--lr-frozen", type=float, default=1e-3, help="peak learning rate of the frozen arms")
    a = p.parse_args()
    out = Path(a.out)
    rows = []
    for name in a.arms.split(","):
        arm = ARMS[name.strip()]
        flags = {
            "init": a.init,
            "out": str(out / name.strip()),
            "epochs": a.epochs,
            "seeds": a.seeds,
            "data": {"dataset": a.dataset},
            "task": {"max_length": 64},
            **arm,
            "train": {
                "lr": a.lr_full if name.strip().endswith("full") else a.lr_frozen,
                "bf16": True,
                "batch_size": 32,
            },
        }
        result = finetune(None, flags, [])
        tests = [r["test_metrics"]["test"]["accuracy"] for r in result["runs"].values()]
        summary = result.get("summary", {}).get("metrics", {}).get("accuracy")
        median = summary["median"] if summary else tests[0]
        spread = f"{min(tests):.4f} .. {max(tests):.4f}"
        rows.append((name, median, spread, tests))
    lines = [
        f"# Finetuning study on {a.dataset} (seeds {a.seeds}, {a.epochs:g} epochs)",
        "",
        "| arm | median test accuracy | min .. max | per seed |",
        "|---|---|---|---|",
        *[f"| {n} | {m:.4f} | {s} | {', '.join(f'{t:.4f}' for t in ts)} |" for n, m, s, ts in rows],
        "",
    ]
    (out / "study.md").write_text("\n".join(lines))
    (out / "study.json").write_text(json.dumps({n: ts for n, _, _, ts in rows}, indent=2))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
