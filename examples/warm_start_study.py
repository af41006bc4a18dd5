"""Do word vectors (and sinusoidal positions) as a starting point speed up masked-LM pretraining? Measured.

Usage (after `make demo`, which leaves a tokenizer and token shards in runs/demo):

    .venv/bin/python examples/warm_start_study.py --demo runs/demo --out runs/warm-start --steps 600

Trains skip-gram vectors on the same corpora (`warmstart word2vec train`, unless --vectors is given), then
pretrains the same BERT four times from the same seed on the same batches: random embeddings; the
whole-word token rows taken from the vectors (`embeddings.vectors=...`); sinusoidal starting positions
(`model.position_init=sinusoidal`); and both. Writes OUT/study.md (the
validation MLM loss and masked-token accuracy at each evaluation), OUT/study.json and OUT/loss.png.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from warmstart.commands.pretrain import pretrain
from warmstart.word2vec.run import run as word2vec_run

SINUSOIDAL = "model.position_init=sinusoidal"


def validation_curve(run_dir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line]
    return [r for r in rows if r.get("split") == "validation"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--demo", default="runs/demo", help="a demo directory with tokenizer/ and shards/")
    p.add_argument("--out", default="runs/warm-start", help="output directory")
    p.add_argument("--vectors", help="word vectors to use (default: train skip-gram vectors first)")
    p.add_argument("--preset", default="bert-mini", help="model preset")
    p.add_argument("--steps", type=int, default=600, help="pretraining steps per arm")
    p.add_argument("--eval-every", type=int, default=100, help="steps between validation evaluations")
    p.add_argument("--epochs", type=int, default=5, help="word2vec epochs")
    p.add_argument("--overwrite", action="store_true", help="replace earlier arms in --out")
    a = p.parse_args()
    out, demo = Path(a.out), Path(a.demo)
    vectors = a.vectors
    if vectors is None:
        vectors = str(out / "vectors")
        if not (out / "vectors" / "vectors.npy").is_file():
            result = word2vec_run(
                {"out": vectors, "word2vec": {"epochs": a.epochs, "sample": 1e-4}}, overwrite=a.overwrite
            )
            print(result["markdown"])
    overrides = [
        "train.batch_size=32",
        "data.seq_len=128",
        f"train.eval_every={a.eval_every}",
        f"train.save_every={a.steps}",
        "train.bf16=true",
        "train.eval_batches=20",
        "train.log_every=20",
    ]
    curves = {}
    words = {"embeddings": {"vectors": vectors}}
    arms = {"random": ({}, []), "word2vec": (words, []), "sinusoidal": ({}, [SINUSOIDAL])}
    arms["word2vec+sinusoidal"] = (words, [SINUSOIDAL])
    for arm, (extra, more) in arms.items():
        run_dir = out / arm
        if not (run_dir / "final").is_dir():
            flags = {
                "out": str(run_dir),
                "train": {"steps": a.steps},
                "data": {"shards": str(demo / "shards")},
            }
            pretrain(a.preset, None, {**flags, **extra}, overrides + more, overwrite=True)
        curves[arm] = validation_curve(run_dir)

    lines = [
        f"# Validation MLM loss (masked-token accuracy) by starting point ({a.preset}, {a.steps} steps)",
        "",
        "| step | " + " | ".join(arms) + " |",
        "| ---: |" + " ---: |" * len(arms),
    ]
    for rows in zip(*curves.values()):
        cells = [f"{r['loss']:.3f} ({r['accuracy']:.3f})" for r in rows]
        lines.append(f"| {rows[0]['step']} | " + " | ".join(cells) + " |")
    (out / "study.md").write_text("\n".join(lines) + "\n")
    (out / "study.json").write_text(json.dumps({"vectors": vectors, "curves": curves}, indent=2) + "\n")
    _plot(curves, out / "loss.png")
    print("\n".join(lines))
    print(json.dumps({arm: [(c["step"], round(c["loss"], 4)) for c in cs] for arm, cs in curves.items()}))


def _plot(curves: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for arm, rows in curves.items():
        ax.plot([r["step"] for r in rows], [r["loss"] for r in rows], marker="o", label=arm)
    ax.set_xlabel("pretraining step")
    ax.set_ylabel("validation MLM loss")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
