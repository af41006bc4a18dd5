"""A finetuned classification, tagging, extractive QA or multiple-choice model, answering one example."""

from __future__ import annotations

import threading

from warmstart.inference.load import SavedModel
from warmstart.inference.predict import Predictor
from warmstart.inference.records import check_record


class FinetunedModel:
    """``predict(fields)`` is ``warmstart predict`` on one input holding ``fields``; ``task`` is the served
    task's name."""

    streams = False

    def __init__(self, saved: SavedModel):
        self.finetuned = saved.finetuned  # (unit, task, tokenizer, labels)
        self.predictor = Predictor(self.finetuned, batch_size=1)  # on CUDA when there is one
        self.task, self.labels = self.finetuned.task.name, self.finetuned.labels
        self.lock = threading.Lock()

    def info(self) -> dict:
        return {"labels": self.labels}

    def predict(self, fields: dict, deadline: float | None = None) -> dict:
        """The prediction, with the input fields; ``deadline`` is not needed (one forward pass)."""
        record = check_record(fields, 1, self.finetuned.task.kind, "the input")
        with self.lock:
            return {**fields, **self.predictor.outputs([record])[0]}
