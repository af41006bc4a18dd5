"""Extractive question answering (SQuAD v1.1 / v2.0): predict the answer's start and end token in the context.

The head is Hugging Face's ``BertForQuestionAnswering`` head (``qa_outputs``: one Linear(hidden, 2) on every
token, no dropout), so checkpoints map one to one. Inputs and windows: ``qa_windows``; span decoding and
SQuAD exact match / F1: ``qa_decode``.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.tasks.base import Task
from warmstart.tasks.classification import init_head
from warmstart.tasks.qa_decode import decode, exact_match_score, f1_score
from warmstart.tasks.qa_windows import QAFeatures
from warmstart.tasks.readers import TokenIds, generative, head_std, token_states

# Masked logits: far below any real logit but finite, so the loss and bf16/fp16 arithmetic stay finite.
MASKED = -1e4


class QuestionAnswering(nn.Module):
    """Encoder + start/end head. ``forward(batch) -> (loss, stats)``; in eval mode it also decodes answers.

    The loss is the mean over windows of (CE(start) + CE(end)) / 2, with logits masked outside the context
    except the first token ([CLS], the "no answer in this window" target). In eval mode the stats add
    ``exact_match`` and ``f1`` as (sum, number of examples), computed batch by batch (nothing gathered), so
    the evaluation batches must hold whole examples (``QAFeatures.eval_batches`` does).
    """

    best_metric = ("f1", "max")

    def __init__(self, encoder: nn.Module, n_best: int = 20, max_answer_length: int = 30):
        super().__init__()
        c = encoder.config
        self.encoder = encoder
        self.n_best, self.max_answer_length = n_best, max_answer_length
        self.qa_outputs = nn.Linear(c.hidden_size, 2)
        nn.init.normal_(self.qa_outputs.weight, std=c.initializer_range)
        nn.init.zeros_(self.qa_outputs.bias)

    def logits(self, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """Start and end logits (B, T), float32, masked to ``MASKED`` off the context except position 0."""
        start, end = self.qa_outputs(self.states(batch)).float().unbind(-1)
        allowed = batch["context_mask"].clone()
        allowed[:, 0] = True
        return start.masked_fill(~allowed, MASKED), end.masked_fill(~allowed, MASKED)

    def states(self, batch: dict) -> torch.Tensor:
        return self.encoder(batch["input_ids"], batch.get("attention_mask"), batch.get("token_type_ids"))

    def forward(self, batch: dict):
        start, end = self.logits(batch)
        loss_sum = (
            F.cross_entropy(start, batch["start_positions"], reduction="sum")
            + F.cross_entropy(end, batch["end_positions"], reduction="sum")
        ) / 2
        n = start.shape[0]
        stats = {"loss": (loss_sum.detach(), n)}
        if not self.training:
            predictions = decode(start, end, batch, self.n_best, self.max_answer_length)
            golds = [batch["examples"][e]["answers"] for e in dict.fromkeys(batch["example_index"])]
            exact = sum(exact_match_score(p["answer"], g) for p, g in zip(predictions, golds))
            f1 = sum(f1_score(p["answer"], g) for p, g in zip(predictions, golds))
            stats["exact_match"] = (exact, len(predictions))
            stats["f1"] = (f1, len(predictions))
        return loss_sum / n, stats

    @torch.no_grad()
    def predict(self, batch: dict) -> list[dict]:
        """One answer per example of a batch of whole examples: id, answer, start/end (characters), score.

        Runs in eval mode (no dropout) whatever the unit's mode; a null answer is "" with start = end = -1.
        """
        was_training = self.training
        self.eval()
        try:
            start, end = self.logits(batch)
        finally:
            self.train(was_training)
        return decode(start, end, batch, self.n_best, self.max_answer_length)

    def summarize(self, means: dict) -> dict:
        """Exact match and F1 as percentages (0..100), as SQuAD reports them."""
        out = dict(means)
        for key in ("exact_match", "f1"):
            if key in out:
                out[key] = 100.0 * out[key]
        return out


class ExtractiveQATask(Task):
    """SQuAD-style extractive QA on ``qa`` records (see ``warmstart.tasks.base``); no label names."""

    name = "extractive_qa"
    kind = "qa"
    hf_architecture = "BertForQuestionAnswering"
    hf_head = (("qa_outputs", "qa_outputs"),)
    pipeline_tag = "question-answering"
    peft_task_type = "QUESTION_ANS"
    serve_input = "question"
    served_as = "answer"
    example = 'model.predict([{"question": "Who wrote it?", "context": "It was written by Ada."}])'

    def labels(self, records: list[dict]) -> list[str]:
        return []

    def encode(self, records: list[dict], tokenizer, labels: list[str], where: str) -> QAFeatures:
        """Windows of ``max_length`` tokens overlapping by ``doc_stride`` (see ``qa_windows``). A question
        that would leave fewer than ``doc_stride + 1`` context tokens per window is truncated to fit."""
        cfg = self.cfg
        return QAFeatures(records, tokenizer, cfg.max_length, cfg.doc_stride, where, cfg.null_answers)

    def settle(self, cfg, train: list[dict]):
        return settled_null_answers(cfg, self, train)

    def build(self, encoder: nn.Module, labels: list[str]) -> QuestionAnswering:
        if generative(encoder):
            return DecoderQA(encoder, self.cfg.n_best, self.cfg.max_answer_length, self.token_ids)
        return QuestionAnswering(encoder, self.cfg.n_best, self.cfg.max_answer_length)


def settled_null_answers(cfg, task, train: list[dict]):
    """``cfg`` with task.null_answers decided from the training split when not given (true when a training
    question has no answer), ``task`` and its members (an encoder multitask) reading it: the run saves the
    decision, and evaluation and predict use it. ``cfg`` unchanged for data without questions."""
    questions = [r for r in train if isinstance(r, dict) and "question" in r and "answers" in r]
    if cfg.task.null_answers is not None or not questions:
        return cfg
    answers = [r["answers"] for r in questions]  # a list, or the datasets layout's {"text": [...], ...}
    unanswered = any(not (a.get("text") if isinstance(a, dict) else a) for a in answers)
    settled = dataclasses.replace(cfg.task, null_answers=unanswered)
    task.cfg = settled
    for member in getattr(task, "members", {}).values():
        member.cfg = dataclasses.replace(member.cfg, null_answers=settled.null_answers)
    return dataclasses.replace(cfg, task=settled)


class DecoderQA(QuestionAnswering):
    """The start/end head on a decoder or encoder-decoder ``model`` (tasks/readers.py): GPT-2's states, or
    T5's and BART's decoder fed the shifted input, as their transformers *ForQuestionAnswering."""

    def __init__(self, model: nn.Module, n_best: int, max_answer_length: int, ids: TokenIds):
        nn.Module.__init__(self)
        self.model, self.ids = model, ids
        self.n_best, self.max_answer_length = n_best, max_answer_length
        self.qa_outputs = init_head(nn.Linear(model.config.hidden_size, 2), head_std(model.config))

    def states(self, batch: dict) -> torch.Tensor:
        return token_states(self.model, batch, self.ids)
