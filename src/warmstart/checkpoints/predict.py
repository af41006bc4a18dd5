"""Use a finetuned model: `warmstart evaluate` (metrics on a labeled split) and `warmstart predict` (JSONL).

Prediction input is one example per line: a JSON object in the task's record shape, or plain text where the
task allows it (classification: the text; tagging: whitespace-separated words). Extractive QA needs
``{"question", "context"}`` and multiple choice ``{"context", "choices"}`` objects.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator

from warmstart.checkpoints.load import load_finetuned
from warmstart.data import readers
from warmstart.data.catalog import open_data, open_dataset, shown
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError
from warmstart.tasks.base import EvalBatches
from warmstart.tokenization.open_words import reading
from warmstart.train.loop import evaluate, pick_device


def evaluate_run(
    run: str,
    dataset: str | None,
    split: str = "test",
    options: DataOptions | None = None,
    files: dict[str, str] | None = None,
) -> dict:
    """Metrics of the run's selected model on one split of a dataset (labels must be ones it knows).
    ``files`` are own split files ({split: file}): the file of ``split``, when given, is read whole; the
    others make the splits as finetuning made them (data/split_files.py)."""
    unit, task, tokenizer, labels = load_finetuned(run, use="evaluating")
    options = options or DataOptions()
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
    records = task.prepare(records, data.kind, f"{name} ({split})")
    features = task.encode(records, reading(unit, tokenizer, records), labels, f"{name} ({split})")
    metrics = evaluate(unit, EvalBatches(features, 64), pick_device("auto"))
    return {"metrics": metrics, "examples": len(records), "dataset": name, "split": split}


TEXT_KEYS = ("text", "text_pair", "question", "context")
LIST_KEYS = ("tokens", "choices")


def parse_record(line: str, number: int, kind: str, where: str | None = None) -> dict:
    """One input (a JSON object or plain text) as a record of the task's ``kind``; errors name ``where``
    (the Python API's ``inputs[3]``), else the input line ``number``."""
    at = where or f"input line {number}"
    line = line.strip()
    if line.startswith("{"):
        obj = readers._json_object(line, "the input", number)  # one clear line for bad JSON or a non-object
    elif kind in ("labeled", "tagging", "seq2seq"):
        obj = {"text": line}
    else:
        raise WarmstartError(
            f"{at} is plain text, but this model needs JSON objects",
            'write lines like {"question": ..., "context": ...} (QA) or {"context": ..., "choices": [...]}',
        )
    for key, value in obj.items():
        texts = isinstance(value, list) and all(isinstance(x, str) for x in value)
        if (key in TEXT_KEYS and not isinstance(value, str)) or (key in LIST_KEYS and not texts):
            must = "a string" if key in TEXT_KEYS else "a list of strings"
            raise WarmstartError(
                f"{at}: '{key}' must be {must}, got {json.dumps(value)[:60]}",
                'e.g. {"text": "a review"}, {"tokens": ["New", "York"]}, {"choices": ["yes", "no"]}',
            )
    if kind == "tagging":
        tokens = obj.get("tokens") or str(obj.get("text", "")).split()
        obj = {**obj, "tokens": tokens, "text": " ".join(tokens), "tags": ["O"] * len(tokens)}
    elif kind == "qa":
        if "question" not in obj or "context" not in obj:
            raise WarmstartError(f"{at} lacks question or context", "give both keys")
        obj = {"id": str(number), "answers": [], **obj, "text": obj["context"]}
    elif kind == "choice":
        if "choices" not in obj:
            raise WarmstartError(f"{at} has no choices", 'add "choices": [...]')
        obj = {**obj, "text": obj.get("context", obj.get("text", "")), "label": 0}
    if not str(obj.get("text", "")).strip():
        raise WarmstartError(f"{at} has no text", "remove empty lines or fill them in")
    return obj


def _size(record: dict) -> int:
    """Characters of an input record's texts: the batching key (tokens follow characters closely)."""
    return sum(len(v) if isinstance(v, str) else len(" ".join(map(str, v))) if isinstance(v, list) else 0
               for v in record.values())  # fmt: skip


class Predictor:
    """A finetuned model (RUN/best, or a model directory) that predicts records: dicts with the task's keys
    ({"text"}, {"text", "text_pair"}, {"question", "context"}, {"context", "choices"}, {"tokens"})."""

    def __init__(self, run: str, batch_size: int = 64, device: str = "auto", dtype=None):
        self.unit, self.task, self.tokenizer, self.labels = load_finetuned(run, use="predicting with")
        self.device = pick_device(device)  # auto: CUDA when there is one
        self.unit.to(self.device, dtype)  # dtype: a torch float dtype, or None to keep float32
        self.batch_size = batch_size

    def record(self, item, number: int, where: str | None = None) -> dict:
        """An input item (a string, a dict, or a JSON line) as a checked record; errors name ``where``."""
        if isinstance(item, dict):
            return parse_record(json.dumps(item, ensure_ascii=False), number, self.task.kind, where)
        return parse_record(str(item), number, self.task.kind, where)

    def predict(self, records: list[dict]) -> list[dict]:
        """One prediction per record, in order: batched by size (less padding), no autograd graph."""
        import torch

        order = sorted(range(len(records)), key=lambda i: _size(records[i]))
        ordered = [records[i] for i in order]
        words = reading(self.unit, self.tokenizer, ordered)  # ELMo: the characters of new words
        features = self.task.encode(ordered, words, self.labels, "the input")
        preds = [None] * len(records)
        done = iter(order)
        with torch.inference_mode():
            for batch in features.eval_batches(self.batch_size):
                batch = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in batch.items()}
                for pred in self.unit.predict(batch):
                    preds[next(done)] = pred
        out = []
        for record, pred in zip(records, preds, strict=True):
            shown = {k: record[k] for k in ("text", "text_pair", "question", "choices") if k in record}
            out.append({**shown, **pred})
        return out


def predict_lines(run: str, lines: Iterable[str], chunk: int = 512, batch_size: int = 64) -> Iterator[dict]:
    """One prediction dict per non-empty input line, in order, streaming in chunks of ``chunk`` lines."""
    predictor = Predictor(run, batch_size)
    pending: list[dict] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        pending.append(parse_record(line, number, predictor.task.kind))
        if len(pending) == chunk:
            yield from predictor.predict(pending)
            pending = []
    if pending:
        yield from predictor.predict(pending)
