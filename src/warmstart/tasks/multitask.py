"""Multi-task text-to-text finetuning (T5 style): several datasets at once, mixed in the training batches.

Every dataset of ``multitask.tasks`` (``DATASET`` or ``DATASET=PREFIX``: a name, a local file or hf:NAME) is
cast as text pairs by the formatter ``text_to_text`` uses too (``text_to_text.text_records``: label words,
``question \\n context`` -> answer, ``(A) ... (B) ...`` choices, yes/no; UnifiedQA's formats) whose input is
``PREFIX: text`` (default prefix: the dataset's name; ``DATASET=`` for none). A corpus (wiki-leads, news, a
text file) is a member too, trained with the family's self-supervised objective (``corpus_member``: span
corruption, denoising, causal LM), without a prefix. One encoder-decoder (or decoder) learns them all through
the text-to-text unit; there is no second training loop. Training records log each member's loss (the mean
over the log window, ``NAME/loss``).

Mixing rates (T5, section 3.5.2), with n_i training examples of task i, m tasks and K = ``multitask.cap``:

    proportional   r_i = min(n_i, K) / sum_j min(n_j, K)
    temperature    r_i proportional to (min(n_i, K) / N) ** (1 / T)   (T = multitask.temperature; T5: 2)
    equal          r_i = 1 / m

Training batches: each row of micro-batch ``i`` comes from task j with probability r_j (the draws are seeded
by (seed, i)); within a task, rows follow a seeded permutation per pass over that task, so every example is
seen once before any is seen twice. Batch ``i`` is a pure function of ``i`` (exact resume), like
``TrainBatches``; an "epoch" is as many rows as the tasks' training splits hold together.

Evaluation generates for every row of the supervised members and scores each on its own rows, as
``TASK/METRIC``:
``accuracy`` (exact match of the label word or choice, 0..1) for labeled and choice data, ``exact_match`` and
``f1`` (SQuAD, 0..100) for QA, ``rouge1/2/L`` and ``bleu`` for seq2seq, and ``TASK/loss``. ``average``, the
mean of each task's main metric (accuracy x 100, F1, ROUGE-L), selects the best model.

From an encoder run (a family that does not write text: bert, xlnet, elmo) the same ``--task multitask``
trains one shared encoder with one head per task instead (``multitask_heads``, MT-DNN); ``bind`` dispatches.
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
from warmstart.data.options import SPLITS, data_options, split_files
from warmstart.data.to_text import parse_label_words
from warmstart.errors import WarmstartError
from warmstart.objectives.lm_loss import head_loss, token_loss, with_perplexity
from warmstart.tasks.base import TrainBatches
from warmstart.tasks.corpus_member import CORPUS, CorpusMixedBatches, corpus_objective, corpus_windows
from warmstart.tasks.multitask_heads import HeadsMultitask
from warmstart.tasks.text_metrics import output_scores, text_stats, with_bleu
from warmstart.tasks.text_to_text import SCORING, TextPairs, TextToTextTask, TextToTextUnit, text_records


@dataclass
class MultitaskConfig:
    tasks: list[str] = opt(
        [],
        "multitask: DATASET=PREFIX per task (name, file or hf:NAME), e.g. news-headlines=headline,"
        "rotten-tomatoes=sentiment; inputs read 'PREFIX: text' (write the prefix without its colon; "
        "default: the dataset's name; DATASET= for no prefix); a corpus (e.g. wiki-leads) is trained with "
        "the family's self-supervised objective, without a prefix. From an encoder run (bert, roberta, "
        "electra, xlnet, elmo): DATASET per task, no prefix, one shared encoder and one head per task "
        "by the dataset's kind (labeled -> classification, tagging -> tagging, qa -> extractive_qa, "
        "choice -> multiple_choice), e.g. rotten-tomatoes,brown-pos,wiki-qa",
    )
    mixing: str = opt(
        "proportional",
        "multitask: task rates proportional (to size), temperature (size^(1/T)) or equal (an encoder's "
        "multitask draws one task per micro-batch at these rates)",
    )
    temperature: float = opt(2.0, "multitask, temperature mixing: rates proportional to size^(1/T) (T5: 2)")
    cap: int | None = opt(
        None, "multitask: count at most N examples per task in proportional/temperature rates (T5's K)"
    )
    label_words: list[str] = opt(
        [],
        "multitask, text-to-text: LABEL=WORD items, the word written for a class label (e.g. fresh=positive)",
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
    and ``scoring`` (a corpus: training windows ``{"ids"}`` only); sets ``task.mixture`` (name -> rate) and,
    with a corpus, ``task.corrupt``. ``cfg`` is a ``FinetuneConfig``: its data options (columns, split seed,
    train_limit per task) apply to every dataset."""
    mc, d = cfg.multitask, cfg.data
    if d.dataset or split_files(d):
        raise WarmstartError(
            "task multitask reads its datasets from multitask.tasks, not from --dataset or --*-file "
            "(data.dataset, data.train_file, ...)",
            "drop --dataset and list every dataset: multitask.tasks=DATASET=PREFIX,DATASET=PREFIX",
        )
    specs = parse_tasks(mc.tasks)
    words = parse_label_words(mc.label_words)
    options = data_options(d, "seq2seq")
    records: dict[str, list[dict]] = {s: [] for s in SPLITS}
    names, sizes, shown = [], [], []
    for dataset, given in specs:
        data = open_dataset(dataset, options)
        if data.name in names:
            raise WarmstartError(f"{data.name} is listed twice in multitask.tasks", "list each dataset once")
        if data.kind == CORPUS:
            rows = _corpus_rows(data.name, given, options, cfg, task)
            records["train"] += rows
            size, what = len(rows), f"corpus, {len(rows):,} windows of {len(rows[0]['ids'])} tokens"
        elif data.kind in SCORING:
            size = _task_rows(data, given, words, cfg, records)
            what = f"{size:,} examples"
        else:
            raise WarmstartError(
                f"{data.name} is a {data.kind} dataset, which has no text-to-text form",
                f"list {', '.join(SCORING)} datasets or corpora in multitask.tasks",
            )
        names.append(data.name)
        sizes.append(size)
        shown.append(what)
    task.mixture = dict(zip(names, mixing_rates(sizes, mc.mixing, mc.temperature, mc.cap)))
    listed = ", ".join(f"{n} ({w}) {r:.3f}" for (n, r), w in zip(task.mixture.items(), shown))
    print(f"multitask, {mc.mixing} mixing: {listed}", file=sys.stderr)
    return records, " + ".join(names)


def _task_rows(data, given: str | None, words: dict, cfg, records: dict[str, list[dict]]) -> int:
    """Adds a supervised dataset's text pairs to every split of ``records``; its training examples."""
    prefix = task_prefix(data.name if given is None else given)
    for split in SPLITS:
        limit = cfg.data.train_limit if split == "train" else cfg.multitask.eval_limit
        rows = list(itertools.islice(data.records(split), limit))
        if not rows:
            raise WarmstartError(
                f"the {split} split of {data.name} is empty", "use more data or other split fractions"
            )
        where = f"{data.name} ({split})"
        records[split] += text_records(rows, data.kind, words, where, prefix, task=data.name)
    return len([r for r in records["train"] if r["task"] == data.name])


def _corpus_rows(name: str, given: str | None, options, cfg, task: MultitaskTask) -> list[dict]:
    """A corpus's training windows as records ``{"ids", "task", "scoring": "corpus"}``."""
    if given:
        raise WarmstartError(
            f"the corpus {name} in multitask.tasks has the prefix '{given}'",
            f"write {name} alone: a corpus is trained with the family's objective, without a prefix",
        )
    width, task.corrupt = corpus_objective(task.family, task.tokenizer, cfg.task.max_length)
    name, windows = corpus_windows(name, options, task.tokenizer, width, cfg.data.train_limit)
    return [{"ids": ids, "task": name, "scoring": CORPUS} for ids in windows]


class TaggedPairs(TextPairs):
    """Text pairs whose rows carry their task: batches add ``tasks`` (names) when any row is tagged. Rows of
    several tasks pad together like any text pairs. A corpus row (scoring ``corpus``) holds a raw window as
    its source; ``take`` makes its pair with ``corrupt`` and the batch's ``generator``."""

    def __init__(self, pairs: TextPairs, tasks: list, scoring=None, golds=None, corrupt=None):
        vars(self).update(vars(pairs))
        self.tasks, self.corrupt = list(tasks), corrupt
        if scoring is not None:
            self.scoring = list(scoring)
        if golds is not None:
            self.golds = [list(g) for g in golds]

    def take(self, idx, generator: torch.Generator | None = None) -> dict:
        idx = list(idx)
        src, tgt = [], []
        for i in idx:
            if self.scoring[i] == CORPUS:
                source, target = self.corrupt(torch.as_tensor(self.sources[i]), generator)
                src.append(source.tolist())
                tgt.append(target.tolist())
            else:
                src.append(self.sources[i])
                tgt.append(self.targets[i])
        batch = self.pairs_batch(src, tgt, idx)
        tags = [self.tasks[i] for i in idx]
        if any(t is not None for t in tags):
            batch["tasks"] = tags
        return batch


def _scores(scoring: str, predictions: list[str], references: list[str], golds: list[list[str]]) -> dict:
    if scoring == "label":
        return {"accuracy": output_scores(scoring, predictions, golds)["exact_match"]}
    if scoring == "answer":
        return output_scores(scoring, predictions, golds)
    return text_stats(predictions, references)


class MultitaskUnit(TextToTextUnit):
    """The text-to-text unit; on tagged evaluation batches it scores every task on its own rows."""

    best_metric = ("average", "max")

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict]:
        tags = batch.get("tasks")
        if not tags:
            return super().forward(batch)
        hidden, labels = self.states(batch)
        if self.training:
            return self.member_losses(hidden, labels, tags)
        logits = self.model.lm_logits(hidden)
        loss, stats = token_loss(logits, labels)
        generated, _ = self.outputs(batch)  # choice rows: the likeliest choice (task.choice_scoring)
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

    def member_losses(
        self, hidden: torch.Tensor, labels: torch.Tensor, tags: list
    ) -> tuple[torch.Tensor, dict]:
        """The training loss over every row (the mean over their tokens, as one head_loss of the batch), and
        each member's ``NAME/loss`` as (sum, tokens): every member of the mixture, (0, 0) when absent, so
        every batch and process reports the same keys."""
        total, count, stats = hidden.new_zeros(()), 0, {}
        for name in dict.fromkeys([*self.task[0].mixture, *tags]):
            rows = [k for k, t in enumerate(tags) if t == name]
            if not rows:
                stats[f"{name}/loss"] = (0.0, 0)
                continue
            picked = torch.tensor(rows, device=hidden.device)
            mean, part = head_loss(self.model, hidden[picked], labels[picked], True)
            n = part["loss"][1]
            total = total + mean.float() * n
            count += n
            stats[f"{name}/loss"] = part["loss"]
        return total / max(count, 1), {"loss": (total.detach(), count), **stats}

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
    pipeline_tag = None  # a mixture: no one hub pipeline, no serving, no samples in its report
    served_as = ""
    example = ""
    report_samples = False

    kinds = ("seq2seq",)  # `warmstart evaluate` on one dataset; training reads multitask.tasks

    def __init__(self, cfg):
        super().__init__(cfg)
        self.mixture: dict[str, float] = {}
        self.corrupt = None  # with a corpus member: its objective's (window, generator) -> (input, output)
        self.heads: HeadsMultitask | None = None  # an encoder's run: one head per task (multitask_heads.py)

    def bind(self, tokenizer, config_json: dict, family) -> None:
        """A family that writes text learns the tasks as text; an encoder gets one head per task."""
        if family is not None and not family.model.generates:
            self.heads = HeadsMultitask(self.cfg)
            self.heads.bind(tokenizer, config_json, family)
            self.hf_architecture, self.kind = self.heads.hf_architecture, self.heads.kind
            return
        super().bind(tokenizer, config_json, family)

    def labels(self, records: list[dict]) -> list[str]:
        return self.heads.labels(records) if self.heads else super().labels(records)

    def settle(self, cfg, train: list[dict]):
        if not self.heads:
            return super().settle(cfg, train)
        cfg = self.heads.settle(cfg, train)
        self.cfg = cfg.task
        return cfg

    def accepts(self, kind: str) -> bool:
        return self.heads.accepts(kind) if self.heads else super().accepts(kind)

    def prepare(self, records: list[dict], kind: str, where: str) -> list[dict]:
        return (
            self.heads.prepare(records, kind, where) if self.heads else super().prepare(records, kind, where)
        )

    def encode(self, records: list[dict], tokenizer, labels: list[str], where: str) -> TaggedPairs:
        """Text pairs first, then the corpus windows (raw: corrupted when drawn into a batch)."""
        if self.heads:
            return self.heads.encode(records, tokenizer, labels, where)
        texts = [r for r in records if "ids" not in r]
        windows = [r for r in records if "ids" in r]
        pairs = super().encode(texts, tokenizer, labels, where)
        for r in windows:
            pairs.sources.append(r["ids"])
            pairs.targets.append([])
            pairs.refs.append("")
            pairs.scoring.append(CORPUS)
            pairs.golds.append([""])
            pairs.lengths.append(len(r["ids"]))
        return TaggedPairs(pairs, [r.get("task") for r in texts + windows], corrupt=self.corrupt)

    def build(self, model: torch.nn.Module, labels: list[str]) -> MultitaskUnit:
        return self.heads.build(model, labels) if self.heads else MultitaskUnit(model, self)

    def read_splits(self, cfg) -> tuple[dict[str, list[dict]], str]:
        if self.heads:
            return self.heads.read_splits(cfg, parse_tasks(cfg.multitask.tasks))
        return read_multitask(cfg, self)

    def train_batches(self, features, batch_size: int, seed: int):
        """The training source: mixed by ``self.mixture`` (set by ``read_multitask``)."""
        if self.heads:
            return self.heads.train_batches(features, batch_size, seed)
        if not self.mixture:
            return TrainBatches(features, batch_size, seed)
        mixed = CorpusMixedBatches if self.corrupt is not None else MixedBatches
        return mixed(features, batch_size, seed, self.mixture)
