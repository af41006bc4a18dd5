"""A finetuned classification, tagging, extractive QA or multiple-choice model, answering one example."""

from __future__ import annotations

import threading

from warmstart.inference.load import SavedModel
from warmstart.inference.predict import Predictor
from warmstart.inference.records import check_record


class FinetunedModel:
    """``predict(fields)`` is ``warmstart predict`` on one input holding ``fields``."""

    streams = False

    def __init__(self, saved: SavedModel):
        self.predictor = Predictor(saved.finetuned, batch_size=1)  # on CUDA when there is one
        self.unit, self.task, self.tokenizer, self.labels = saved.finetuned
        self.kind = self.task.name
        self.lock = threading.Lock()

    def info(self) -> dict:
        return {"labels": self.labels}

    def predict(self, fields: dict, deadline: float | None = None) -> dict:
        """The prediction, with the input fields; ``deadline`` is not needed (one forward pass)."""
        record = check_record(fields, 1, self.task.kind, "the input")
        with self.lock:
            return {**fields, **self.predictor.outputs([record])[0]}
