"""`warmstart probe`: which layer gives the best features? A linear probe on each layer, and a plot.

For every layer (0 = embeddings, 1..L = blocks) the pooled hidden states of the train split are standardised
and a multinomial logistic regression (L2, full-batch L-BFGS) is fitted; the L2 strength is picked on
validation from a small grid, and that probe is scored once on test. With ``scratch_twin`` the same is done
for a randomly initialised copy of the encoder, the baseline that shows what pretraining put in each layer.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from warmstart.checkpoints.load import load_encoder
from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError
from warmstart.inference.encode import all_layer_features
from warmstart.paths import refuse_overlap
from warmstart.report.plots import line_plot
from warmstart.train.checkpoint import write_json
from warmstart.train.rundir import check_free, open_run_dir, settle

L2_GRID = (1e-4, 1e-3, 1e-2)


def fit_probe(x: torch.Tensor, y: torch.Tensor, classes: int, l2: float, steps: int = 100) -> torch.nn.Linear:
    """Multinomial logistic regression by L-BFGS on (already standardised) features."""
    torch.manual_seed(0)
    probe = torch.nn.Linear(x.shape[1], classes)
    torch.nn.init.zeros_(probe.weight)
    torch.nn.init.zeros_(probe.bias)
    opt = torch.optim.LBFGS(probe.parameters(), lr=1.0, max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(probe(x), y) + l2 * probe.weight.square().sum()
        loss.backward()
        return loss

    opt.step(closure)
    return probe


def accuracy(probe, x, y) -> float:
    with torch.no_grad():
        return float((probe(x).argmax(-1) == y).float().mean())


def probe_layers(feats: dict[str, np.ndarray], labels: dict[str, torch.Tensor], classes: int) -> list[dict]:
    """One row per layer: validation and test accuracy of the best-on-validation probe."""
    rows = []
    for layer in range(feats["train"].shape[0]):
        train = torch.from_numpy(feats["train"][layer])
        mean, std = train.mean(0), train.std(0).clamp(min=1e-6)
        x = {s: (torch.from_numpy(f[layer]) - mean) / std for s, f in feats.items()}
        best = None
        for l2 in L2_GRID:
            probe = fit_probe(x["train"], labels["train"], classes, l2)
            val = accuracy(probe, x["validation"], labels["validation"])
            if best is None or val > best[0]:
                best = (val, l2, probe)
        val, l2, probe = best
        rows.append(
            {"layer": layer, "validation": val, "test": accuracy(probe, x["test"], labels["test"]), "l2": l2}
        )
    return rows


def labeled_splits(dataset: str, options: DataOptions | None, train_limit: int | None) -> tuple:
    """(records per split, label ids per split, label names) of a labeled dataset a probe is fitted on."""
    data = open_dataset(dataset, options or DataOptions())
    if data.kind != "labeled":
        raise WarmstartError(
            f"{dataset} has no labels", "probe a labeled dataset (see `warmstart data list`)"
        )
    records = {s: list(data.records(s)) for s in ("train", "validation", "test")}
    records["train"] = records["train"][:train_limit]
    names = sorted({r["label"] for r in records["train"]})
    index = {n: i for i, n in enumerate(names)}
    for split, rows in records.items():
        unknown = sorted({r["label"] for r in rows} - set(index))
        if unknown:
            raise WarmstartError(
                f"{dataset} ({split}) has labels not in train: {unknown[:5]}", "check the data"
            )
    if len(names) < 2:
        raise WarmstartError(
            f"{dataset} has {len(names)} label(s) in its training split", "a probe needs 2 labels or more"
        )
    labels = {s: torch.tensor([index[r["label"]] for r in rows]) for s, rows in records.items()}
    return records, labels, names


def probe_model(
    model,
    records: dict,
    labels: dict,
    classes: int,
    pooling: str,
    max_length: int,
    random_init: bool = False,
    name: str = "pretrained",
) -> list[dict]:
    """The rows of ``probe_layers`` for one model or checkpoint directory (``random_init``: its twin)."""
    torch.manual_seed(0)
    encoder, tokenizer, _ = load_encoder(model, random_init=random_init)
    print(f"{name}: features of {sum(len(r) for r in records.values()):,} texts", file=sys.stderr)
    feats = {
        s: all_layer_features(encoder, tokenizer, [r["text"] for r in rows], pooling, max_length)
        for s, rows in records.items()
    }
    return probe_layers(feats, labels, classes)


def run_probe(
    model: str,
    dataset: str,
    out: str,
    pooling: str = "cls",
    max_length: int = 128,
    train_limit: int | None = 4000,
    scratch_twin: bool = True,
    overwrite: bool = False,
    options: DataOptions | None = None,
) -> dict:
    records, labels, names = labeled_splits(dataset, options, train_limit)
    check_free(out, overwrite)  # refused now; written only when the probes are done
    refuse_overlap(out, {"model": model, "dataset": dataset})
    results = {}
    variants = [("pretrained", False)] + ([("scratch", True)] if scratch_twin else [])
    for name, random_init in variants:
        results[name] = probe_model(
            model, records, labels, len(names), pooling, max_length, random_init, name
        )
    run_dir = open_run_dir(out, overwrite=overwrite, what="probe")
    write_json({"dataset": dataset, "pooling": pooling, "layers": results}, run_dir / "probe.json")
    settle(run_dir)  # --overwrite: the results are saved, the replaced run can go
    series = {
        f"{name} ({split})": ([r["layer"] for r in rows], [r[split] for r in rows])
        for name, rows in results.items()
        for split in ("validation", "test")
    }
    plot = line_plot(
        series,
        f"Linear probe on each layer ({dataset}, {pooling} pooling)",
        "layer (0 = embeddings)",
        "accuracy",
        Path(run_dir) / "probe.png",
    )
    lines = ["| layer | " + " | ".join(f"{n} test" for n in results) + " |", "|---|" + "---|" * len(results)]
    for layer in range(len(next(iter(results.values())))):
        cells = " | ".join(f"{results[n][layer]['test']:.4f}" for n in results)
        lines.append(f"| {layer} | {cells} |")
    (Path(run_dir) / "probe.md").write_text("\n".join(lines) + "\n")
    return {"layers": results, "plot": str(plot), "table": "\n".join(lines), "run_dir": str(run_dir)}
