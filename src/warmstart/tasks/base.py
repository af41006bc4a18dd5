"""What a finetuning task is: data formatting + head + metric, behind one small interface.

The finetune driver (``warmstart.commands.finetune``) only does this with a task::

    labels   = task.labels(train_records)                       # label names ([] for extractive QA)
    feats    = task.encode(records, tokenizer, labels, where)   # a Features per split
    unit     = task.build(encoder, labels)                      # nn.Module: forward(batch) -> (loss, stats)
    preds    = unit.predict(batch)                              # list of JSON-able dicts, one per example

A unit's ``stats`` map a metric name to ``(sum, count)``; the fit loop's evaluation adds them up over the
batches (streaming: memory does not grow with the evaluation set) and ``unit.summarize(means)`` derives the
rest (F1 from precision and recall, ...). ``unit.best_metric`` is ``(name, "max" | "min")``.

Records are plain dicts, one schema per dataset kind:
    labeled   {"text", "text_pair"?, "label": str | list[str] (multi-label) | float (regression)}
    tagging   {"text": " ".join(tokens), "tokens": [str], "tags": [str]}
    qa        {"text": context, "id", "question", "context", "answers": [{"text", "answer_start"}]}
              (no answers: unanswerable, SQuAD v2)
    choice    {"text": context, "choices": [str], "label": str(index of the right choice)}
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from warmstart.config import opt
from warmstart.data.catalog import shown
from warmstart.data.column_guess import hint
from warmstart.data.counterfactual import augmented
from warmstart.data.options import SPLITS, limited, open_finetune_data, split_files
from warmstart.data.order import EpochOrder
from warmstart.data.readers import first_rows
from warmstart.data.subsets import nested_subset
from warmstart.errors import WarmstartError
from warmstart.tasks.choice_scoring import choice_scoring
from warmstart.tasks.readers import TokenIds, bind_heads


@dataclass
class TaskConfig:
    name: str = opt(
        "classification",
        "task: classification, tagging, extractive_qa, multiple_choice, text_to_text, multitask (not given: "
        "the one the dataset's kind fits, e.g. tagging for brown-pos)",
    )
    problem: str = opt(
        "single_label",
        "classification: single_label (softmax), multi_label (sigmoid per label), regression (MSE)",
    )
    pooling: str = opt(
        "cls",
        "classification, multiple_choice: cls (the raw [CLS] state), mean or max (over the token states) or "
        "pooler (BERT's pooled output tanh(dense([CLS])), as transformers' *ForSequenceClassification and "
        "*ForMultipleChoice)",
    )
    label_separator: str = opt("|", "multi-label: separator between labels in a text column")
    max_length: int = opt(128, "longest input in tokens (longer inputs are truncated, QA contexts split)")
    doc_stride: int = opt(64, "extractive QA: tokens of overlap between windows of a long context")
    max_answer_length: int = opt(30, "extractive QA: longest answer span in tokens")
    n_best: int = opt(20, "extractive QA: start and end candidates considered per window")
    null_answers: bool | None = opt(
        None,
        "extractive QA: may an answer be empty (SQuAD v2's unanswerable questions; transformers' "
        "version_2_with_negative): true or false; not given: true when a training question has no answer. "
        "A finetuned run keeps what its training used, so predict answers alike whatever its input holds",
    )
    unseen_tags: str = opt(
        "refuse",
        "tagging: a validation/test tag the training split lacks is refused with the count (refuse), "
        "mapped to task.fallback_tag (fallback), or kept as a class the model never trained on, scored as "
        "an error unless predicted (keep: transformers' run_ner on a ClassLabel)",
    )
    label_smoothing: float = opt(
        0.0,
        "classification (single-label) and tagging: the training loss's label smoothing, as transformers' "
        "label_smoothing_factor (0: off); validation and test report the plain cross-entropy",
    )
    fallback_tag: str = opt(
        "",
        "tagging, unseen_tags=fallback: the tag unseen tags become (empty: O for BIO tags, else the most "
        "frequent training tag)",
    )
    prefix: str = opt("", "text_to_text: task prefix put before every input (T5 style, e.g. 'headline: ')")
    label_words: list[str] = opt(
        [],
        "text_to_text on labeled data: LABEL=WORD items, the word written for a class label (e.g. "
        "fresh=positive; multitask: multitask.label_words)",
    )
    separator: str = opt("\n", "text_to_text with a decoder: text between the input and the completion")
    max_target_length: int = opt(32, "text_to_text: longest output in tokens (training and generation)")
    num_beams: int = opt(1, "text_to_text evaluation: 1 = greedy decoding, more = beam search")
    choice_scoring: str = opt(
        "likelihood",
        "text_to_text on choice data: likelihood (the choice whose text as the output has the highest summed "
        "log-probability), mean (that sum per token) or generate (write an output, then exact match)",
    )

    def __post_init__(self):
        choice_scoring(self)  # a bad mode is one line before any work
        if not 0.0 <= self.label_smoothing < 1.0:
            raise WarmstartError(
                f"task.label_smoothing must be at least 0 and below 1, got {self.label_smoothing}",
                "use e.g. task.label_smoothing=0.1 (0: off)",
            )
        if self.unseen_tags not in ("refuse", "fallback", "keep"):
            raise WarmstartError(
                f"task.unseen_tags must be refuse, fallback or keep, got {self.unseen_tags!r}",
                "use task.unseen_tags=refuse (the default), fallback or keep",
            )


class Task:
    """One finetuning task. Subclasses set the class attributes and implement the three methods."""

    name: str = ""  # registry key and ``task.name``
    kind: str = "labeled"  # the dataset kind it reads (see the record schemas above)
    kinds: tuple[str, ...] = ()  # the dataset kinds it accepts, cast by ``prepare`` (empty: ``kind`` only)
    hf_architecture: str = ""  # the transformers class its checkpoint corresponds to
    # its head in transformers' Bert*For* class: (warmstart tensor prefix, transformers tensor prefix) pairs
    # (empty: no transformers head, the task is not exported as one), and whether that head reads the pooler
    hf_head: tuple[tuple[str, str], ...] = ()
    hf_pooled: bool = False
    # what the rest of warmstart asks of a task (export, model card, serve, report, study)
    pipeline_tag: str | None = None  # the Hugging Face hub pipeline of a model finetuned on it
    peft_task_type: str | None = None  # PEFT's task_type of its exported LoRA adapters
    serve_input: str = ""  # the body `warmstart serve` takes for it (serve/schemas.py INPUTS); "": none
    served_as: str = ""  # how `warmstart serve` serves it: "answer" (one forward pass), "generation"; "": not
    example: str = ""  # the warmstart call a model card shows for it
    report_samples: bool = False  # whether its report shows sample outputs
    study_baseline: str = ""  # the baseline a study runs beside it on its dataset kind ("": no study)

    def __init__(self, cfg: TaskConfig):
        self.cfg = cfg

    @property
    def empty_labels(self) -> bool:
        """Whether an empty label in a file is a row none of the labels apply to (multi-label), not a gap."""
        return False

    token_ids: TokenIds | None = None  # what a head on a decoder or encoder-decoder reads with (readers.py)

    def bind(self, tokenizer, config_json: dict, family) -> None:
        """Called with the model's tokenizer, config.json and family (a registry.Family) before encoding and
        building (tasks whose formatting depends on the model family ask its capabilities). A task with a
        transformers head on a decoder or encoder-decoder keeps the token ids its head reads with, and a
        family transformers has no such head for is refused here, before any data is read."""
        if self.hf_head:
            self.token_ids = bind_heads(self.name, tokenizer, config_json, family)

    def labels(self, records: list[dict]) -> list[str]:
        """Label names in a stable order (sorted), from the training records."""
        raise NotImplementedError

    def run_labels(self, splits: dict[str, list[dict]]) -> list[str]:
        """The run's label names from its splits: the training split's (tagging with task.unseen_tags=keep
        adds the other splits' tags)."""
        return self.labels(splits["train"])

    def settle(self, cfg, train: list[dict]):
        """The finetune ``cfg`` with the task options its training records decide (extractive QA's
        task.null_answers); the run saves them, so that evaluation and predict do as training did."""
        return cfg

    def encode(self, records: list[dict], tokenizer, labels: list[str], where: str) -> Features:
        """Tokenize one split. ``where`` names it in errors ("rotten-tomatoes (validation)")."""
        raise NotImplementedError

    def build(self, encoder: torch.nn.Module, labels: list[str]) -> torch.nn.Module:
        """The training unit: ``encoder`` + a randomly initialised head."""
        raise NotImplementedError

    def accepts(self, kind: str) -> bool:
        """Whether records of a dataset of this ``kind`` can be ``prepare``d for the task."""
        return kind in (self.kinds or (self.kind,))

    def prepare(self, records: list[dict], kind: str, where: str) -> list[dict]:
        """Records of a dataset ``kind`` the task accepts in the record shape of its own ``kind``
        (default: as they are)."""
        return records

    def read_splits(self, cfg) -> tuple[dict[str, list[dict]], str]:
        """The train/validation/test records of the finetune config ``cfg`` and the data's name: by default
        the one dataset of ``cfg.data`` (a task reading several overrides this)."""
        return read_dataset_splits(cfg.data, self)

    def train_batches(self, features: Features, batch_size: int, seed: int):
        """The training batches (a task that mixes sources overrides this)."""
        return TrainBatches(features, batch_size, seed)


def task_splits(task: Task, cfg) -> tuple[dict[str, list[dict]], str]:
    """``task.read_splits(cfg)``, refusing data.counterfactual for a task that reads its datasets its own
    way (multitask), where it would not apply."""
    if cfg.data.counterfactual and type(task).read_splits is not Task.read_splits:
        raise WarmstartError(
            f"data.counterfactual does not apply to task {task.name}, which reads its datasets its own way",
            "drop data.counterfactual=true, or finetune on one dataset with another task",
        )
    return task.read_splits(cfg)


FITS = {"labeled": "classification", "tagging": "tagging", "qa": "extractive_qa",
        "choice": "multiple_choice", "seq2seq": "text_to_text"}  # fmt: skip  # a dataset's kind -> its task


def fitting_task(task: TaskConfig, d, explicit: dict, resume) -> TaskConfig:
    """The task of a new run that names none: the one its dataset's kind fits (brown-pos, tagged words:
    tagging; wiki-qa: extractive_qa), said in one line on stderr, as `warmstart study` picks it."""
    if resume or "name" in explicit.get("task", {}) or not (d.dataset or split_files(d)):
        return task
    data = open_finetune_data(d)
    fits = FITS.get(data.kind, task.name)
    if fits != task.name:
        name = data.name if split_files(d) else shown(d.dataset)
        print(f"{name} is a {data.kind} dataset: task.name={fits}", file=sys.stderr)
    return dataclasses.replace(task, name=fits)


def read_dataset_splits(d, task: Task) -> tuple[dict[str, list[dict]], str]:
    """The splits of the dataset of ``d`` (a FinetuneDataConfig: a dataset, own split files or both),
    limited and subset as it says, the training split counterfactually augmented if it says
    (data.counterfactual); errors name the data as the user gave it (a file, data['train'])."""
    data = open_finetune_data(d, task.kind, task.empty_labels)
    name = data.name if split_files(d) else shown(d.dataset)  # the file, folder or name as given
    if not task.accepts(data.kind):
        needs = " or ".join(task.kinds or (task.kind,))
        fits = f"task.name={FITS[data.kind]}" if data.kind in FITS else "task.name=..."
        guessed = hint(first_rows(Path(name)), "label") if Path(name).is_file() else ""
        raise WarmstartError(
            f"{name} is a {data.kind} dataset but task {task.name} needs a {needs} dataset",
            f"pick a {needs} dataset or the task that fits ({fits}); "
            f"labeled files need their label column (data.label_column, now '{d.label_column}'){guessed}",
        )
    if data.origin:  # own split files: where each split came from, said once
        print(data.origin, file=sys.stderr)
    records = limited({s: list(data.records(s)) for s in SPLITS}, d)
    if d.train_fraction != 1:
        records["train"] = nested_subset(records["train"], d.train_fraction, d.subset_seed)
    for split, rows in records.items():
        if not rows:
            raise WarmstartError(
                f"the {split} split of {name} is empty", "use more data or other split fractions"
            )
    if d.counterfactual:  # the training examples only: validation and test stay as they are
        records["train"] = augmented(records["train"], data.kind)
    return {s: task.prepare(rows, data.kind, f"{data.name} ({s})") for s, rows in records.items()}, data.name


class Features:
    """The encoded examples of one split.

    Subclasses fill ``self.lengths`` (tokens per row, for length-grouped batches) and implement ``take``.
    ``eval_batches`` yields the split in order; tasks whose examples span several rows (QA windows)
    override it so that no example is cut across two batches.
    """

    lengths: list[int]

    def __len__(self) -> int:
        """Rows (a QA example with a long context has several windows)."""
        return len(self.lengths)

    def num_examples(self) -> int:
        """Examples, as counted for metrics and reports."""
        return len(self)

    def take(self, idx: Iterable[int]) -> dict:
        raise NotImplementedError

    def eval_batches(self, batch_size: int) -> Iterator[dict]:
        for i in range(0, len(self), batch_size):
            yield self.take(range(i, min(i + batch_size, len(self))))

    def metric_batches(self, batch_size: int) -> Iterator[dict]:
        """Batches for metrics, which are sums over examples, so the order is free: rows of similar length
        together (a batch of short sentences is not padded to the longest sentence of the split)."""
        for _, batch in self.prediction_batches(batch_size):
            yield batch

    def prediction_batches(self, batch_size: int) -> Iterator[tuple[list[int] | None, dict]]:
        """(rows, batch): every row once, rows of similar length in tokens together, a batch's predictions
        in ``rows``' order. Features whose examples span several rows (QA windows) give None for rows:
        their batches' predictions are the examples in order."""
        order = sorted(range(len(self)), key=self.lengths.__getitem__)
        for i in range(0, len(order), batch_size):
            rows = order[i : i + batch_size]
            yield rows, self.take(rows)


class EvalBatches:
    """A re-iterable view of ``features.metric_batches`` (the fit loop evaluates many times)."""

    def __init__(self, features: Features, batch_size: int):
        self.features, self.batch_size = features, batch_size

    def __iter__(self) -> Iterator[dict]:
        return self.features.metric_batches(self.batch_size)

    @property
    def total(self) -> int | None:
        """How many batches an evaluation runs (a progress bar's total), None where features batch their
        own way (QA windows: an example's windows share a batch; a multitask's parts)."""
        plain = type(self.features).metric_batches is Features.metric_batches
        plain = plain and type(self.features).prediction_batches is Features.prediction_batches
        return -(-len(self.features) // self.batch_size) if plain else None


class TrainBatches:
    """Micro-batch ``i`` as a pure function of ``i``: seeded, length-grouped epochs (exact resume)."""

    def __init__(self, features: Features, batch_size: int, seed: int):
        self.features = features
        self.order = EpochOrder(len(features), batch_size, seed, drop_last=False, lengths=features.lengths)
        self.batches_per_epoch = self.order.batches_per_epoch

    def batch(self, index: int) -> dict:
        return self.features.take(self.order.indices(index))

    def position(self, index: int) -> tuple[int, int]:
        return self.order.position(index)


def pad(rows: list[list[int]], value: int, width: int | None = None) -> torch.Tensor:
    """A (len(rows), width) long tensor, right-padded with ``value``."""
    width = width or max((len(r) for r in rows), default=1)
    out: np.ndarray = np.full((len(rows), max(width, 1)), value, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return torch.from_numpy(out)


def encoder_inputs(ids: list[list[int]], types: list[list[int]], pad_id: int) -> dict:
    """input_ids, token_type_ids and attention_mask of a batch of rows."""
    input_ids = pad(ids, pad_id)
    return {
        "input_ids": input_ids,
        "token_type_ids": pad(types, 0, input_ids.shape[1]),
        "attention_mask": pad([[1] * len(r) for r in ids], 0, input_ids.shape[1]),
    }
