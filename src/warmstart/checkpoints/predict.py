"""Use a finetuned model: `warmstart evaluate` (metrics on a labeled split) and `warmstart predict` (JSONL).

Prediction input is one example per line: a JSON object in the task's record shape, or plain text where the
task allows it (classification: the text; tagging: whitespace-separated words). Extractive QA needs
``{"question", "context"}`` and multiple choice ``{"context", "choices"}`` objects.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from warmstart.checkpoints.load import load_finetuned
from warmstart.data import readers
from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError
from warmstart.tasks.base import EvalBatches
from warmstart.train.loop import evaluate, pick_device


def evaluate_run(run: str, dataset: str, split: str = "test", options: DataOptions | None = None) -> dict:
    """Metrics of the run's selected model on one split of a dataset (labels must be ones it knows)."""
    unit, task, tokenizer, labels = load_finetuned(run)
    data = open_dataset(dataset, options or DataOptions())
    if data.kind != task.kind:
        raise WarmstartError(
            f"{dataset} is a {data.kind} dataset but the model was finetuned for {task.name}",
            f"evaluate it on a {task.kind} dataset",
        )
    records = list(data.records(split))
    if not records:
        raise WarmstartError(f"the {split} split of {dataset} is empty", "pick another split or dataset")
    features = task.encode(records, tokenizer, labels, f"{dataset} ({split})")
    metrics = evaluate(unit, EvalBatches(features, 64), pick_device("auto"))
    return {"metrics": metrics, "examples": len(records), "dataset": dataset, "split": split}


TEXT_KEYS = ("text", "text_pair", "question", "context")
LIST_KEYS = ("tokens", "choices")


def parse_record(line: str, number: int, kind: str) -> dict:
    line = line.strip()
    if line.startswith("{"):
        obj = readers._json_object(line, "the input", number)  # one clear line for bad JSON or a non-object
    elif kind in ("labeled", "tagging", "seq2seq"):
        obj = {"text": line}
    else:
        raise WarmstartError(
            f"input line {number} is plain text, but this model needs JSON objects",
            'write lines like {"question": ..., "context": ...} (QA) or {"context": ..., "choices": [...]}',
        )
    for key, value in obj.items():
        texts = isinstance(value, list) and all(isinstance(x, str) for x in value)
        if (key in TEXT_KEYS and not isinstance(value, str)) or (key in LIST_KEYS and not texts):
            must = "a string" if key in TEXT_KEYS else "a list of strings"
            raise WarmstartError(
                f"input line {number}: '{key}' must be {must}, got {json.dumps(value)[:60]}",
                'e.g. {"text": "a review"}, {"tokens": ["New", "York"]}, {"choices": ["yes", "no"]}',
            )
    if kind == "tagging":
        tokens = obj.get("tokens") or str(obj.get("text", "")).split()
        obj = {**obj, "tokens": tokens, "text": " ".join(tokens), "tags": ["O"] * len(tokens)}
    elif kind == "qa":
        if "question" not in obj or "context" not in obj:
            raise WarmstartError(f"input line {number} lacks question or context", "give both keys")
        obj = {"id": str(number), "answers": [], **obj, "text": obj["context"]}
    elif kind == "choice":
        if "choices" not in obj:
            raise WarmstartError(f"input line {number} has no choices", 'add "choices": [...]')
        obj = {**obj, "text": obj.get("context", obj.get("text", "")), "label": 0}
    if not str(obj.get("text", "")).strip():
        raise WarmstartError(f"input line {number} has no text", "remove empty lines or fill them in")
    return obj


def _size(record: dict) -> int:
    """Characters of an input record's texts: the batching key (tokens follow characters closely)."""
    return sum(len(v) if isinstance(v, str) else len(" ".join(map(str, v))) if isinstance(v, list) else 0
               for v in record.values())  # fmt: skip


def predict_lines(run: str, lines: Iterable[str], chunk: int = 512, batch_size: int = 64) -> Iterator[dict]:
    """One prediction dict per non-empty input line, in order, streaming in chunks of ``chunk`` lines.

    Within a chunk the examples are batched by size (less padding) and the answers put back in input order;
    no autograd graph is built."""
    import torch

    unit, task, tokenizer, labels = load_finetuned(run)
    device = pick_device("auto")
    unit.to(device)
    pending: list[dict] = []

    def flush() -> Iterator[dict]:
        order = sorted(range(len(pending)), key=lambda i: _size(pending[i]))
        features = task.encode([pending[i] for i in order], tokenizer, labels, "the input")
        preds = [None] * len(pending)
        done = iter(order)
        with torch.inference_mode():
            for batch in features.eval_batches(batch_size):
                batch = {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}
                for pred in unit.predict(batch):
                    preds[next(done)] = pred
        for record, pred in zip(pending, preds, strict=True):
            shown = {k: record[k] for k in ("text", "text_pair", "question", "choices") if k in record}
            yield {**shown, **pred}

    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        pending.append(parse_record(line, number, task.kind))
        if len(pending) == chunk:
            yield from flush()
            pending = []
    if pending:
        yield from flush()
