"""Data size against repeats (T5's Table 9): the same model, the same steps, fewer unique tokens.

Usage (after `make demo`, which leaves a tokenizer, token shards and word vectors in runs/demo; without them
they are made in OUT first, as the demo makes them):

    .venv/bin/python examples/data_repeats.py --demo runs/demo --out runs/data-repeats

1. BERT-Mini pretrained by masked LM for the same steps on the first 100%, 10% and 1% of the demo's training
   tokens (`warmstart pretrain data.max_tokens=N`: the first N tokens, repeated to fill the steps), as the
   demo pretrains: its whole-word token embeddings start from the demo's skip-gram vectors, its positions
   from sinusoids (warmup-stable-decay, no dropout). Without that start this recipe sits on the unigram
   plateau for thousands of steps (README, "What a starting point does"), where there is nothing to
   compare; the start is the same for every arm (like the tokenizer, it was made from all the tokens), so
   the arms differ only in the masked-LM data. Validation is the whole validation split for every run.
2. Each model, the start alone (0 masked-LM steps) and the random-weights twin, finetuned on Brown part of
   speech with 10% of the training sentences over seeds 1-3, as the demo's data-efficiency cell.
3. OUT/data_repeats.md: unique tokens, repeats (tokens seen / unique tokens), the last training MLM loss,
   the validation MLM loss and the POS test accuracy; OUT/data_repeats.json and OUT/data_repeats.png.

`--no-vectors` pretrains from random embeddings instead. Rerunning resumes: finished pretraining runs and
finetuning cells are kept.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from warmstart.commands.demo_budget import NO_DROPOUT
from warmstart.commands.pretrain import pretrain
from warmstart.commands.study import run_finetune_cell
from warmstart.data.corpus import corpus_texts, prepare_corpus
from warmstart.data.dataset import DataOptions
from warmstart.data.shards import read_meta
from warmstart.data.unique_tokens import read_account
from warmstart.study.cells import Cell, read_cell
from warmstart.study.spec import StudySpec
from warmstart.tokenization.train import train_tokenizer
from warmstart.train.logging import read_metrics
from warmstart.word2vec.run import run as word2vec_run

CORPORA = ["wiki-leads", "news"]
PRETRAIN = [  # the demo's pretraining (commands/demo.py)
    "train.batch_size=32",
    "data.seq_len=128",
    "train.bf16=true",
    "train.schedule=wsd",
    "train.eval_batches=20",  # 20 x 32 windows of 126 tokens: the whole validation split of the demo
    "train.log_every=20",
    "train.save_every=0",
    "model.position_init=sinusoidal",
    *NO_DROPOUT,
]
POS = [  # the demo's part-of-speech cells (commands/demo_budget.py)
    "train.lr=1e-3",
    "train.batch_size=32",
    "task.max_length=128",
    "task.unseen_tags=fallback",
    "train.bf16=true",
    "eval_batch_size=128",
    "evals_per_epoch=4",
    "data.validation_limit=1000",
]


def prepared(demo: Path, out: Path, vectors: bool) -> tuple[Path, str | None]:
    """(shards, word vectors): the demo's, or the same corpora made into OUT as the demo makes them."""
    shards = demo / "shards" if (demo / "shards" / "meta.json").is_file() else out / "shards"
    if not (shards / "meta.json").is_file():
        opts = DataOptions(label_column=None)
        tok = train_tokenizer(corpus_texts(CORPORA, opts, "train"), "wordpiece", 8192, out / "tokenizer")
        prepare_corpus(CORPORA, opts, tok, shards, splits=("train", "validation"), overwrite=True)
    if not vectors:
        return shards, None
    words = demo / "word2vec" if (demo / "word2vec" / "vectors.npy").is_file() else out / "word2vec"
    if not (words / "vectors.npy").is_file():
        word2vec_run({"out": str(words), "corpus": CORPORA, "word2vec": {"epochs": 2, "sample": 1e-4}})
    return shards, str(words)


def pretrain_arm(shards: Path, run: Path, max_tokens: int | None, steps: int, vectors: str | None, a) -> dict:
    """The pretraining run on the first ``max_tokens`` (done once; a finished run is read back)."""
    if not (run / "final").is_dir():
        flags = {"out": str(run), "data": {"shards": str(shards)}, "train": {"steps": steps}}
        if vectors:
            flags["embeddings"] = {"vectors": vectors}
        extra = [f"train.eval_every={steps // 4}"] + ([f"data.max_tokens={max_tokens}"] if max_tokens else [])
        pretrain(a.preset, None, flags, PRETRAIN + extra, overwrite=True)
    train = read_metrics(run, "train")
    validation = read_metrics(run, "validation")
    return {
        **(read_account(run) or {}),
        "train_loss": statistics.mean(r["loss"] for r in train[-5:]) if train else None,  # last 100 steps
        "validation_loss": validation[-1]["loss"],
        "validation_accuracy": validation[-1]["accuracy"],
        "validation_curve": [(r["step"], r["loss"]) for r in validation],
        "train_curve": [(r["step"], r["loss"]) for r in train],
    }


def finetune_arm(run: Path, root: Path, model: str, a) -> list[float]:
    """POS test accuracy of ``run`` (or its random twin: model "scratch") per seed."""
    seeds = [int(s) for s in a.seeds.split(",")]
    spec = StudySpec(str(run), "brown-pos", [a.label_fraction], seeds, 1, a.finetune_steps, POS, max_evals=5)
    plan = {"steps": a.finetune_steps, "eval_every": max(1, a.finetune_steps // 5)}
    scores = []
    for seed in seeds:
        cell = Cell(model, a.label_fraction, seed)
        result = read_cell(cell.path(root)) or run_finetune_cell(cell, root, spec, plan, task="tagging")
        scores.append(result["test"]["accuracy"])
        print(f"{root.name} seed {seed}: POS test accuracy {scores[-1]:.4f}")
    return scores


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--demo", default="runs/demo", help="a demo directory with shards/ and word2vec/")
    p.add_argument("--out", default="runs/data-repeats", help="output directory")
    p.add_argument(
        "--fractions", default="1,0.1,0.01", help="fractions of the training tokens, comma-separated"
    )
    p.add_argument("--preset", default="bert-mini", help="model preset")
    p.add_argument("--steps", type=int, default=800, help="pretraining steps of every run (the demo's 800)")
    p.add_argument("--no-vectors", action="store_true", help="random token embeddings, not word vectors")
    p.add_argument("--seeds", default="1,2,3", help="finetuning seeds (each its own label subset)")
    p.add_argument("--label-fraction", type=float, default=0.1, help="fraction of Brown's training sentences")
    p.add_argument("--finetune-steps", type=int, default=300, help="finetuning steps (the demo's 300)")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    shards, vectors = prepared(Path(a.demo), out, not a.no_vectors)
    total = int(read_meta(shards)["splits"]["train"]["num_tokens"])
    rows = []
    for fraction in sorted((float(f) for f in a.fractions.split(",")), reverse=True):
        name = f"tokens-{fraction:g}"
        row = {"arm": name, "fraction": fraction}
        row.update(
            pretrain_arm(shards, out / "pretrain" / name, round(fraction * total), a.steps, vectors, a)
        )
        row["pos"] = finetune_arm(out / "pretrain" / name, out / "finetune" / name, "pretrained", a)
        rows.append(row)
    start = {"arm": "start only (0 masked-LM steps)", "fraction": 0.0, "unique_tokens": 0}
    start.update(pretrain_arm(shards, out / "pretrain" / "start", None, 0, vectors, a))
    start["pos"] = finetune_arm(out / "pretrain" / "start", out / "finetune" / "start", "pretrained", a)
    twin = {"arm": "random twin", "fraction": 0.0, "unique_tokens": 0}
    twin["pos"] = finetune_arm(out / "pretrain" / "start", out / "finetune" / "twin", "scratch", a)
    rows += [start, twin]
    lines = table(rows, vectors, a)
    (out / "data_repeats.md").write_text("\n".join(lines) + "\n")
    settings = {**vars(a), "vectors": vectors, "shards": str(shards)}
    (out / "data_repeats.json").write_text(json.dumps({"settings": settings, "rows": rows}, indent=1) + "\n")
    plot(rows, out / "data_repeats.png", a)
    print("\n".join(lines))


def _pos(scores: list[float]) -> str:
    return f"{statistics.median(scores):.4f} ({min(scores):.4f}-{max(scores):.4f})"


def table(rows: list[dict], vectors: str | None, a) -> list[str]:
    start = f"word vectors {vectors}" if vectors else "random embeddings"
    lines = [
        f"# Unique tokens against repeats: {a.preset}, {a.steps} masked-LM steps of 32 x 128 tokens",
        "",
        f"Start of every pretrained arm: {start}, sinusoidal positions. POS: Brown, {a.label_fraction:.0%} "
        f"of the training sentences, {a.finetune_steps} steps, test accuracy median (min-max) over seeds "
        f"{a.seeds}.",
        "",
        "| masked-LM data | unique tokens | repeats | train MLM loss (last 100 steps) | validation MLM loss "
        "| POS accuracy |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "repeats" in r:
            cells = [f"first {r['fraction']:.0%}", f"{r['unique_tokens']:,}", f"{r['repeats']:.3g}"]
            cells += [f"{r['train_loss']:.3f}", f"{r['validation_loss']:.3f}"]
        else:
            loss = f"{r['validation_loss']:.3f}" if "validation_loss" in r else "-"
            cells = [r["arm"], "0", "-", "-", loss]
        lines.append("| " + " | ".join(cells + [_pos(r["pos"])]) + " |")
    return lines


def plot(rows: list[dict], path: Path, a) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = [r for r in rows if "repeats" in r]
    x = [r["unique_tokens"] for r in arms]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(x, [r["validation_loss"] for r in arms], marker="o", label="validation (whole split)")
    left.plot(
        x, [r["train_loss"] for r in arms], marker="s", linestyle="--", label="training (last 100 steps)"
    )
    for r in arms:
        where = (r["unique_tokens"], r["validation_loss"])
        left.annotate(f"{r['repeats']:.3g} repeats", where, (4, 6), textcoords="offset points", fontsize=8)
    left.margins(x=0.1, y=0.12)  # room for the labels
    left.set_ylabel("masked-LM loss (nats per masked token)")
    med = [statistics.median(r["pos"]) for r in arms]
    err = [[m - min(r["pos"]) for m, r in zip(med, arms)], [max(r["pos"]) - m for m, r in zip(med, arms)]]
    right.errorbar(x, med, yerr=err, marker="o", capsize=3, label="pretrained, median (min-max) over seeds")
    for r, style in zip([r for r in rows if "repeats" not in r], (":", "-.")):
        right.axhline(statistics.median(r["pos"]), color="gray", linestyle=style, label=r["arm"])
    right.set_ylabel(f"POS test accuracy ({a.label_fraction:.0%} of the labels)")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel(f"unique masked-LM tokens (log scale; {a.steps} steps each)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{a.preset}: the same masked-LM steps on fewer unique tokens, more repeats")
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


if __name__ == "__main__":
    main()
