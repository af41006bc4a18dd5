"""`warmstart study`: run the cells (model x fraction x seed) not yet done, then study.json and a report.

Everything a user can get wrong (the run, the dataset, its labels, the fractions, the overrides, a study
directory holding another config) is checked before the directory is touched.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

from tqdm.auto import tqdm

from warmstart.checkpoints.load import check_length, load_encoder, model_config
from warmstart.commands.finetune import finetune, resolve
from warmstart.data.options import SPLITS, limited, open_finetune_data, split_files
from warmstart.data.subsets import nested_subset
from warmstart.errors import WarmstartError
from warmstart.outputs import mark
from warmstart.paths import refuse_overlap
from warmstart.report.build import write_report
from warmstart.study.arms import Arm, study_arms
from warmstart.study.baseline import require_sklearn
from warmstart.study.cells import (
    WEIGHTS,
    Cell,
    finish_cell,
    fresh_cell,
    read_cell,
    run_baseline_cell,
    schedule,
)
from warmstart.study.parallel import run_cells
from warmstart.study.seeds import majority_share
from warmstart.study.spec import TASKS, StudySpec, check_study_dir, save_spec
from warmstart.study.summary import write_study
from warmstart.train.logging import read_metrics
from warmstart.train.rundir import abandon, open_run_dir, settle

SUPPORTED = (
    "labeled text for classification (rotten-tomatoes, wiki-topics, a file with text and label columns) or "
    "tagged words (brown-pos, a CoNLL file)"
)


def _finetune_config(spec: StudySpec, kind: str = "labeled"):

    flags = {"init": spec.run, "epochs": spec.epochs, "data": {"dataset": spec.dataset}}
    return resolve(None, {**flags, "task": {"name": TASKS[kind][0]}}, spec.overrides)


def _kind(spec: StudySpec) -> str:
    """The dataset's kind, which picks the task and the baseline (TASKS); refuses what a study cannot take.
    The data is --data, own split files (data.*_file, from --train-file ...), or both."""

    data = open_finetune_data(_finetune_config(spec).data)
    if data.kind == "corpus":
        raise WarmstartError(f"{data.name} has no labels (it is a text corpus)", f"a study needs {SUPPORTED}")
    if data.kind not in TASKS:
        raise WarmstartError(
            f"warmstart study supports classification and tagging only; {data.name} is a {data.kind} dataset",
            f"use {SUPPORTED}",
        )
    return data.kind


def _records(spec: StudySpec, cfg, kind: str) -> tuple[dict[str, list[dict]], dict]:
    """The train (after data.train_limit), validation and test records, and the dataset's provenance."""

    data = open_finetune_data(cfg.data)
    if data.origin:  # own split files: where each split came from, said once (cells log to their own)
        print(data.origin, file=sys.stderr)
    records = {s: list(data.records(s)) for s in SPLITS}
    records = limited(records, cfg.data)
    for split, rows in records.items():
        if not rows:
            raise WarmstartError(f"the {split} split of {data.name} is empty", "use more data")
    if kind == "tagging":
        labels = Counter(t for r in records["train"] for t in r["tags"])
    else:
        labels = Counter(str(r["label"]) for r in records["train"])
    if len(labels) < 2:
        raise WarmstartError(f"the training split of {data.name} has only one label", "use data with 2+")
    info = {
        "name": data.name,
        "description": data.description,
        "licence": data.licence,
        "source": data.source,
        "splits": data.split_note,
        "train_limit": cfg.data.train_limit,
        "validation_limit": cfg.data.validation_limit,
        "test_limit": cfg.data.test_limit,
        "sizes": {s: len(rows) for s, rows in records.items()},
        "labels": dict(sorted(labels.items())),
        "kind": kind,
        "validation_majority": majority_share(records["validation"]),  # below it a run failed
    }
    return records, info


def _check_run(spec: StudySpec, cfg) -> None:

    if not Path(spec.run).exists():
        raise WarmstartError(
            f"no such run: {spec.run}", "pass a `warmstart pretrain` run or a model directory"
        )
    _, _, config_json = load_encoder(spec.run, random_init=True)
    check_length(model_config(config_json)[0], cfg.task.max_length, "task.max_length")


def _cost(cell: Cell, plans: dict, sizes: dict, arms: dict[str, Arm]) -> float:
    """Rough work of a cell in training-example units, for the ETA (evaluation ~ a third of training)."""
    if cell.model not in arms:  # the baseline
        return 50 + sizes["train"] * cell.fraction / 20
    plan = plans[cell.fraction, cell.seed, arms[cell.model].epochs or 0]
    evals = plan["steps"] // plan["eval_every"] + 1
    return 500 + plan["steps"] * plan["batch_size"] + (evals * sizes["validation"] + sizes["test"]) / 3


def _plans(spec: StudySpec, cfg, records: dict, arms: dict[str, Arm]) -> dict:
    """Steps and evaluation interval per (fraction, seed, arm epochs; 0 = the study's)."""
    plans = {}
    for fraction in spec.fractions:
        for seed in spec.seeds_at(fraction):
            n = len(nested_subset(records["train"], fraction, seed))
            for epochs in {a.epochs or 0 for a in arms.values()}:
                plan = schedule(
                    n,
                    cfg.train.batch_size,
                    cfg.evals_per_epoch,
                    epochs or spec.epochs,
                    spec.min_steps,
                    spec.max_evals,
                )
                plans[fraction, seed, epochs] = {**plan, "batch_size": cfg.train.batch_size}
    return plans


def run_study(
    spec: StudySpec,
    out: str | Path,
    overwrite: bool = False,
    keep_models: bool = False,
    report: bool = True,
    jobs: int = 1,
) -> dict:
    """Run the study into ``out`` (resuming finished cells), ``jobs`` finetuning cells at a time; returns
    study.json's dict."""
    if jobs < 1:
        raise WarmstartError(f"--jobs must be at least 1, got {jobs}", "e.g. --jobs 2 on 2 or more cores")

    out = Path(out)
    files = {f"--{s}-file": f for s, f in split_files(_finetune_config(spec).data).items()}
    refuse_overlap(out, {"model": spec.run, "--data": spec.dataset, **files})  # before --overwrite removes
    require_sklearn()
    kind = _kind(spec)
    cfg = _finetune_config(spec, kind)  # unknown or bad override keys fail here
    _check_run(spec, cfg)
    records, dataset = _records(spec, cfg, kind)
    task, baseline = TASKS[kind]
    state = check_study_dir(out, spec, overwrite)
    if state == "replace":  # moved aside; removed once a new cell has finished, put back if none does
        open_run_dir(out, overwrite=True, what="study")
    if state == "extend":
        print(f"extending {out}: more seeds or fractions; its finished cells are kept", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    mark(out, "study")
    if state != "resume":
        save_spec(out, spec)

    arms = {a.name: a for a in study_arms(spec)}
    plans = _plans(spec, cfg, records, arms)
    cells = [Cell(m, f, s) for f in spec.fractions for s in spec.seeds_at(f) for m in (baseline, *arms)]
    costs = {c: round(_cost(c, plans, dataset["sizes"], arms)) for c in cells}
    results = {c: read_cell(c.path(out)) for c in cells}
    done = sum(r is not None for r in results.values())
    bar = tqdm(
        total=sum(costs.values()),
        initial=sum(costs[c] for c, r in results.items() if r is not None),
        desc=f"study: {done}/{len(cells)} cells",
        bar_format="{desc} |{bar}| {percentage:3.0f}% [{elapsed}<{remaining}]",
        file=sys.stderr,
        dynamic_ncols=True,
    )

    def finished(cell: Cell, result: dict) -> None:
        nonlocal done
        results[cell] = result
        done += 1
        bar.set_description_str(f"study: {done}/{len(cells)} cells")
        bar.update(costs[cell])
        metric = result["metric"]
        bar.write(f"{cell.name()}: test {metric} {result['test'][metric]:.4f}", file=sys.stderr)
        settle(out)  # a new result exists: the study this one replaced can go

    try:
        for cell in cells:  # the baselines first: seconds each, in this process
            if results[cell] is None and cell.model == baseline:
                finished(cell, run_baseline_cell(cell, out, records))
        work = [
            (cell, (cell, out, spec, _plan(plans, cell, arms), task, keep_models, arms[cell.model]))
            for cell in cells
            if results[cell] is None
        ]
        bar.set_description_str(f"study: {done}/{len(cells)} cells, {min(jobs, len(work))} running")
        run_cells(work, jobs, run_finetune_cell, finished)
    except BaseException:
        abandon(out)  # a replaced study comes back when no new cell finished
        raise
    finally:
        bar.close()
    metric = next(r["metric"] for r in results.values() if r["model"] in arms)
    models = [*arms, baseline]
    study = write_study(out, spec.to_dict(), dataset, [results[c] for c in cells], models, metric)
    if report:
        study["report"] = str(write_report(out))
    return study


def _plan(plans: dict, cell: Cell, arms: dict[str, Arm]) -> dict:
    return plans[cell.fraction, cell.seed, arms[cell.model].epochs or 0]


def run_finetune_cell(
    cell: Cell,
    root: Path,
    spec,
    plan: dict,
    task: str = "classification",
    keep_models: bool = False,
    arm: Arm | None = None,
) -> dict:
    """Finetune the cell's arm (the pretrained model, its scratch twin, a stability arm) on the cell's
    subset; returns cell.json's dict."""

    cell_dir, start = cell.path(root), time.perf_counter()
    arm = arm or Arm(cell.model, cell.model, from_scratch=cell.model == "scratch")
    flags = {
        "init": spec.run,
        "from_scratch": arm.from_scratch,
        "out": str(cell_dir / "run"),
        "epochs": arm.epochs or spec.epochs,
        "seeds": [cell.seed],
        "breakdown": False,  # a study reports each cell's score; a second test pass would double its cost
        "task": {"name": task, "problem": "single_label"},  # a study's problem: never read from the labels
        "data": {"dataset": spec.dataset, "train_fraction": cell.fraction, "subset_seed": cell.seed},
        "train": {
            "seed": cell.seed,
            "progress": False,
            "steps": plan["steps"],
            "eval_every": plan["eval_every"],
            "save_every": plan["steps"],  # a half-done cell is redone, not resumed: no step checkpoints
        },
    }
    with fresh_cell(cell_dir):
        finetune(None, flags, [*spec.overrides, *arm.overrides], overwrite=True)
    run = cell_dir / "run"
    tm = json.loads((run / "test_metrics.json").read_text())
    curve = [
        {k: v for k, v in r.items() if k not in ("split", "time")} for r in read_metrics(run, "validation")
    ]
    if not keep_models:
        for name in WEIGHTS:
            shutil.rmtree(run / name, ignore_errors=True)
    return finish_cell(
        cell_dir,
        {
            "model": cell.model,
            "fraction": cell.fraction,
            "seed": cell.seed,
            "train_examples": tm["sizes"]["train"],
            "metric": tm["metric"],
            "test": tm["test"],
            "best_validation": tm["best_validation"],
            "best_step": tm["best_step"],
            "steps": tm["steps"],
            "validation_curve": curve,
            "seconds": round(time.perf_counter() - start, 2),
        },
    )
