"""Sequence classification: a randomly initialised linear layer on the [CLS] hidden state (or, with
``task.pooling=mean``, on the mean of the last layer's token states, padding excluded; with
``task.pooling=pooler``, on BERT's pooled output tanh(dense([CLS])) with the encoder's pretrained pooler:
exactly transformers' BertForSequenceClassification, so such runs export to it). On a decoder (GPT-2) or an
encoder-decoder (T5, BART) the head is the family's transformers head (``DecoderClassifier``).

One sentence or a sentence pair (``[CLS] A [SEP] B [SEP]`` with segment ids); three problems:
- single_label: softmax over the classes, cross-entropy; accuracy and macro-F1.
- multi_label: one sigmoid per label, binary cross-entropy; micro precision/recall/F1 and exact-set match.
  Labels come as a list (JSONL) or as one string joined by ``task.label_separator`` ("sports|politics").
- regression: one output, mean squared error; MSE and Pearson correlation (similarity scores, STS-B).
Class labels are compared in one spelling per class (``warmstart.data.labels``): ``1``, ``1.0`` and ``"1"``
are the one class "1", in training data and in data evaluated later alike. Regression labels are floats and
must be finite. All metrics are sums and counts per batch, so evaluation memory does not grow with the data.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.data.labels import MultiLabel, canonical_label
from warmstart.errors import WarmstartError
from warmstart.nn.dropout import Dropout
from warmstart.nn.pooling import POOLING, cls_at_end, pool
from warmstart.objectives.sift import bernoulli_symmetric_kl, sift_on, sift_penalty, squared, symmetric_kl
from warmstart.tasks.base import Features, Task, encoder_inputs
from warmstart.tasks.label_problem import score_example
from warmstart.tasks.readers import (
    TokenIds,
    generative,
    head_dropout,
    head_std,
    sequence_state,
    token_states,
)

PROBLEMS = ("single_label", "multi_label", "regression")
POOLINGS = (*POOLING, "pooler")  # pooler: the encoder's own (BERT's pooled output), not a feature pooling
# SiFT's divergence between clean and perturbed outputs, per problem (objectives/sift.py)
DIVERGENCE = {"single_label": symmetric_kl, "multi_label": bernoulli_symmetric_kl, "regression": squared}


def init_head(linear: nn.Linear, std: float) -> nn.Linear:
    nn.init.normal_(linear.weight, std=std)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)
    return linear


def check_pooling(encoder: nn.Module, pooling: str) -> None:
    """Refuse an unknown ``task.pooling``, and ``pooler`` on an encoder without one."""
    if pooling not in POOLINGS:
        raise WarmstartError(f"unknown task.pooling '{pooling}'", f"use one of: {', '.join(POOLINGS)}")
    if pooling == "pooler" and getattr(encoder, "pooler", None) is None:
        raise WarmstartError(
            "task.pooling=pooler reads the encoder's pooler (dense + tanh on [CLS]); this model has none",
            "use task.pooling=cls or mean, or start from a model with model.pooler=true",
        )


def pooled(encoder: nn.Module, hidden: torch.Tensor, mask, pooling: str) -> torch.Tensor:
    """One vector per row: the encoder's pooler output (tanh(dense([CLS])), as transformers' heads read it),
    the class token's state (first, or last where the model declares ``cls_at_end``: XLNet) or the mean
    of the token states (``mask``: padding excluded)."""
    if pooling == "pooler":
        return encoder.pool(hidden, mask)
    mask = torch.ones(hidden.shape[:2], device=hidden.device) if mask is None else mask
    return pool(hidden, mask, pooling, cls_at_end(encoder))


class SequenceClassifier(nn.Module):
    """encoder -> [pooler: dense + tanh] -> dropout -> Linear on the [CLS] (or mean) state.
    ``forward(batch) -> (loss, stats)``. With ``sift`` set (``sift.weight`` > 0, objectives/sift.py), training
    adds SiFT's weighted penalty on the logits to the loss (the logged train loss includes it; the
    stats carry the penalty as ``sift``)."""

    takes_sift = True
    sift = None
    label_smoothing = 0.0  # task.label_smoothing (single-label problems; finetune sets it)

    def __init__(
        self, encoder: nn.Module, labels: list[str], problem: str = "single_label", pooling: str = "cls"
    ):
        super().__init__()
        c = encoder.config
        check_pooling(encoder, pooling)
        self.encoder, self.pooling = encoder, pooling
        self.set_problem(labels, problem)
        self.drop = Dropout(c.hidden_dropout_prob)
        self.classifier = init_head(nn.Linear(c.hidden_size, self.outputs), c.initializer_range)

    def set_problem(self, labels: list[str], problem: str) -> None:
        """The labels, the problem, the number of outputs and the metric that picks the best model."""
        self.labels, self.problem = list(labels), problem
        self.outputs = 1 if problem == "regression" else len(self.labels)
        self.best_metric = {"single_label": ("accuracy", "max"), "multi_label": ("f1", "max")}.get(
            problem, ("pearson", "max")
        )

    def logits(self, batch: dict) -> torch.Tensor:
        ids, mask = batch["input_ids"], batch.get("attention_mask")
        hidden = self.encoder(ids, mask, batch.get("token_type_ids"))
        return self.classifier(self.drop(pooled(self.encoder, hidden, mask, self.pooling))).float()

    def forward(self, batch: dict):
        logits, labels = self.logits(batch), batch["labels"]
        n = labels.shape[0]
        if self.problem == "regression":
            pred = logits.squeeze(-1)
            loss_sum = F.mse_loss(pred, labels, reduction="sum")
            stats = {"mse": (loss_sum.detach(), n)}
            x, y = pred.detach().double(), labels.double()  # float64 moments: no cancellation in Pearson
            for name, v in (("x", x), ("y", y), ("xx", x * x), ("yy", y * y), ("xy", x * y)):
                stats[f"_{name}"] = (v.sum(), n)
        elif self.problem == "multi_label":
            loss_sum = F.binary_cross_entropy_with_logits(logits, labels, reduction="sum") / labels.shape[1]
            pred, gold = logits > 0, labels > 0.5
            tp = (pred & gold).sum()
            stats = {
                "precision": (tp, pred.sum()),
                "recall": (tp, gold.sum()),
                "exact_match": ((pred == gold).all(-1).sum(), n),
            }
        else:
            smoothing = self.label_smoothing if self.training else 0.0  # task.label_smoothing: training only
            loss_sum = F.cross_entropy(logits, labels, reduction="sum", label_smoothing=smoothing)
            pred = logits.argmax(-1)
            stats = {"accuracy": ((pred == labels).sum(), n)}
            for c in range(len(self.labels)):  # per-class counts for macro-F1
                hit = ((pred == c) & (labels == c)).sum()
                stats[f"_p{c}"], stats[f"_r{c}"] = (hit, (pred == c).sum()), (hit, (labels == c).sum())
        stats["loss"] = (loss_sum.detach(), n)
        if sift_on(self):
            again = lambda: self.logits(batch)  # noqa: E731
            penalty = sift_penalty(self.encoder, again, logits, self.sift, DIVERGENCE[self.problem])
            stats["sift"] = (penalty.detach() * n, n)
            return loss_sum / n + self.sift.weight * penalty, stats
        return loss_sum / n, stats

    def summarize(self, means: dict) -> dict:
        out = {k: v for k, v in means.items() if not k.startswith("_")}
        if self.problem == "regression":
            vx = means["_xx"] - means["_x"] ** 2
            vy = means["_yy"] - means["_y"] ** 2
            cov = means["_xy"] - means["_x"] * means["_y"]
            out["pearson"] = cov / math.sqrt(vx * vy) if vx > 0 and vy > 0 else 0.0
        elif self.problem == "multi_label":
            out.setdefault("precision", 0.0)
            out.setdefault("recall", 0.0)
            out["f1"] = f1(out["precision"], out["recall"])
        else:
            scores = [
                f1(means.get(f"_p{c}", 0.0), means.get(f"_r{c}", 0.0))
                for c in range(len(self.labels))
                if f"_r{c}" in means
            ]
            out["macro_f1"] = sum(scores) / len(scores) if scores else 0.0
        return out

    def gold_and_predicted(self, batch: dict, logits: torch.Tensor | None = None):
        """(gold, predicted) label ids of a single-label batch (for ``tasks.breakdown``); ``logits``: the
        batch's, already computed."""
        return batch["labels"], (self.logits(batch) if logits is None else logits).argmax(-1)

    @torch.no_grad()
    def predict(self, batch: dict) -> list[dict]:
        logits = self.logits(batch)
        if self.problem == "regression":
            return [{"score": round(float(v), 6)} for v in logits.squeeze(-1)]
        if self.problem == "multi_label":
            probs = torch.sigmoid(logits)
            return [
                {
                    "labels": [lab for lab, p in zip(self.labels, row) if p > 0.5],
                    "probabilities": {lab: round(float(p), 6) for lab, p in zip(self.labels, row)},
                }
                for row in probs
            ]
        probs = torch.softmax(logits, -1)
        return [
            {
                "label": self.labels[int(row.argmax())],
                "probabilities": {lab: round(float(p), 6) for lab, p in zip(self.labels, row)},
            }
            for row in probs
        ]


class DecoderClassifier(SequenceClassifier):
    """The classifier on a decoder or encoder-decoder ``model`` with the family's transformers head
    (tasks/readers.py): GPT-2's ``score`` (linear, no bias) on the last real token; T5's and BART's
    ``classification_head`` (dropout, dense, tanh, dropout, out_proj) on the decoder's last eos state. The
    dropout is the family's own. SiFT perturbs an encoder's embeddings: not offered here."""

    takes_sift = False

    def __init__(self, model: nn.Module, labels: list[str], problem: str, pooling: str, ids: TokenIds):
        nn.Module.__init__(self)
        c, std = model.config, head_std(model.config)
        if pooling == "pooler":
            raise WarmstartError(
                f"task.pooling=pooler reads an encoder's pooler; a {c.model_type} model has none",
                "use task.pooling=cls (the family's transformers head), mean or max",
            )
        check_pooling(model, pooling)
        self.model, self.ids, self.pooling = model, ids, pooling
        self.set_problem(labels, problem)
        self.drop = Dropout(head_dropout(c))
        if model.decoder_only:
            self.score = init_head(nn.Linear(c.hidden_size, self.outputs, bias=False), std)
        else:
            dense, out = nn.Linear(c.hidden_size, c.hidden_size), nn.Linear(c.hidden_size, self.outputs)
            self.classification_head = nn.ModuleDict(
                {"dense": init_head(dense, std), "out_proj": init_head(out, std)}
            )

    def logits(self, batch: dict) -> torch.Tensor:
        hidden = token_states(self.model, batch, self.ids)
        x = self.drop(sequence_state(self.model, hidden, batch, self.pooling, self.ids))
        if self.model.decoder_only:
            return self.score(x).float()
        head = self.classification_head
        return head["out_proj"](self.drop(torch.tanh(head["dense"](x)))).float()


def _one_each(records: list[dict], where: str, problem: str) -> None:
    """Refuse a row given a list of labels other than one (a multi-label row) under a single-label problem."""
    lists = (r for r in records if isinstance(r["label"], MultiLabel) and len(r["label"].parts) != 1)
    row = next(lists, None)
    if row is not None:
        raise WarmstartError(
            f"{where} has rows with a list of {len(row['label'].parts)} labels ({list(row['label'].parts)}) "
            f"but task.problem is {problem}",
            "use task.problem=multi_label (or give each row one label)",
        )


def _class(label) -> str:
    """A label's class name in its one spelling: 1, 1.0 and "1" are "1" (``warmstart.data.labels``)."""
    try:
        return canonical_label(label)
    except ValueError as exc:
        raise WarmstartError(str(exc), "give every example a class name or a finite number") from None


def f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


class ClassificationFeatures(Features):
    def __init__(self, ids, types, targets, pad_id: int):
        self.ids, self.types, self.targets, self.pad_id = ids, types, targets, pad_id
        self.lengths = [len(x) for x in ids]

    def take(self, idx) -> dict:
        idx = list(idx)
        batch = encoder_inputs([self.ids[i] for i in idx], [self.types[i] for i in idx], self.pad_id)
        batch["labels"] = self.targets[idx]
        return batch


class ClassificationTask(Task):
    name = "classification"
    kind = "labeled"
    hf_architecture = "BertForSequenceClassification"
    hf_head = (("classifier", "classifier"),)
    hf_pooled = True
    pipeline_tag = "text-classification"
    peft_task_type = "SEQ_CLS"
    serve_input = "text_pair"
    served_as = "answer"
    example = 'model.predict(["a text to classify"])'
    study_baseline = "tfidf"

    def __init__(self, cfg):
        super().__init__(cfg)
        if cfg.problem not in PROBLEMS:
            raise WarmstartError(f"unknown task.problem '{cfg.problem}'", f"use one of {', '.join(PROBLEMS)}")

    @property
    def empty_labels(self) -> bool:
        """Multi-label: an empty label is a row none of the labels apply to (its target all zeros)."""
        return self.cfg.problem == "multi_label"

    def _label_set(self, label) -> list[str]:
        if isinstance(label, MultiLabel):
            label = label.parts
        if isinstance(label, list | tuple):
            return list(dict.fromkeys(_class(x) for x in label if str(x).strip()))
        parts = str(label).split(self.cfg.label_separator)
        return list(dict.fromkeys(_class(x) for x in parts if x.strip()))

    def labels(self, records: list[dict]) -> list[str]:
        if self.cfg.problem == "regression":
            return []
        if self.cfg.problem == "multi_label":
            return sorted({x for r in records for x in self._label_set(r["label"])})
        _one_each(records, "the training data", self.cfg.problem)
        return sorted({_class(r["label"]) for r in records})

    def targets(self, records: list[dict], labels: list[str], where: str) -> torch.Tensor:
        problem = self.cfg.problem
        if problem == "regression":
            values = []
            for r in records:
                try:
                    values.append(float(r["label"]))
                except (TypeError, ValueError):
                    raise WarmstartError(
                        f"{where}: the label {r['label']!r} is not a number",
                        "regression needs numeric labels (or use task.problem=single_label)",
                    ) from None
                if not math.isfinite(values[-1]):
                    raise WarmstartError(
                        f"{where}: the label {r['label']!r} is not a finite number",
                        "give every regression example a finite score (drop rows without one)",
                    )
            return torch.tensor(values, dtype=torch.float32)
        if problem != "multi_label":
            _one_each(records, where, problem)
        index = {name: i for i, name in enumerate(labels)}
        for i, name in enumerate(labels):  # a model trained before labels were canonical ("1.0")
            index.setdefault(_class(name), i)
        given = [
            self._label_set(r["label"]) if problem == "multi_label" else [_class(r["label"])] for r in records
        ]
        unknown = sorted({x for g in given for x in g} - set(index))
        if unknown:
            known = ", ".join(labels[:10]) + (f" ... ({len(labels)} in all)" if len(labels) > 10 else "")
            numbers = score_example([{"label": x} for x in [*labels, *unknown]]) is not None
            scores = "; scores (numbers) need task.problem=regression" if numbers else ""
            seen = {x for g in given for x in g}
            if len(labels) > 50 and len(unknown) >= len(seen) / 2:  # nearly one class a row: an id column?
                scores += (
                    f"; {len(unknown)} of the {len(seen)} labels here are new and training had {len(labels)} "
                    "classes: if this column is an id, pass --label-column NAME"
                )
            raise WarmstartError(
                f"{where} has labels the model was not trained on: {', '.join(unknown[:5])}",
                f"the known labels are: {known}{scores}",
            )
        if problem == "single_label":
            return torch.tensor([index[g[0]] for g in given], dtype=torch.long)
        hot = torch.zeros(len(records), len(labels))
        for i, g in enumerate(given):
            hot[i, [index[x] for x in g]] = 1.0
        return hot

    def encode(self, records: list[dict], tokenizer, labels: list[str], where: str) -> Features:
        pairs = [r.get("text_pair") for r in records]
        has_pair = [p is not None for p in pairs]
        if any(has_pair) and not all(has_pair):
            raise WarmstartError(
                f"{where}: {has_pair.count(False)} of {len(records)} records have no second text",
                "give every record a text_pair, or none",
            )
        texts = [r["text"] for r in records]
        ids, types = tokenizer.encode_pairs(texts, pairs if all(has_pair) else None, self.cfg.max_length)
        if records and "label" in records[0]:
            targets = self.targets(records, labels, where)
        else:  # prediction input: no labels
            targets = torch.zeros(len(records), dtype=torch.long)
        return ClassificationFeatures(ids, types, targets, tokenizer.pad_id)

    def build(self, encoder: nn.Module, labels: list[str]) -> nn.Module:
        if self.cfg.problem != "regression" and len(labels) < 2:
            raise WarmstartError(
                f"classification needs at least 2 labels, the training data has {len(labels)}",
                "check the label column (task.problem=regression for numeric scores)",
            )
        if generative(encoder):
            return DecoderClassifier(encoder, labels, self.cfg.problem, self.cfg.pooling, self.token_ids)
        return SequenceClassifier(encoder, labels, self.cfg.problem, self.cfg.pooling)
