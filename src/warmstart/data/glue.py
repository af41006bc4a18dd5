"""The GLUE tasks as records: from a local ``glue_data/`` folder in the original TSV layout (what
``download_glue_data.py`` writes), or from the hub, ``hf:nyu-mll/glue`` (the `datasets` library).

Each task reads its train split and its dev split(s) (the test TSVs hold no labels): CoLA's TSVs have no
header and 4 columns (source, label, original label, sentence); SST-2 ``sentence, label``; MRPC ``Quality,
#1 ID, #2 ID, #1 String, #2 String``; STS-B 10 columns ending ``sentence1, sentence2, score``; QQP
``id, qid1, qid2, question1, question2, is_duplicate``; MNLI ``... sentence1, sentence2, ..., gold_label``
with ``dev_matched`` and ``dev_mismatched``; QNLI ``index, question, sentence, label``; RTE and WNLI
``index, sentence1, sentence2, label``. A record is {"text", "text_pair"?, "label"}: the label as its text
("1", "entailment") or, for STS-B, the score as a float.
"""

from __future__ import annotations

import csv
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from warmstart.data.hf_hub import OFFLINE, hf_offline, no_hub, offline_flags
from warmstart.errors import WarmstartError

HUB = "hf:nyu-mll/glue"


@dataclass(frozen=True)
class GlueTask:
    """Where one task's TSVs are and which columns hold what (a column name, or an index without header);
    ``hub``: the same columns in the hub's copy; ``dev``: the dev files, and the hub's splits for them;
    ``named``: the TSVs' labels are the hub's class names ("entailment"), not their indices ("0", "1")."""

    folder: str
    text: str | int
    pair: str | int | None
    label: str | int
    hub: tuple[str, str | None]
    dev: tuple[tuple[str, str], ...] = (("dev", "validation"),)
    regression: bool = False
    named: bool = False


TASKS = {
    "cola": GlueTask("CoLA", 3, None, 1, ("sentence", None)),
    "sst2": GlueTask("SST-2", "sentence", None, "label", ("sentence", None)),
    "mrpc": GlueTask("MRPC", "#1 String", "#2 String", "Quality", ("sentence1", "sentence2")),
    "stsb": GlueTask("STS-B", "sentence1", "sentence2", "score", ("sentence1", "sentence2"), regression=True),
    "qqp": GlueTask("QQP", "question1", "question2", "is_duplicate", ("question1", "question2")),
    "mnli": GlueTask(
        "MNLI",
        "sentence1",
        "sentence2",
        "gold_label",
        ("premise", "hypothesis"),
        dev=(("dev_matched", "validation_matched"), ("dev_mismatched", "validation_mismatched")),
        named=True,
    ),  # fmt: skip
    "qnli": GlueTask("QNLI", "question", "sentence", "label", ("question", "sentence"), named=True),
    "rte": GlueTask("RTE", "sentence1", "sentence2", "label", ("sentence1", "sentence2"), named=True),
    "wnli": GlueTask("WNLI", "sentence1", "sentence2", "label", ("sentence1", "sentence2")),
}


def task_names(text: str | None) -> list[str]:
    """The tasks of ``--tasks cola,sst2`` (None or "all": every task), checked."""
    if not text or text.strip() == "all":
        return list(TASKS)
    names = [n.strip().lower().replace("-", "") for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in TASKS]
    if unknown or not names:
        raise WarmstartError(
            f"--tasks: unknown GLUE task {', '.join(unknown) or '(none given)'}",
            f"pick from {', '.join(TASKS)}, e.g. --tasks cola,sst2",
        )
    return list(dict.fromkeys(names))


def read_task(source: str, name: str) -> dict[str, list[dict]]:
    """{"train": records, "dev" (or "dev_matched", "dev_mismatched"): records} of task ``name`` from a
    glue_data folder or the hub (``source`` = hf:nyu-mll/glue)."""
    task = TASKS[name]
    if source.startswith("hf:"):
        return _from_hub(source, name, task)
    root = Path(source)
    if not root.is_dir():
        raise WarmstartError(
            f"--glue-dir {source} is not a folder",
            "pass the glue_data folder (CoLA/, SST-2/, ... with their TSVs), or hf:nyu-mll/glue",
        )
    files = {"train": "train", **{dev: dev for dev, _ in task.dev}}
    return {split: _read_tsv(root / task.folder / f"{file}.tsv", task) for split, file in files.items()}


def _read_tsv(path: Path, task: GlueTask) -> list[dict]:
    if not path.is_file():
        raise WarmstartError(
            f"{path} not found", f"--glue-dir needs {task.folder}/{path.name} in the original GLUE layout"
        )
    with open(path, encoding="utf-8-sig", newline="") as fh:  # MRPC's TSVs start with a byte-order mark
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    if isinstance(task.text, str):
        header, rows = (rows[0] if rows else []), rows[1:]
        where = {c: i for i, c in enumerate(header)}
        wanted = [c for c in (task.text, task.pair, task.label) if c is not None]
        missing = [c for c in wanted if c not in where]
        if missing:
            raise WarmstartError(
                f"{path} has no column {', '.join(missing)} (its header: {', '.join(header[:12]) or 'none'})",
                f"use the original GLUE TSV of {task.folder}",
            )
        columns = [where[c] if c is not None else None for c in (task.text, task.pair, task.label)]
    else:
        columns = [task.text, task.pair, task.label]
    records, skipped = [], 0
    for number, row in enumerate(rows, start=2 if isinstance(task.text, str) else 1):
        if len(row) <= max(c for c in columns if c is not None) or not row[columns[2]].strip():
            skipped += 1  # QQP's train.tsv has a few broken rows; MNLI's gold label may be missing
            continue
        records.append(_record(row[columns[0]], row[columns[1]] if columns[1] is not None else None,
                               row[columns[2]], task, f"{path} line {number}"))  # fmt: skip
    if skipped:
        print(f"{path}: {skipped} row(s) without all columns skipped", file=sys.stderr)
    if not records:
        raise WarmstartError(f"{path} has no labeled rows", f"use the original GLUE TSV of {task.folder}")
    return records


def _record(text: str, pair: str | None, label, task: GlueTask, where: str) -> dict:
    record: dict = {"text": text}
    if pair is not None:
        record["text_pair"] = pair
    if task.regression:
        try:
            record["label"] = float(label)
        except ValueError:
            raise WarmstartError(f"{where}: score {label!r} is not a number", "fix or drop the row") from None
    else:
        record["label"] = str(label).strip()
    return record


def _from_hub(source: str, name: str, task: GlueTask) -> dict[str, list[dict]]:
    """The task from the Hugging Face hub (or the `datasets` cache); offline: one line."""
    repo = source.removeprefix("hf:")
    try:
        import datasets
    except ImportError:
        raise WarmstartError(
            f"{source} needs the 'datasets' package, which is not installed",
            "pip install 'warmstart[hf]', or pass --glue-dir a local glue_data folder",
        ) from None
    hub_log = logging.getLogger("huggingface_hub")  # its retries, one line each, stay quiet: ours says it
    level = hub_log.level
    hub_log.setLevel(logging.CRITICAL)
    try:
        offline = hf_offline(*OFFLINE) or no_hub(source, repo)  # set after `datasets` was imported counts too
        with offline_flags(datasets, offline):
            loaded = datasets.load_dataset(repo, name)
    except Exception as exc:  # offline, unknown name: one clear line
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise WarmstartError(
            f"could not load {source} ({name}): {reason}",
            "check your network, or pass --glue-dir a local glue_data folder (download_glue_data.py)",
        ) from None
    finally:
        hub_log.setLevel(level)
    text, pair = task.hub
    splits = {"train": "train", **{dev: hub for dev, hub in task.dev}}
    out = {}
    for split, hub_split in splits.items():
        rows = loaded[hub_split]
        label = _hub_label(task, rows.features["label"])
        out[split] = [
            _record(row[text], row[pair] if pair else None, label(row["label"]), task, f"{source} {name}")
            for row in rows
            if row["label"] != -1  # the test splits: no labels
        ]
    return out


def _hub_label(task: GlueTask, feature):
    """The hub's label as the TSVs write it: a class index as "0"/"1", or its name where the TSVs use names
    (MNLI, QNLI, RTE); STS-B's float32 score as its shortest decimal (4.3, as the TSV's "4.300" reads)."""
    if task.regression:
        return lambda value: float(str(np.float32(value)))
    if task.named:
        return lambda value: feature.names[value]
    return str
