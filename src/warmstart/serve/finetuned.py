"""A finetuned classification, tagging, extractive QA or multiple-choice model, answering one example."""

from __future__ import annotations

import json
import threading

import torch

from warmstart.checkpoints.load import load_finetuned
from warmstart.checkpoints.predict import parse_record
from warmstart.errors import WarmstartError
from warmstart.tokenization.open_words import reading
from warmstart.train.loop import pick_device


class FinetunedModel:
    """``predict(fields)`` is ``warmstart predict`` on one input line holding ``fields`` as JSON."""

    streams = False

    def __init__(self, run: str):
        self.unit, self.task, self.tokenizer, self.labels = load_finetuned(run)
        self.kind = self.task.name
        self.device = pick_device("auto")
        self.unit.to(self.device)
        self.lock = threading.Lock()

    def info(self) -> dict:
        return {"labels": self.labels}

    def predict(self, fields: dict, deadline: float | None = None) -> dict:
        """The prediction, with the input fields; ``deadline`` is not needed (one forward pass)."""
        try:
            record = parse_record(json.dumps(fields), 1, self.task.kind)
        except WarmstartError as e:  # it speaks of "input line 1"
            raise WarmstartError(e.problem.replace("input line 1", "the input"), e.fix) from None
        with self.lock, torch.no_grad():
            words = reading(self.unit, self.tokenizer, [record])  # ELMo: the characters of new words
            features = self.task.encode([record], words, self.labels, "the input")
            preds = []
            for batch in features.eval_batches(1):
                batch = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in batch.items()}
                preds += self.unit.predict(batch)
        return {**fields, **preds[0]}
