"""Multi-task learning with a shared encoder and one head per task (MT-DNN, Liu et al. 2019): ``--task
multitask`` on an encoder run (bert, roberta, electra, xlnet, elmo: a family that does not write text).

Every dataset of ``multitask.tasks`` gets the head its own single-task finetune builds, chosen by the
dataset's kind: labeled -> classification, tagging -> tagging, qa -> extractive_qa, choice ->
multiple_choice; a seq2seq dataset or a corpus is refused. A labeled dataset's problem is read from its
labels (``|``-joined: multi_label; numbers not all whole: regression; else single_label) unless
``task.problem`` names one, which then applies to every labeled member. Prefixes (``DATASET=PREFIX``) and
``multitask.label_words`` are refused: they are text written into a text-to-text model's input, and a head
needs none.

Training batches are mixed by the same rates as the text-to-text multitask (``multitask.mixing``,
``temperature``, ``cap``; data/mixing.py), but a micro-batch holds ONE task: micro-batch ``i`` draws its task
with probability r_j (seeded by (seed, i)) and takes that task's next rows in its seeded per-pass order. Rows
of different kinds cannot pad together (a tagger's word labels, QA's spans, a choice's (rows, choices,
tokens) inputs) and each head has its own loss; MT-DNN also draws one task per mini-batch. Batch ``i`` is a
pure function of ``i`` (``MixedBatches``' bookkeeping): resuming replays nothing. The step weighs a
micro-batch's mean loss by its rows (examples or QA windows), so tasks count as often as they are drawn;
each member's own loss is logged as ``NAME/loss``.

Evaluation scores every task on its own validation / test rows with its own head's metrics, as
``NAME/METRIC`` (``NAME/accuracy``, ``NAME/macro_f1``, ``NAME/f1``, ``NAME/pearson``, ...); ``average``, the
mean of the heads' main metrics x 100 (QA's F1 is 0..100 already), selects the best model.

The checkpoint holds the shared encoder as ``encoder.*`` (what a later ``finetune --init RUN`` starts from)
and each head as ``heads.NAME.*``; its label map (config.json's id2label) lists the heads, one JSON object
per head (name, task, problem, labels), which is what rebuilds them. ``--head NAME`` (evaluate, predict,
export, serve; ``warmstart.load(RUN, head=NAME)``) uses one head as the single-task model of its task
(checkpoints/head_view.py).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import sys

import numpy as np
from torch import nn

from warmstart.data.catalog import open_dataset
from warmstart.data.mixing import MixedBatches, mixing_rates
from warmstart.data.options import SPLITS, data_options, split_files
from warmstart.errors import WarmstartError
from warmstart.tasks.base import FITS, Features, Task
from warmstart.tasks.classification import ClassificationTask
from warmstart.tasks.extractive_qa import ExtractiveQATask, QuestionAnswering, settled_null_answers
from warmstart.tasks.joint import unshare
from warmstart.tasks.multiple_choice import MultipleChoiceTask
from warmstart.tasks.tagging import TaggingTask

BY_NAME = {cls.name: cls for cls in (ClassificationTask, TaggingTask, ExtractiveQATask, MultipleChoiceTask)}
MEMBERS = {kind: BY_NAME[name] for kind, name in FITS.items() if name in BY_NAME}  # a dataset's kind -> head
_PICK = 0x68656164  # seed-sequence salt of the task drawn for each micro-batch


def head_name(name: str) -> str:
    """A dataset's name as a head's and its metrics' name: no ``/`` or ``.`` (hf:org/name -> hf_org_name)."""
    return re.sub(r"[^\w-]", "_", name)


def _number(label) -> float | None:
    try:
        return float(label)
    except (TypeError, ValueError):
        return None


def problem_of(records: list[dict], separator: str, given: str = "single_label") -> str:
    """A labeled dataset's problem: ``given`` when it is not the default (``task.problem`` applies to every
    labeled member), else read from the training labels: lists or ``separator``-joined strings are
    multi_label, numbers of which some are not whole regression, anything else single_label."""
    if given != "single_label":
        return given
    labels = [r.get("label") for r in records]
    if any(isinstance(x, list | tuple) or (isinstance(x, str) and separator in x) for x in labels):
        return "multi_label"
    numbers = [_number(x) for x in labels]
    if all(x is not None for x in numbers) and any(not x.is_integer() for x in numbers):
        return "regression"
    return "single_label"


def refusal(names) -> WarmstartError:
    """The one line for using a multitask model one input at a time without naming a head (evaluate,
    predict, export, serve, warmstart.load: checkpoints/head_view.py makes a head a single-task model)."""
    names = ", ".join(names)
    return WarmstartError(
        f"this multitask model has one head per task ({names}): one input at a time is for one of them",
        f"pass --head NAME (one of: {names})",
    )


def head_specs(labels: list[str]) -> list[dict]:
    """The heads a multitask encoder's label map lists: name, task, problem and labels of each."""
    try:
        specs = [json.loads(x) for x in labels]
        specs = [{k: s[k] for k in ("name", "task", "problem", "labels")} for s in specs]
        if all(s["task"] in BY_NAME for s in specs):
            return specs
    except (ValueError, KeyError, TypeError):
        pass
    raise WarmstartError(
        "the model's label map does not list multitask heads (name, task, problem, labels)",
        "pass a run written by `warmstart finetune --task multitask` from an encoder",
    )


class HeadsFeatures(Features):
    """Every member's encoded split side by side: row ``k`` is row ``local[k]`` of the features of the
    member ``tasks[k]`` (``MixedBatches`` reads ``tasks``); evaluation batches go member by member."""

    def __init__(self, parts: dict[str, Features]):
        self.parts = parts
        self.tasks, self.local, self.lengths = [], [], []
        for name, part in parts.items():
            self.tasks += [name] * len(part)
            self.local += range(len(part))
            self.lengths += list(part.lengths)

    def num_examples(self) -> int:
        return sum(part.num_examples() for part in self.parts.values())

    def take(self, idx) -> dict:
        idx = list(idx)
        names = {self.tasks[i] for i in idx}
        if len(names) != 1:
            raise ValueError(f"a multitask micro-batch holds one task, these rows hold {sorted(names)}")
        name = names.pop()
        return {**self.parts[name].take([self.local[i] for i in idx]), "task": name}

    def eval_batches(self, batch_size: int):
        for name, part in self.parts.items():
            for batch in part.eval_batches(batch_size):
                yield {**batch, "task": name}

    def metric_batches(self, batch_size: int):
        for name, part in self.parts.items():
            for batch in part.metric_batches(batch_size):
                yield {**batch, "task": name}

    def prediction_batches(self, batch_size: int):
        return ((None, batch) for batch in self.eval_batches(batch_size))  # the examples in order


class OneTaskBatches(MixedBatches):
    """``MixedBatches`` whose micro-batch ``i`` holds one task, drawn with its rate (seeded by (seed, i))."""

    def picks(self, index: int) -> np.ndarray:
        u = np.random.default_rng([self.seed, _PICK, index]).random()
        j = min(int(np.searchsorted(self.cdf, u, side="right")), len(self.names) - 1)
        return np.full(self.batch_size, j)


class HeadsUnit(nn.Module):
    """A shared ``encoder`` and one head per task (each a single-task unit whose encoder is the shared one,
    kept out of its own weights); ``forward(batch)`` runs the head the batch's ``task`` names."""

    best_metric = ("average", "max")

    def __init__(self, encoder: nn.Module, heads: dict[str, nn.Module]):
        super().__init__()
        self.encoder = encoder
        self.heads = nn.ModuleDict({name: unshare(head, encoder) for name, head in heads.items()})

    def forward(self, batch: dict):
        name = batch["task"]
        loss, stats = self.heads[name]({k: v for k, v in batch.items() if k != "task"})
        rows = int(batch["input_ids"].shape[0])
        total = (loss.detach() * rows, rows)  # the step weighs each micro-batch by its rows
        if self.training:  # every member's NAME/loss in every batch (train/step.py's PART/KEY stats)
            parts = {f"{other}/loss": (0.0, 0) for other in self.heads}
            return loss, {"loss": total, **parts, f"{name}/loss": stats["loss"]}
        return loss, {"loss": total, **{f"{name}/{key}": value for key, value in stats.items()}}

    def summarize(self, means: dict) -> dict:
        """Each head's own metrics as NAME/METRIC, and ``average``: the mean of their main metrics x 100."""
        out = {k: v for k, v in means.items() if "/" not in k}
        mains = []
        for name, head in self.heads.items():
            mine = {k.partition("/")[2]: v for k, v in means.items() if k.partition("/")[0] == name}
            if not mine:
                continue
            mine = head.summarize(mine) if hasattr(head, "summarize") else mine
            out.update({f"{name}/{k}": v for k, v in mine.items() if not k.startswith("_")})
            main = mine.get(head.best_metric[0])
            if main is not None:
                mains.append(main if isinstance(head, QuestionAnswering) else 100.0 * main)
        if mains:
            out["average"] = sum(mains) / len(mains)
        return out

    def predict(self, batch: dict) -> list[dict]:
        raise refusal(self.heads)

    def logits(self, batch: dict):
        """What an ONNX export would trace: refused, as ``predict``."""
        raise refusal(self.heads)


class HeadsMultitask(Task):
    """``--task multitask`` on an encoder: the members' own tasks behind one Task (module docstring)."""

    name = "multitask"
    kind = "labeled"
    hf_architecture = "BertModel"  # the shared encoder; the heads have no one transformers class

    def __init__(self, cfg):
        super().__init__(cfg)
        self.mixture: dict[str, float] = {}
        self.members: dict[str, Task] = {}
        self.bound: tuple = ()

    def bind(self, tokenizer, config_json: dict, family) -> None:
        self.bound = (tokenizer, config_json, family)

    def member(self, name: str, task: str, problem: str = "single_label") -> Task:
        """The member ``name``'s task (made once, bound like a single-task finetune's)."""
        if name not in self.members:
            cfg = dataclasses.replace(self.cfg, name=task, problem=problem)
            self.members[name] = BY_NAME[task](cfg)
            if self.bound:
                self.members[name].bind(*self.bound)
        return self.members[name]

    def settle(self, cfg, train: list[dict]):
        return settled_null_answers(cfg, self, train)  # its QA members'

    def read_splits(self, cfg, specs: list[tuple[str, str | None]]) -> tuple[dict[str, list[dict]], str]:
        """Every member's splits, each record tagged with its member's ``task``; sets ``self.mixture``."""
        mc, d = cfg.multitask, cfg.data
        if d.dataset or split_files(d) or mc.label_words:
            raise WarmstartError(
                "an encoder multitask reads its datasets from multitask.tasks alone (no --dataset, --*-file "
                "or multitask.label_words: each head predicts its own labels)",
                "drop them and list every dataset: multitask.tasks=rotten-tomatoes,brown-pos",
            )
        records: dict[str, list[dict]] = {s: [] for s in SPLITS}
        sizes, shown = [], []
        for dataset, prefix in specs:
            if prefix is not None:
                raise WarmstartError(
                    f"multitask.tasks gives {dataset} the prefix '{prefix}': a prefix is text for a "
                    "text-to-text model, and an encoder gives each task its own head instead",
                    f"write {dataset} alone",
                )
            name, size, task = self._read(dataset, cfg, records)
            sizes.append(size)
            shown.append(f"{name} ({task}, {size:,} examples)")
        names = list(self.members)
        self.mixture = dict(zip(names, mixing_rates(sizes, mc.mixing, mc.temperature, mc.cap)))
        listed = ", ".join(f"{w} {r:.3f}" for w, r in zip(shown, self.mixture.values()))
        print(f"multitask, {mc.mixing} mixing, one head per task: {listed}", file=sys.stderr)
        return records, " + ".join(names)

    def _read(self, dataset: str, cfg, records: dict) -> tuple[str, int, str]:
        """Adds one dataset's splits to ``records``; (its head's name, training examples, task name)."""
        data = open_dataset(dataset, data_options(cfg.data))
        name = head_name(data.name)
        if name in self.members:
            raise WarmstartError(f"{data.name} is listed twice in multitask.tasks", "list each dataset once")
        if data.kind not in MEMBERS:
            raise WarmstartError(
                f"{data.name} is a {data.kind} dataset, which has no head on an encoder",
                f"list {', '.join(MEMBERS)} datasets, or start from a t5, bart or gpt2 run to train it "
                "text-to-text",
            )
        rows = {}
        for split in SPLITS:
            limit = cfg.data.train_limit if split == "train" else cfg.multitask.eval_limit
            rows[split] = list(itertools.islice(data.records(split), limit))
            if not rows[split]:
                raise WarmstartError(
                    f"the {split} split of {data.name} is empty", "use more data or other split fractions"
                )
        cls = MEMBERS[data.kind]
        labeled = cls is ClassificationTask
        problem = problem_of(rows["train"], self.cfg.label_separator, self.cfg.problem) if labeled else ""
        member = self.member(name, cls.name, problem or "single_label")
        for split, part in rows.items():
            prepared = member.prepare(part, data.kind, f"{data.name} ({split})")
            records[split] += [{**r, "task": name} for r in prepared]
        return name, len(rows["train"]), cls.name + (f", {problem}" if problem else "")

    def labels(self, records: list[dict]) -> list[str]:
        """The heads, one JSON object each: name, task, problem and the member's own labels."""
        out = []
        for name, member in self.members.items():
            mine = member.labels([r for r in records if r.get("task") == name])
            spec = {"name": name, "task": member.name, "problem": member.cfg.problem, "labels": mine}
            out.append(json.dumps(spec))
        return out

    def heads(self, labels: list[str]) -> list[dict]:
        specs = head_specs(labels)
        for s in specs:
            self.member(s["name"], s["task"], s["problem"])
        return specs

    def encode(self, records: list[dict], tokenizer, labels: list[str], where: str) -> HeadsFeatures:
        specs = self.heads(labels)
        if any("task" not in r for r in records):
            raise refusal([s["name"] for s in specs])
        split = where[where.rfind(" (") + 2 : -1] if where.endswith(")") else where
        parts = {}
        for s in specs:
            mine = [r for r in records if r["task"] == s["name"]]
            member = self.members[s["name"]]
            parts[s["name"]] = member.encode(mine, tokenizer, s["labels"], f"{s['name']} ({split})")
        return HeadsFeatures(parts)

    def build(self, encoder: nn.Module, labels: list[str]) -> HeadsUnit:
        heads = {s["name"]: self.members[s["name"]].build(encoder, s["labels"]) for s in self.heads(labels)}
        return HeadsUnit(encoder, heads)

    def accepts(self, kind: str) -> bool:
        raise refusal(self.members or ["its tasks"])

    def train_batches(self, features: HeadsFeatures, batch_size: int, seed: int) -> OneTaskBatches:
        return OneTaskBatches(features, batch_size, seed, self.mixture)
