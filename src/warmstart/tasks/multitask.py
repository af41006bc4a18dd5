"""Multi-task text-to-text finetuning (T5 style): several datasets at once, mixed in the training batches.

Every dataset of ``multitask.tasks`` (``DATASET`` or ``DATASET=PREFIX``: a name, a local file or hf:NAME) is
cast as text pairs (``warmstart.data.to_text``: label words, ``question \\n context`` -> answer, ...) whose
input is ``PREFIX: text`` (default prefix: the dataset's name; ``DATASET=`` for none). One encoder-decoder
(or decoder) learns them all through the text-to-text unit; there is no second training loop.

Mixing rates (T5, section 3.5.2), with n_i training examples of task i, m tasks and K = ``multitask.cap``:

    proportional   r_i = min(n_i, K) / sum_j min(n_j, K)
    temperature    r_i proportional to (min(n_i, K) / N) ** (1 / T)   (T = multitask.temperature; T5: 2)
    equal          r_i = 1 / m

Training batches: each row of micro-batch ``i`` comes from task j with probability r_j (the draws are seeded
by (seed, i)); within a task, rows follow a seeded permutation per pass over that task, so every example is
seen once before any is seen twice. Batch ``i`` is a pure function of ``i`` (exact resume), like
``TrainBatches``; an "epoch" is as many rows as the tasks' training splits hold together.

Evaluation generates for every row and scores each task on its own rows, as ``TASK/METRIC``:
``accuracy`` (exact match of the label word or choice, 0..1) for labeled and choice data, ``exact_match`` and
``f1`` (SQuAD, 0..100) for QA, ``rouge1/2/L`` and ``bleu`` for seq2seq, and ``TASK/loss``. ``average``, the
mean of each task's main metric (accuracy x 100, F1, ROUGE-L), selects the best model.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from warmstart.config import opt
from warmstart.data.catalog import open_dataset
from warmstart.data.mixing import MixedBatches, check_mixing, mixing_rates
from warmstart.data.options import SPLITS, data_options
from warmstart.data.to_text import parse_label_words, to_text
from warmstart.errors import WarmstartError
from warmstart.objectives.lm_loss import token_loss, with_perplexity
from warmstart.tasks.base import TrainBatches
from warmstart.tasks.qa_decode import exact_match_score, f1_score
from warmstart.tasks.text_metrics import text_stats, with_bleu
from warmstart.tasks.text_to_text import TextPairs, TextToTextTask, TextToTextUnit

# dataset kind -> how its generated outputs are scored
SCORING = {"labeled": "label", "choice": "label", "qa": "answer", "seq2seq": "text"}


@dataclass
class MultitaskConfig:
    tasks: list[str] = opt(
        [],
        "multitask: DATASET=PREFIX per task (name, file or hf:NAME), e.g. news-headlines=headline,"
        "rotten-tomatoes=sentiment; inputs read 'PREFIX: text' (write the prefix without its colon; "
        "default: the dataset's name; DATASET= for no prefix)",
    )
    mixing: str = opt(
        "proportional", "multitask: task rates proportional (to size), temperature (size^(1/T)) or equal"
    )
    temperature: float = opt(2.0, "multitask, temperature mixing: rates proportional to size^(1/T) (T5: 2)")
    cap: int | None = opt(
        None, "multitask: count at most N examples per task in proportional/temperature rates (T5's K)"
    )
    label_words: list[str] = opt(
        [], "multitask: LABEL=WORD items, the word written for a class label (e.g. fresh=positive)"
    )
    eval_limit: int | None = opt(None, "multitask: only the first N validation and test examples per task")

    def __post_init__(self):
        check_mixing(self.mixing, self.temperature, self.cap)
        if self.eval_limit is not None and self.eval_limit < 1:
            raise WarmstartError(
                f"multitask.eval_limit is {self.eval_limit}", "use 1 or more, or leave it unset"
            )


def parse_tasks(specs: Sequence[str]) -> list[tuple[str, str | None]]:
    """``["news-headlines=headline", "rotten-tomatoes"]`` -> ``[("news-headlines", "headline"),
    ("rotten-tomatoes", None)]`` (None: the default prefix)."""
    out = []
    for spec in specs:
        dataset, eq, prefix = str(spec).strip().partition("=")
        if not dataset.strip():
            raise WarmstartError(
                f"multitask.tasks has an item without a dataset: '{spec}'", "write DATASET=PREFIX"
            )
        out.append((dataset.strip(), prefix if eq else None))
    if not out:
        raise WarmstartError(
            "multitask has no tasks",
            "list the datasets: multitask.tasks=news-headlines=headline,rotten-tomatoes=sentiment",
        )
    return out


def task_prefix(words: str) -> str:
    """``"headline"`` -> ``"headline: "`` (T5's "summarize: "); a trailing colon is kept; "" -> ""."""
    words = words.strip()
    if not words:
        return ""
    return words + (" " if words.endswith(":") else ": ")


def read_multitask(cfg, task: MultitaskTask) -> tuple[dict[str, list[dict]], str]:
    """The records of every split, all tasks in order, as text pairs tagged with ``task`` (the dataset's name)
    and ``scoring``; sets ``task.mixture`` (name -> rate). ``cfg`` is a ``FinetuneConfig``: its data options
    (columns, split seed, train_limit per task) apply to every dataset."""
    mc, d = cfg.multitask, cfg.data
    if d.dataset:
        raise WarmstartError(
            "task multitask reads its datasets from multitask.tasks, not from --dataset (data.dataset)",
            "drop --dataset and list every dataset: multitask.tasks=DATASET=PREFIX,DATASET=PREFIX",
        )
    specs = parse_tasks(mc.tasks)
    words = parse_label_words(mc.label_words)
    options = data_options(d, "seq2seq")
    records: dict[str, list[dict]] = {s: [] for s in SPLITS}
    names, sizes = [], []
    for dataset, given in specs:
        data = open_dataset(dataset, options)
        if data.kind not in SCORING:
            raise WarmstartError(
                f"{data.name} is a {data.kind} dataset, which has no text-to-text form",
                f"list {', '.join(SCORING)} datasets in multitask.tasks",
            )
        if data.name in names:
            raise WarmstartError(f"{data.name} is listed twice in multitask.tasks", "list each dataset once")
        prefix = task_prefix(data.name if given is None else given)
        for split in SPLITS:
            limit = d.train_limit if split == "train" else mc.eval_limit
            rows = list(itertools.islice(data.records(split), limit))
            if not rows:
                raise WarmstartError(
                    f"the {split} split of {data.name} is empty", "use more data or other split fractions"
                )
            tag = {"task": data.name, "scoring": SCORING[data.kind]}
            for r in to_text(rows, data.kind, words, f"{data.name} ({split})"):
                records[split].append({**r, "text": prefix + r["text"], **tag})
            if split == "train":
                sizes.append(len(rows))
        names.append(data.name)
    task.mixture = dict(zip(names, mixing_rates(sizes, mc.mixing, mc.temperature, mc.cap)))
    shown = ", ".join(f"{n} ({s:,} examples) {r:.3f}" for (n, r), s in zip(task.mixture.items(), sizes))
    print(f"multitask, {mc.mixing} mixing: {shown}", file=sys.stderr)
    return records, " + ".join(names)


class TaggedPairs(TextPairs):
    """Text pairs whose rows carry their task: batches add ``tasks`` (names), ``scoring`` and ``golds`` (the
    accepted outputs) when any row is tagged. Rows of several tasks pad together like any text pairs."""

    def __init__(self, pairs: TextPairs, tasks: list, scoring: list[str], golds: list[list[str]]):
        vars(self).update(vars(pairs))
        self.tasks, self.scoring, self.golds = list(tasks), list(scoring), [list(g) for g in golds]

    def take(self, idx) -> dict:
        idx = list(idx)
        batch = super().take(idx)
        tags = [self.tasks[i] for i in idx]
        if any(t is not None for t in tags):
            batch["tasks"] = tags
            batch["scoring"] = [self.scoring[i] for i in idx]
            batch["golds"] = [self.golds[i] for i in idx]
        return batch


def _scores(scoring: str, predictions: list[str], references: list[str], golds: list[list[str]]) -> dict:
    n = len(predictions)
    if scoring == "label":
        return {"accuracy": (sum(exact_match_score(p, [r]) for p, r in zip(predictions, references)), n)}
    if scoring == "answer":
        return {
            "exact_match": (sum(exact_match_score(p, g) for p, g in zip(predictions, golds)), n),
            "f1": (sum(f1_score(p, g) for p, g in zip(predictions, golds)), n),
        }
    return text_stats(predictions, references)


class MultitaskUnit(TextToTextUnit):
    """The text-to-text unit; on tagged evaluation batches it scores every task on its own rows."""

    best_metric = ("average", "max")

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict]:
        tags = batch.get("tasks")
        if self.training or not tags:
            return super().forward(batch)
        if self.decoder_only:
            hidden = self.model(batch["input_ids"], batch["attention_mask"])
            logits, labels = self.model.lm_logits(hidden[:, :-1]), batch["labels"][:, 1:]
        else:
            hidden = self.model(
                batch["input_ids"],
                batch["attention_mask"],
                batch["decoder_input_ids"],
                batch["decoder_attention_mask"],
            )
            logits, labels = self.model.lm_logits(hidden), batch["labels"]
        loss, stats = token_loss(logits, labels)
        generated = self.generate(batch["sources"])
        for name in dict.fromkeys(tags):
            rows = [k for k, t in enumerate(tags) if t == name]
            picked = torch.tensor(rows, device=logits.device)
            scores = _scores(
                batch["scoring"][rows[0]],
                [generated[k] for k in rows],
                [batch["references"][k] for k in rows],
                [batch["golds"][k] for k in rows],
            )
            scores["loss"] = token_loss(logits[picked], labels[picked])[1]["loss"]
            stats.update({(f"{name}/{key}" if name is not None else key): v for key, v in scores.items()})
        return loss, stats

    @staticmethod
    def summarize(means: dict) -> dict:
        """Per-task BLEU and percentages, and ``average``: the mean of every task's main metric."""
        top, groups = {}, {}
        for key, value in means.items():
            name, slash, metric = key.rpartition("/")
            if slash:
                groups.setdefault(name, {})[metric] = value
            else:
                top[key] = value
        out = with_bleu(with_perplexity(top))
        mains = []
        for name, metrics in groups.items():
            metrics = with_bleu(metrics)
            for key in ("exact_match", "f1"):
                if key in metrics:
                    metrics[key] *= 100.0
            main = (
                100.0 * metrics["accuracy"]
                if "accuracy" in metrics
                else metrics.get("f1", metrics.get("rougeL"))
            )
            if main is not None:
                mains.append(main)
            out.update({f"{name}/{key}": v for key, v in metrics.items()})
        if mains:
            out["average"] = sum(mains) / len(mains)
        return out


class MultitaskTask(TextToTextTask):
    """Text-to-text over tagged records (``read_multitask``); untagged records (``warmstart predict``,
    ``warmstart evaluate`` on one seq2seq dataset) are plain text-to-text."""

    name = "multitask"
    kind = "seq2seq"

    def __init__(self, cfg):
        super().__init__(cfg)
        self.mixture: dict[str, float] = {}

    def encode(self, records: list[dict], tokenizer, labels: list[str], where: str) -> TaggedPairs:
        pairs = super().encode(records, tokenizer, labels, where)
        return TaggedPairs(
            pairs,
            [r.get("task") for r in records],
            [r.get("scoring", "text") for r in records],
            [r.get("answers") or [ref] for r, ref in zip(records, pairs.refs)],
        )

    def build(self, model: torch.nn.Module, labels: list[str]) -> MultitaskUnit:
        return MultitaskUnit(model, self)

    def read_splits(self, cfg) -> tuple[dict[str, list[dict]], str]:
        return read_multitask(cfg, self)

    def train_batches(self, features, batch_size: int, seed: int):
        """The training source: mixed by ``self.mixture`` (set by ``read_multitask``)."""
        if not self.mixture:
            return TrainBatches(features, batch_size, seed)
        return MixedBatches(features, batch_size, seed, self.mixture)
