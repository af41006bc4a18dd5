"""`warmstart evaluate`: the metrics of a finetuned model on a labeled split."""

from __future__ import annotations

import sys
from pathlib import Path

from warmstart.data.catalog import open_data, open_dataset, shown
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError
from warmstart.inference.load import SavedModel
from warmstart.inference.records import run_columns
from warmstart.tasks.base import EvalBatches
from warmstart.tasks.breakdown import counting
from warmstart.tokenization.open_words import reading
from warmstart.train.loop import evaluate, pick_device


def evaluate_run(
    run: str,
    dataset: str | None,
    split: str = "test",
    options: DataOptions | None = None,
    files: dict[str, str] | None = None,
    head: str | None = None,
    split_given: bool = True,
) -> dict:
    """Metrics of the run's selected model on one split of a dataset (labels must be ones it knows).
    ``files`` are own split files ({split: file}): the file of ``split``, when given, is read whole; the
    others make the splits as finetuning made them (data/split_files.py); ``head``: the head of a multitask
    encoder evaluated (checkpoints/head_view.py)."""
    saved = SavedModel(run, use="evaluating", head=head)
    unit, task, tokenizer, labels = saved.finetuned
    options = run_columns(options or DataOptions(), saved.card.columns, task)
    files = {s: f for s, f in (files or {}).items() if f}
    if not dataset and not files:
        raise WarmstartError("no data given", "pass --data NAME_FILE_OR_DIR, or --test-file FILE")
    if split in files:  # the split evaluated, as its own file
        name, data, part = files[split], open_dataset(files[split], options), "all"
    else:
        name, data, part = dataset or files.get("train", ""), open_data(dataset or "", files, options), split
    name = shown(name)
    if not task.accepts(data.kind):
        raise WarmstartError(
            f"{name} is a {data.kind} dataset but the model was finetuned for {task.name}",
            f"evaluate it on a {' or '.join(task.kinds or (task.kind,))} dataset",
        )
    if data.origin:
        print(data.origin, file=sys.stderr)
    records = list(data.records(part))
    if not records:
        raise WarmstartError(f"the {split} split of {name} is empty", "pick another split or dataset")
    if not split_given and part != "all" and not data.has_splits and Path(data.source).is_file():
        total = data.counts()["all"]  # one file of rows: its test split is carved, as finetuning carves it
        print(
            f"{name} has no splits of its own: scored its {split} split, carved by hash as finetuning on it"
            f" would ({len(records):,} of {total:,} rows); --{split}-file {name} scores every row",
            file=sys.stderr,
        )
    records = task.prepare(records, data.kind, f"{name} ({split})")
    features = task.encode(records, reading(unit, tokenizer, records), labels, f"{name} ({split})")
    device = pick_device("auto")
    with counting(unit) as confusion:  # per class in the same pass (None: not a single-label unit)
        metrics = evaluate(unit, EvalBatches(features, 64), device, shown="evaluating")
    result = {"metrics": metrics, "examples": len(records), "dataset": name, "split": split}
    if confusion is not None:
        result["breakdown"] = confusion.summary()
    return result
