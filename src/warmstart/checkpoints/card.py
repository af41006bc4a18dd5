"""The run card: the "warmstart" block of a checkpoint's config.json, as one typed record.

This module is the only reader and writer of that block. A checkpoint's config.json is the model's
transformers config (model_type, sizes, token ids) plus ``"warmstart": {...}``: the family (``arch``), the
pretraining objective, the tokenizer's fingerprint, the objective's shape sections (ELECTRA's generator),
where an imported model came from, and for a finetuned model its task options. The label map lives once, in
transformers' own ``id2label`` / ``label2id`` / ``num_labels``; runs written before this card also stored
``warmstart.labels``, which is still read (and wins, being what those runs trained with).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from warmstart.registry import family

KEYS = ("arch", "objective", "tokenizer", "task", "columns", "imported_from", "hf_model_type")


@dataclass
class RunCard:
    arch: str = "bert"  # the model family (registry.MODELS)
    objective: str | None = None  # the pretraining objective (registry.OBJECTIVES)
    tokenizer: str | None = None  # the tokenizer's fingerprint
    task: dict | None = None  # a finetuned model's task options (tasks.base.TaskConfig fields)
    # the data columns a finetuned model read ({"text", "label", "text_pair"?, "target"?}): what
    # `warmstart evaluate` reads in a file when no column flag is given
    columns: dict | None = None
    imported_from: str | None = None  # the transformers directory `warmstart import` read
    hf_model_type: str | None = None  # its transformers model_type (roberta, albert, electra, ...)
    sections: dict[str, dict] = field(default_factory=dict)  # objective shape sections, e.g. "electra"
    labels: list[str] = field(default_factory=list)  # the label map of a finetuned model

    @property
    def finetuned(self) -> bool:
        return self.task is not None

    @property
    def task_name(self) -> str | None:
        return None if self.task is None else self.task.get("name", "classification")

    @classmethod
    def read(cls, config_json: dict) -> RunCard:
        """The card of a checkpoint's config.json (a transformers config without a block reads as its
        ``model_type`` with nothing else known)."""
        block = dict(config_json.get("warmstart") or {})
        known = {k: block.pop(k) for k in KEYS if k in block}
        old_labels = block.pop("labels", None)  # written by releases before the card
        known.setdefault("arch", config_json.get("model_type") or "bert")
        card = cls(**known, sections={k: v for k, v in block.items() if isinstance(v, dict)})
        if card.task is not None:
            card.labels = list(old_labels) if old_labels is not None else _id2label(config_json)
        return card

    def write(self, config_json: dict) -> dict:
        """``config_json`` with this card as its block and, for a finetuned model, its label map."""
        block = {k: getattr(self, k) for k in KEYS if getattr(self, k) is not None}
        block.update(self.sections)
        out = {**config_json, "warmstart": block}
        if self.task is None:
            return out
        for key in ("id2label", "label2id", "num_labels"):  # a finetuned model's map is its labels, or none
            out.pop(key, None)
        if self.labels:
            out["id2label"] = dict(enumerate(self.labels))
            out["label2id"] = {name: i for i, name in enumerate(self.labels)}
            out["num_labels"] = len(self.labels)
        return out


def _id2label(config_json: dict) -> list[str]:
    mapping = config_json.get("id2label") or {}
    return [mapping[k] for k in sorted(mapping, key=int)]


def checkpoint_config(config_json: dict, task, labels: list[str], columns: dict | None = None) -> dict:
    """config.json of a finetuned model: the encoder's, the task's architecture in the family's name
    (XLNetForSequenceClassification; BERT's name where the family has no transformers class: ELMo), the
    label map and the data columns it read (``columns``; None: the ones ``config_json`` has, if any)."""
    card = RunCard.read(config_json)
    card = dataclasses.replace(
        card, task=dataclasses.asdict(task.cfg), labels=list(labels), columns=columns or card.columns
    )
    lm_class = family(card.arch).objective.hf_architecture
    base = re.match(r"(.+?)(For[A-Z]\w*|LMHeadModel|Model)$", lm_class)
    name = task.hf_architecture if base is None else base[1] + task.hf_architecture.removeprefix("Bert")
    return card.write({**config_json, "architectures": [name]})
