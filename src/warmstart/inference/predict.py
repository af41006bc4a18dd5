"""Predictions of a finetuned model: records in, one prediction dict per record out (`warmstart predict`,
``Model.predict``, `warmstart serve`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from warmstart.data import compressed
from warmstart.data.dataset import DataOptions
from warmstart.data.readers import read_file
from warmstart.errors import WarmstartError
from warmstart.inference.load import Finetuned, SavedModel
from warmstart.inference.records import check_record, parse_record, run_columns
from warmstart.tokenization.open_words import reading
from warmstart.train.loop import pick_device

TABLES = (".csv", ".tsv", ".parquet")  # `predict --input` reads these by column, other files by line


def _size(record: dict) -> int:
    """Characters of an input record's texts: the order the rows are encoded in (the batches then group
    rows by their length in tokens, which characters follow only loosely: 30% more padding on
    rotten-tomatoes' snippets)."""
    return sum(len(v) if isinstance(v, str) else len(" ".join(map(str, v))) if isinstance(v, list) else 0
               for v in record.values())  # fmt: skip


def _plain(value):
    """``value`` with tuples as lists and keys as strings, as JSON holds it."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


class Predictor:
    """A finetuned model (``SavedModel.finetuned``), moved to ``device``, that predicts records: dicts with
    the task's keys ({"text"}, {"text", "text_pair"}, {"question", "context"}, {"context", "choices"},
    {"tokens"})."""

    def __init__(
        self, model: Finetuned, batch_size: int = 64, device: str = "auto", dtype=None, columns=None
    ):
        self.unit, self.task, self.tokenizer, self.labels = model
        self.columns = columns  # the run's own column names (its card): read as the task's keys
        self.device = pick_device(device)  # auto: CUDA when there is one
        self.unit.to(self.device, dtype)  # dtype: a torch float dtype, or None to keep float32
        self.batch_size = batch_size

    @classmethod
    def of(cls, saved: SavedModel, **kwargs) -> Predictor:
        """The predictor of a saved finetuned model, reading inputs by the column names it was trained on."""
        return cls(saved.finetuned, columns=saved.card.columns, **kwargs)

    def record(self, item, number: int, where: str | None = None) -> dict:
        """An input item (a string, a dict, or a JSON line) as a checked record; errors name ``where``."""
        if isinstance(item, dict):
            return check_record(_plain(item), number, self.task.kind, where, self.columns)
        return parse_record(str(item), number, self.task.kind, where, self.columns)

    def predict(self, records: list[dict]) -> list[dict]:
        """One prediction per record, in order, with the record's texts."""
        out = []
        for record, pred in zip(records, self.outputs(records), strict=True):
            shown = {k: record[k] for k in ("text", "text_pair", "question", "choices") if k in record}
            out.append({**shown, **pred})
        return out

    def outputs(self, records: list[dict]) -> list[dict]:
        """The model's output for each record, in order: batched by size (less padding), no autograd graph."""
        import torch

        order = sorted(range(len(records)), key=lambda i: _size(records[i]))
        ordered = [records[i] for i in order]
        words = reading(self.unit, self.tokenizer, ordered)  # ELMo: the characters of new words
        features = self.task.encode(ordered, words, self.labels, "the input")
        preds = [None] * len(records)
        in_order = iter(order)  # examples of several rows (QA windows) come in the characters' order
        with torch.inference_mode():
            for rows, batch in features.prediction_batches(self.batch_size):  # similar lengths in tokens
                batch = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in batch.items()}
                got = self.unit.predict(batch)
                where = in_order if rows is None else (order[r] for r in rows)
                for pred, i in zip(got, where, strict=rows is not None):
                    preds[i] = pred
        return preds


def predict_lines(
    run: str, lines: Iterable[str], chunk: int = 512, batch_size: int = 64, head: str | None = None
) -> Iterator[dict]:
    """One prediction dict per non-empty input line, in order, streaming in chunks of ``chunk`` lines;
    ``head``: the head of a multitask encoder that predicts."""
    predictor = Predictor.of(SavedModel(run, use="predicting with", head=head), batch_size=batch_size)
    numbered = ((n, line) for n, line in enumerate(lines, 1) if line.strip())
    yield from _chunks(predictor, (predictor.record(line, n) for n, line in numbered), chunk)


def is_table(path: str) -> bool:
    """Whether ``path`` is a CSV, TSV or Parquet file (compressed or not): rows with named columns."""
    return compressed.kind(path) in TABLES


def predict_table(
    run: str,
    path: str,
    text_column: str | None = None,
    text_pair_column: str | None = None,
    chunk: int = 512,
    head: str | None = None,
) -> TablePredictions:
    """One prediction dict per row of a CSV, TSV or Parquet file with a non-empty text, in order; the
    columns read: those named, else the ones the run was finetuned with (its card), else "text"."""
    return TablePredictions(run, path, text_column, text_pair_column, chunk, head)


class TablePredictions:
    """``predict_table``'s predictions, iterated; ``len()`` counts them (the file read once more, nothing
    kept), a progress bar's total, so it shows the time left."""

    def __init__(self, run: str, path: str, text_column, text_pair_column, chunk: int, head: str | None):
        saved = SavedModel(run, use="predicting with", head=head)
        self.predictor, self.path, self.chunk = Predictor.of(saved), path, chunk
        if self.predictor.task.kind not in ("labeled", "seq2seq"):
            raise WarmstartError(
                f"{path} is a table, but this {self.predictor.task.name} model reads JSON objects",
                'give a .jsonl file, one object a line, e.g. {"question": ..., "context": ...}',
            )
        asked = DataOptions(text_column=text_column, text_pair_column=text_pair_column)
        self.columns = run_columns(asked, saved.card.columns, self.predictor.task)

    def rows(self) -> Iterator[dict]:
        c = self.columns
        return read_file(self.path, text_column=c.text_column, text_pair_column=c.text_pair_column)

    def __len__(self) -> int:
        return sum(1 for _ in self.rows())

    def __iter__(self) -> Iterator[dict]:
        records = (self.predictor.record(row, n) for n, row in enumerate(self.rows(), 1))
        yield from _chunks(self.predictor, records, self.chunk)


def _chunks(predictor: Predictor, records: Iterable[dict], chunk: int) -> Iterator[dict]:
    pending: list[dict] = []
    for record in records:
        pending.append(record)
        if len(pending) == chunk:
            yield from predictor.predict(pending)
            pending = []
    if pending:
        yield from predictor.predict(pending)
