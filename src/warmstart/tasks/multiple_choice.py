"""Multiple choice (SWAG style): one score per (context, choice) pair, softmax over the choices.

Each choice is encoded as ``[CLS] context [SEP] choice [SEP]`` (with a passage, ``[CLS] passage [SEP]
question choice [SEP]``, as BERT's RACE baselines); a Linear(hidden, 1) on its [CLS] state (or, as
``task.pooling`` says, the mean state or BERT's pooled output tanh(dense([CLS])), which transformers'
*ForMultipleChoice reads: such runs export to it) gives its score, and cross-entropy over the example's scores
trains it. Examples may have different numbers of
choices: missing ones are padded and masked out of the softmax.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.errors import WarmstartError
from warmstart.nn.dropout import Dropout
from warmstart.tasks.base import Features, Task, encoder_inputs
from warmstart.tasks.classification import check_pooling, init_head, pooled


class ChoiceScorer(nn.Module):
    best_metric = ("accuracy", "max")

    def __init__(self, encoder: nn.Module, pooling: str = "cls"):
        super().__init__()
        c = encoder.config
        check_pooling(encoder, pooling)
        self.encoder, self.pooling = encoder, pooling
        self.drop = Dropout(c.hidden_dropout_prob)
        self.scorer = init_head(nn.Linear(c.hidden_size, 1), c.initializer_range)

    def scores(self, batch: dict) -> torch.Tensor:
        b, k, t = batch["input_ids"].shape
        flat = {n: batch[n].reshape(b * k, t) for n in ("input_ids", "attention_mask", "token_type_ids")}
        hidden = self.encoder(flat["input_ids"], flat["attention_mask"], flat["token_type_ids"])
        vectors = pooled(self.encoder, hidden, flat["attention_mask"], self.pooling)
        scores = self.scorer(self.drop(vectors)).float().view(b, k)
        return scores.masked_fill(~batch["choice_mask"], float("-inf"))

    def forward(self, batch: dict):
        scores, labels = self.scores(batch), batch["labels"]
        loss_sum = F.cross_entropy(scores, labels, reduction="sum")
        n = labels.numel()
        correct = (scores.argmax(-1) == labels).sum()
        return loss_sum / n, {"loss": (loss_sum.detach(), n), "accuracy": (correct, n)}

    @torch.no_grad()
    def predict(self, batch: dict) -> list[dict]:
        probs = torch.softmax(self.scores(batch), -1)
        out = []
        for row, mask in zip(probs, batch["choice_mask"]):
            p = [round(float(x), 6) for x in row[mask]]
            out.append({"choice": int(row.argmax()), "probabilities": p})
        return out


class ChoiceFeatures(Features):
    def __init__(self, ids: list[list[list[int]]], types, labels: list[int], pad_id: int):
        self.ids, self.types, self.labels, self.pad_id = ids, types, labels, pad_id
        self.lengths = [max(len(x) for x in rows) * len(rows) for rows in ids]

    def take(self, idx) -> dict:
        idx = list(idx)
        k = max(len(self.ids[i]) for i in idx)
        rows, types, present = [], [], []
        for i in idx:
            extra = k - len(self.ids[i])
            rows += self.ids[i] + [[self.pad_id]] * extra
            types += self.types[i] + [[0]] * extra
            present.append([True] * len(self.ids[i]) + [False] * extra)
        flat = encoder_inputs(rows, types, self.pad_id)
        batch = {n: v.reshape(len(idx), k, -1) for n, v in flat.items()}
        batch["choice_mask"] = torch.tensor(present)
        batch["labels"] = torch.tensor([self.labels[i] for i in idx], dtype=torch.long)
        return batch


class MultipleChoiceTask(Task):
    name = "multiple_choice"
    kind = "choice"
    hf_architecture = "BertForMultipleChoice"
    hf_head = (("scorer", "classifier"),)
    hf_pooled = True
    pipeline_tag = "multiple-choice"
    serve_input = "choices"
    served_as = "answer"
    example = 'model.predict([{"context": "The sky is", "choices": ["blue.", "loud."]}])'

    def labels(self, records: list[dict]) -> list[str]:
        return []

    def encode(self, records: list[dict], tokenizer, labels: list[str], where: str) -> Features:
        contexts, choices, counts, answers = [], [], [], []
        for n, r in enumerate(records):
            options = [str(c) for c in r["choices"]]
            if len(options) < 2:
                raise WarmstartError(
                    f"{where}: example {n + 1} has {len(options)} choice(s)", "give at least 2"
                )
            label = r.get("label", 0)
            if not str(label).lstrip("-").isdigit() or not 0 <= int(label) < len(options):
                raise WarmstartError(
                    f"{where}: example {n + 1} has label {label!r} but {len(options)} choices",
                    "the label is the 0-based index of the right choice",
                )
            passage = r.get("passage")  # RACE/MCTest: [CLS] passage [SEP] question choice [SEP]
            contexts += [r["text"] if passage is None else passage] * len(options)
            choices += options if passage is None else [f"{r['text']} {o}" for o in options]
            counts.append(len(options))
            answers.append(int(label))
        ids, types = tokenizer.encode_pairs(contexts, choices, self.cfg.max_length)
        grouped_ids, grouped_types, start = [], [], 0
        for k in counts:
            grouped_ids.append(ids[start : start + k])
            grouped_types.append(types[start : start + k])
            start += k
        return ChoiceFeatures(grouped_ids, grouped_types, answers, tokenizer.pad_id)

    def build(self, encoder: nn.Module, labels: list[str]) -> nn.Module:
        return ChoiceScorer(encoder, self.cfg.pooling)
