"""`warmstart evaluate-suite glue`: finetune a pretrained run on each GLUE task and score it with the task's
official metric (tasks/glue_metrics.py), then one table with the average.

Each task is read (data/glue.py) before anything is trained, so a missing file costs nothing. Its train
split is split once: the last tenth (at least one row) is the validation split the finetune picks its best
model on, the rest is trained on; the dev split(s) are scored, as GLUE's test labels are not public. The
finetunes are ordinary finetune runs, ``OUT/TASK`` (finetune's flags and KEY=VALUE overrides apply to each);
the predictions on each dev split are in ``OUT/predictions/TASK-DEV.jsonl``, the scores in ``OUT/suite.json``
and the table in ``OUT/suite.md``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from warmstart.commands.finetune import finetune
from warmstart.data.glue import TASKS, read_task, task_names
from warmstart.inference.load import SavedModel
from warmstart.inference.predict import Predictor
from warmstart.paths import refuse_overlap
from warmstart.tasks.glue_metrics import METRICS, score, task_score
from warmstart.train.checkpoint import write_json
from warmstart.train.rundir import check_free, open_run_dir, settle

TITLES = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "stsb": "STS-B", "qqp": "QQP", "mnli": "MNLI",
          "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI"}  # fmt: skip


def evaluate_glue(
    init: str,
    source: str,
    out: str,
    tasks: str | None = None,
    flags: dict | None = None,
    overrides=(),
    overwrite: bool = False,
) -> dict:
    """{"tasks": {task: {"dev": {split: {metric: value}}, "score": value}}, "average", "table", "run_dir"}."""
    names = task_names(tasks)
    check_free(out, overwrite)
    refuse_overlap(out, {"--init": init, "--glue-dir": None if source.startswith("hf:") else source})
    data = {name: read_task(source, name) for name in names}  # every task read before any is trained
    root = open_run_dir(out, overwrite=overwrite, what="suite")
    results = {}
    for name in names:
        print(f"{TITLES[name]}: finetuning on {len(data[name]['train']):,} examples", file=sys.stderr)
        run_dir = _finetuned(name, data[name], init, root, flags or {}, overrides)
        dev = {split: rows for split, rows in data[name].items() if split != "train"}
        scores = {split: _scored(name, split, rows, run_dir, root) for split, rows in dev.items()}
        results[name] = {"dev": scores, "score": task_score(scores)}
        write_json({"init": init, "source": source, "tasks": results}, root / "suite.json")
    average = sum(r["score"] for r in results.values()) / len(results)
    summary = {"init": init, "source": source, "tasks": results, "average": average}
    write_json(summary, root / "suite.json")
    settle(root)  # --overwrite: the results are saved, the replaced directory can go
    text = table(results, average)
    (root / "suite.md").write_text(text + "\n", encoding="utf-8")
    return {**summary, "table": text, "run_dir": str(root)}


def _finetuned(name: str, data: dict, init: str, root: Path, flags: dict, overrides) -> Path:
    """Finetune ``init`` on the task (train minus its last tenth; that tenth is validation): its run."""
    train = data["train"]
    cut = len(train) - max(1, len(train) // 10)
    first_dev = next(split for split in data if split != "train")
    files = {}
    for split, rows in (("train", train[:cut]), ("validation", train[cut:]), ("test", data[first_dev])):
        path = root / "data" / name / f"{split}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        files[f"{split}_file"] = str(path)
    pair = {"text_pair_column": "text_pair"} if TASKS[name].pair is not None else {}
    given = json.loads(json.dumps(flags))  # a copy: each task gets its own
    settings = {
        **given,
        "init": init,
        "out": str(root / name),
        "breakdown": False,
        "data": {**given.get("data", {}), **files, **pair},
        "task": {**given.get("task", {}), "name": "classification",
                 "problem": "regression" if TASKS[name].regression else "single_label"},
    }  # fmt: skip
    result = finetune(None, settings, overrides)
    return Path(result["run_dir"])


def _scored(name: str, split: str, rows: list[dict], run_dir: Path, root: Path) -> dict[str, float]:
    """The task's official metrics of the run's best model on one dev split (its predictions saved)."""
    predictor = Predictor(SavedModel(run_dir, prefer="best", use="scoring with").finetuned)
    inputs = [{k: r[k] for k in ("text", "text_pair") if k in r} for r in rows]
    outputs = predictor.outputs(inputs)
    key = "score" if TASKS[name].regression else "label"
    predicted = [o[key] for o in outputs]
    gold = [r["label"] for r in rows]
    path = root / "predictions" / f"{name}-{split}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (json.dumps({"gold": g, "predicted": p}) + "\n" for g, p in zip(gold, predicted, strict=True))
    path.write_text("".join(lines), encoding="utf-8")
    return score(name, gold, predicted)


def table(results: dict, average: float) -> str:
    """The markdown table: one row per task and dev split, the metrics x 100, then the average."""
    lines = ["| task | metric | score |", "|---|---|---|"]
    for name, result in results.items():
        for split, metrics in result["dev"].items():
            title = TITLES[name] + {"dev_matched": "-m", "dev_mismatched": "-mm"}.get(split, "")
            shown = " / ".join(f"{100 * metrics[m]:.2f}" for m in METRICS[name])
            lines.append(f"| {title} | {' / '.join(METRICS[name])} | {shown} |")
    lines.append(f"| average | | {100 * average:.2f} |")
    return "\n".join(lines)
