"""Report sections of one run: pretraining (loss and learning-rate curves), finetuning (validation curves,
test metrics) and sample outputs of generating runs; word2vec runs: report/word2vec_section.py."""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from pathlib import Path

from warmstart import __version__
from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import read_config, resolve_checkpoint
from warmstart.config import load_yaml
from warmstart.data.shards import read_meta
from warmstart.registry import TASKS
from warmstart.report import breakdown_section as B
from warmstart.report.html import Page
from warmstart.report.panel_plot import Panel, panel_plot
from warmstart.report.plots import short_number
from warmstart.report.samples import pretrain_samples, text_to_text_samples
from warmstart.train.logging import read_metrics, series


def plot_path(out: Path, name: str) -> Path:
    """Where a report's plot goes: beside the HTML file, named after it."""
    return out.parent / f"{out.stem}_{name}.png"


def run_name(run_dir: Path) -> str:
    """What a report calls a run: its directory's name; a study cell (CELLS/MODEL/frac-F/seed-S/run) by
    its cell, 'pretrained/frac-1/seed-1'."""
    parts = Path(run_dir).absolute().parts
    if parts[-1] == "run" and "cells" in parts[:-1]:
        cells = len(parts) - 1 - parts[::-1].index("cells")
        return "/".join(parts[cells + 1 : -1]) or parts[-1]
    return parts[-1]


def fmt(x) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, float):
        return f"{x:.4f}" if abs(x) >= 1e-3 or x == 0 else f"{x:.3e}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def run_config(run_dir: Path) -> dict:
    return load_yaml(run_dir / "config.yaml") if (run_dir / "config.yaml").is_file() else {}


def config_blocks(page: Page, run_dir: Path, title: str) -> None:
    """The run's config.yaml (and its model's config.json), folded."""

    if (run_dir / "config.yaml").is_file():
        page.code((run_dir / "config.yaml").read_text(encoding="utf-8"), f"{title}: config.yaml")
    try:
        model = resolve_checkpoint(run_dir)
    except Exception:  # a word2vec run, or weights deleted (study cells): no model config to show
        return
    page.code((model / "config.json").read_text(encoding="utf-8"), f"{title}: {model.name}/config.json")


def model_line(run_dir: Path) -> str | None:
    """'bert: 2 layers, hidden 32, ..., 0.1M parameters' from the model's config.json and weight shapes."""
    from safetensors import safe_open

    try:
        d = resolve_checkpoint(run_dir)
    except Exception:
        return None
    c = read_config(d)
    with safe_open(str(d / "model.safetensors"), "pt") as f:
        params = sum(_numel(f.get_slice(k).get_shape()) for k in f.keys())
    arch = RunCard.read(c).arch
    shape = ", ".join(
        f"{label} {c[key]:,}"
        for key, label in [
            ("num_hidden_layers", "layers"), ("num_layers", "layers"), ("n_layer", "layers"),
            ("hidden_size", "hidden"), ("d_model", "hidden"), ("n_embd", "hidden"),
            ("num_attention_heads", "heads"), ("num_heads", "heads"), ("n_head", "heads"),
            ("vocab_size", "vocab"),
        ]
        if isinstance(c.get(key), int)
    )  # fmt: skip
    return f"Model ({d.name}/): {arch}, {shape}; {params / 1e6:.2f}M parameters in model.safetensors."


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def pretraining_section(page: Page, run_dir: Path, out: Path, cfg: dict) -> dict | None:
    """Loss and learning-rate curves and a table of first/last values; None without a training log."""
    train, val = read_metrics(run_dir, "train"), read_metrics(run_dir, "validation")
    page.heading("Pretraining")
    data = cfg.get("data", {})
    source = ", ".join(data.get("corpus") or []) or data.get("shards") or "?"
    objective = cfg.get("objective") or "the family's default"
    page.text(f"{cfg.get('arch', '?')} pretrained with objective {objective} on {source}.")
    _shards_table(page, run_dir, data)
    line = model_line(run_dir)
    if line:
        page.text(line)
    if not train:
        page.text("No training log (metrics.jsonl) in this directory: an imported or hand-made checkpoint.")
        return None
    lr = [r for r in train if "lr" in r]
    loss = {"train": series(train, "loss"), **({"validation": series(val, "loss")} if val else {})}
    panels = [
        Panel("loss", "loss", loss, smooth=("train",)),
        Panel("learning rate", "learning rate", {"lr": series(lr, "lr")}, rate=True),
    ]
    path = panel_plot(panels, "step", plot_path(out, "pretraining"), f"pretraining: {run_name(run_dir)}")
    page.image(path, "pretraining loss and learning rate")
    keys = ["loss", *[k for k in (val[-1] if val else {}) if k not in ("step", "split", "time", "loss")]]
    rows = [["last train", train[-1]["step"], fmt(train[-1]["loss"]), *["" for _ in keys[1:]]]]
    for label, r in (("first validation", val[0]), ("last validation", val[-1])) if val else ():
        rows.append([label, r["step"], *[fmt(r.get(k, "")) for k in keys]])
    page.table(["", "step", *keys], rows)
    peak = max(r["lr"] for r in lr) if lr else None
    peak = short_number(peak) if peak is not None else "not logged"
    page.text(f"{train[-1]['step']:,} steps; the highest learning rate logged is {peak}.")
    return {"train": train[-1], "validation": val}


def _shards_table(page: Page, run_dir: Path, data: dict) -> None:

    shards = Path(data.get("shards") or run_dir / "shards")
    try:
        meta = read_meta(shards)
    except Exception:  # shards moved or deleted: the config above still names them
        return
    rows = [[s, fmt(i.get("num_docs")), fmt(i.get("num_tokens"))] for s, i in meta.get("splits", {}).items()]
    page.table(["split", "documents", "tokens"], rows, f"Token shards: {shards}")


def finetune_dirs(run_dir: Path) -> dict[str, Path]:
    if (run_dir / "test_metrics.json").is_file():
        return {run_name(run_dir): run_dir}
    seeds = sorted(run_dir.glob("seed-*/test_metrics.json"), key=lambda p: int(p.parent.name[5:]))
    return {p.parent.name: p.parent for p in seeds}


def finetune_section(page: Page, run_dir: Path, out: Path, cfg: dict) -> None:
    dirs = finetune_dirs(run_dir)
    tests = {name: json.loads((d / "test_metrics.json").read_text()) for name, d in dirs.items()}
    page.heading("Finetuning")
    task, data = cfg.get("task", {}), cfg.get("data", {})
    first = next(iter(tests.values()), None)
    sizes = ", ".join(f"{s} {n:,}" for s, n in (first or {}).get("sizes", {}).items())
    scratch = " with random weights (scratch twin)" if cfg.get("from_scratch") else ""
    page.text(
        f"Task {task.get('name', '?')} on {data.get('dataset', '?')} ({sizes or 'sizes unknown'}), "
        f"from {cfg.get('init', '?')}{scratch}."
    )
    if not tests:
        page.text("No test_metrics.json: the run has not finished.")
        return

    metric = first["metric"]
    parts = first.get("breakdown")
    majority = parts["majority"]["accuracy"] if parts else None
    page.image(B.training_plot(dirs, plot_path(out, "training")), "training loss and learning rate per step")
    if cfg.get("aux", {}).get("objectives"):  # joint training: each part's loss, the learned weights
        train = read_metrics(next(iter(dirs.values())), "train")
        keys = sorted({k for r in train for k in r if k.endswith(("/loss", "/weight"))})
        losses = {k: series(train, k) for k in keys if k.endswith("/loss")}
        panels = [Panel("loss of each part", "loss", losses, smooth=tuple(losses), legend=True)]
        weights = {k: series(train, k) for k in keys if k.endswith("/weight")}
        panels += [Panel("learned weights", "weight", weights, legend=True)] if weights else []
        page.image(
            panel_plot(panels, "step", plot_path(out, "joint")),
            "training loss of the task and of each objective",
        )
    path = B.validation_plot(dirs, metric, majority, plot_path(out, "validation"))
    page.image(path, f"validation {metric} per step")
    names = [k for k in first["test"] if k != "loss"]
    rows = [
        [n, *[fmt(t["test"][k]) for k in names], fmt(t["best_validation"]), t["best_step"]]
        for n, t in tests.items()
    ]
    page.table(["run", *[f"test {k}" for k in names], f"best validation {metric}", "best step"], rows)
    B.breakdown_section(page, parts, plot_path(out, "confusion"))
    if task.get("name") in TASKS and TASKS[task["name"]].report_samples:
        _samples(
            page, ["input", "reference", "generated"], text_to_text_samples, next(iter(dirs.values())), cfg
        )


def _samples(page: Page, header: list[str], make, run_dir: Path, cfg: dict) -> None:
    page.heading("Sample outputs")
    try:
        rows = make(run_dir, cfg)
    except Exception as exc:  # a report still stands without samples (data or shards moved away)
        page.text(f"No samples: {exc}")
        return
    page.table(header, rows, "Greedy decoding from the first validation examples.")


def generation_samples(page: Page, run_dir: Path, cfg: dict) -> None:

    _samples(page, ["prompt", "generated"], pretrain_samples, run_dir, cfg)


def footer(page: Page) -> None:
    import torch

    page.text(
        f"Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC} by warmstart {__version__} "
        f"(torch {torch.__version__}, Python {platform.python_version()}, {platform.machine()})."
    )
