"""`warmstart probe --checkpoints RUN`: validating pretraining. Every saved checkpoint of a pretraining run
is probed (``commands/probe.py``: a linear probe on each layer, the layer picked on validation) and its
downstream score is set against the pretraining step and the run's validation loss at that step.

The run keeps its last ``train.keep_last`` step checkpoints (``RUN/checkpoints/step-N``); those are probed,
and ``final/`` when there is none. Step 0 is the randomly initialised twin (the untrained start).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from warmstart.checkpoints.resolve import STEP, problem, steps
from warmstart.commands.probe import labeled_splits, probe_model
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError
from warmstart.paths import refuse_overlap
from warmstart.report.panel_plot import Panel, panel_plot
from warmstart.train.checkpoint import write_json
from warmstart.train.rundir import check_free, open_run_dir, settle


def validation_losses(run: Path) -> dict[int, float]:
    """{step: validation loss} from the run's metrics.jsonl (empty when it has none)."""
    losses: dict[int, float] = {}
    try:
        lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return losses
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("split") == "validation" and "loss" in record:
            losses[int(record["step"])] = float(record["loss"])
    return losses


def checkpoints(run: Path, losses: dict[int, float]) -> list[tuple[int, Path]]:
    """(step, directory) of each checkpoint of ``run`` to probe, oldest first."""
    if not run.is_dir() or not (run / "config.yaml").is_file() and not (run / "checkpoints").is_dir():
        raise WarmstartError(
            f"--checkpoints takes a pretraining run directory; {run} is not one",
            "pass the --out directory of `warmstart pretrain`",
        )
    found = [(int(STEP.fullmatch(d.name)[1]), d) for d in steps(run)]
    if not found and problem(run / "final") is None:
        last = max(losses, default=None)
        if last is None:
            raise WarmstartError(f"{run}/final has no step in {run}/metrics.jsonl", "probe a pretraining run")
        found = [(last, run / "final")]
    if not found:
        raise WarmstartError(
            f"{run} has no saved checkpoint (no checkpoints/step-N, no final/)",
            "pretrain with train.save_every=N and train.keep_last=K to keep K checkpoints",
        )
    return found


def best_layer(rows: list[dict]) -> dict:
    """The layer whose probe scored best on validation (the first of equals), with the last layer's test."""
    best = max(rows, key=lambda r: (r["validation"], -r["layer"]))
    return {**best, "last_layer_test": rows[-1]["test"]}


def probe_checkpoints(
    run: str,
    dataset: str,
    out: str,
    pooling: str = "cls",
    max_length: int = 128,
    train_limit: int | None = 4000,
    scratch_twin: bool = True,
    overwrite: bool = False,
    options: DataOptions | None = None,
) -> dict:
    """One row per checkpoint: step, validation loss, the best layer and its probe's scores."""
    run_path = Path(run)
    losses = validation_losses(run_path)
    found = checkpoints(run_path, losses)
    records, labels, names = labeled_splits(dataset, options, train_limit)
    check_free(out, overwrite)
    refuse_overlap(out, {"run": run, "dataset": dataset})
    print(f"probing steps {', '.join(str(s) for s, _ in found)} of {run}", file=sys.stderr)
    todo = ([(0, found[0][1], True)] if scratch_twin else []) + [(s, d, False) for s, d in found]
    rows = []
    for step, directory, random_init in todo:
        name = "scratch (step 0)" if random_init else f"step {step}"
        layers = probe_model(directory, records, labels, len(names), pooling, max_length, random_init, name)
        rows.append({"step": step, "checkpoint": "random init" if random_init else directory.name,
                     "validation_loss": losses.get(step), **best_layer(layers)})  # fmt: skip
    run_dir = open_run_dir(out, overwrite=overwrite, what="probe")
    write_json(
        {"run": run, "dataset": dataset, "pooling": pooling, "checkpoints": rows}, run_dir / "probe.json"
    )
    settle(run_dir)
    table = markdown(rows)
    (run_dir / "probe.md").write_text(table + "\n", encoding="utf-8")
    plot = figure(rows, dataset, run_dir / "probe.png")
    return {"checkpoints": rows, "table": table, "plot": str(plot), "run_dir": str(run_dir)}


def markdown(rows: list[dict]) -> str:
    lines = [
        "| step | checkpoint | validation loss | best layer | probe validation | probe test "
        "| last layer test |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        loss = "" if r["validation_loss"] is None else f"{r['validation_loss']:.4f}"
        lines.append(
            f"| {r['step']} | {r['checkpoint']} | {loss} | {r['layer']} | {r['validation']:.4f} | "
            f"{r['test']:.4f} | {r['last_layer_test']:.4f} |"
        )
    return "\n".join(lines)


def figure(rows: list[dict], dataset: str, path: Path) -> Path:
    """The probe's scores (left) and the validation loss (right) against pretraining steps."""
    xs = [r["step"] for r in rows]
    scores = Panel(
        f"Downstream probe ({dataset})",
        "accuracy",
        {
            "best layer (test)": (xs, [r["test"] for r in rows]),
            "last layer (test)": (xs, [r["last_layer_test"] for r in rows]),
        },
    )
    known = [r for r in rows if r["validation_loss"] is not None]
    loss = Panel(
        "Pretraining validation loss",
        "loss",
        {"validation": ([r["step"] for r in known], [r["validation_loss"] for r in known])},
    )
    return panel_plot([scores, loss], "pretraining step", path)
