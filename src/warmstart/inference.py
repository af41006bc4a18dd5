"""Use a finetuned model: `warmstart evaluate` (metrics on a labeled split) and `warmstart predict` (JSONL).

Prediction input is one example per line: a JSON object in the task's record shape, or plain text where the
task allows it (classification: the text; tagging: whitespace-separated words). Extractive QA needs
``{"question", "context"}`` and multiple choice ``{"context", "choices"}`` objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from warmstart.data import readers
from warmstart.data.catalog import DataOptions, open_dataset
from warmstart.errors import WarmstartError
from warmstart.pretrained import load_finetuned
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


def _record(line: str, number: int, kind: str) -> dict:
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


def predict_lines(run: str, lines: Iterable[str], chunk: int = 64) -> Iterator[dict]:
    """One prediction dict per non-empty input line, in order, streaming in chunks."""
    unit, task, tokenizer, labels = load_finetuned(run)
    device = pick_device("auto")
    unit.to(device)
    pending: list[dict] = []

    def flush() -> Iterator[dict]:
        features = task.encode(pending, tokenizer, labels, "the input")
        preds = []
        for batch in features.eval_batches(chunk):
            batch = {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}
            preds += unit.predict(batch)
        for record, pred in zip(pending, preds, strict=True):
            shown = {k: record[k] for k in ("text", "text_pair", "question", "choices") if k in record}
            yield {**shown, **pred}

    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        pending.append(_record(line, number, task.kind))
        if len(pending) == chunk:
            yield from flush()
            pending = []
    if pending:
        yield from flush()
