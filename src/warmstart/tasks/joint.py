"""Joint training: the end task and self-supervised objectives on one shared model, in one fit loop.

Dery et al. 2021 ("Should we be pre-training?") train the end task jointly with auxiliary objectives on the
task's own text instead of pretraining first (TAPT, Gururangan et al. 2020). ``aux.objectives`` names them;
each keeps its own head and batches (windows of the task's training text, or of ``aux.corpus``) and its
loss is added with a weight. The weights are fixed (``aux.weights``) or learned (``aux.learn_weights``): a
simple first-order version of META-TARTAN (Dery et al. 2022): every ``aux.meta_every`` steps, each
objective's log-weight moves by ``aux.meta_lr`` x the cosine between its gradient and the end task's
gradient on a validation batch, on the shared parameters (objectives whose gradient agrees with the end
task's gain weight). It is that, not the paper's full meta-gradient through an inner update.

The training log (metrics.jsonl) holds each part's loss beside the total, ``task/loss`` and ``NAME/loss``
per objective, and with learned weights each ``NAME/weight`` (the PART/KEY stats of train/step.py).

The fit loop sees one unit and one batch stream: in training a batch is the task's batch plus "aux" (one
batch per objective) and, on the steps that learn weights, "dev"; in evaluation it is the task's own batch
and the unit is the task's. RUN/best and RUN/final hold the task's
model alone (the objectives' heads live only in the step checkpoints, for exact resume).

Checked before the run directory exists (``check_aux``); the objectives' text is ``aux_texts``; RUN/best
and RUN/final take ``exported``. `finetune` builds the objectives' units (their classes are the registry's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from warmstart.config import opt
from warmstart.data.catalog import open_dataset
from warmstart.data.order import step_generator
from warmstart.errors import WarmstartError
from warmstart.train import distributed as ddp
from warmstart.train.strategies import merged_state


@dataclass
class AuxConfig:
    objectives: list[str] = opt(
        [], "self-supervised objectives trained jointly with the task, e.g. mlm or mlm,electra (Dery et al.)"
    )
    weights: list[float] = opt([], "each objective's loss weight (default 1; learn_weights: the start)")
    corpus: str = opt("", "their text: a corpus name or file (default: the task's own training text)")
    corpus_limit: int = opt(20000, "aux.corpus: at most this many documents")
    seq_len: int = opt(0, "tokens per window of the objectives (0: task.max_length)")
    batch_size: int = opt(0, "windows per batch of each objective (0: train.batch_size)")
    learn_weights: bool = opt(
        False, "learn the weights from the end task's validation gradient (first-order META-TARTAN)"
    )
    meta_every: int = opt(10, "learn_weights: update the weights every N optimizer steps")
    meta_lr: float = opt(0.5, "learn_weights: step of a log-weight per unit of gradient cosine")

    def __post_init__(self):
        self.objectives = [o.strip() for item in self.objectives for o in str(item).split(",") if o.strip()]
        self.weights = [float(w) for w in self.weights]
        repeated = sorted({o for o in self.objectives if self.objectives.count(o) > 1})
        if repeated:  # each objective is one head and one weight: a second mlm would be dropped
            raise WarmstartError(
                f"aux.objectives names {', '.join(repeated)} more than once",
                "name each objective once (its weight is aux.weights), e.g. aux.objectives=[mlm,electra]",
            )
        if self.weights and len(self.weights) != len(self.objectives):
            raise WarmstartError(
                f"aux.weights has {len(self.weights)} values for {len(self.objectives)} objectives",
                "give one weight per objective, e.g. aux.objectives=[mlm,electra] aux.weights=[1,0.5]",
            )
        if any(not w > 0 for w in self.weights):
            raise WarmstartError("aux.weights must be above 0", "e.g. aux.weights=[0.5]")
        if self.meta_every < 1 or self.corpus_limit < 1:
            raise WarmstartError("aux.meta_every and aux.corpus_limit must be at least 1", "e.g. 10")


INPUT_SKIP = {"label", "labels", "tags", "target", "answers", "answer", "id"}


def task_texts(records: list[dict]) -> list[str]:
    """The input text of each record (what TAPT would pretrain on): its string fields and word lists, the
    label, tags, targets and answers left out."""
    out = []
    for r in records:
        parts = []
        for key, value in r.items():
            if key in INPUT_SKIP:
                continue
            if isinstance(value, str):
                parts.append(value)
            elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                parts.append(" ".join(value))
        if parts:
            out.append(" ".join(parts))
    return out


def unshare(unit: nn.Module, backbone: nn.Module) -> nn.Module:
    """``unit`` with its reference to the shared ``backbone`` kept out of its submodules, so that the
    backbone's weights are saved once (under the task's names) and the unit's own are its head's."""
    for name, child in list(unit.named_children()):
        if child is backbone:
            del unit._modules[name]
            object.__setattr__(unit, name, backbone)
    return unit


class JointUnit(nn.Module):
    """The task's unit plus auxiliary objective units that share its model; ``forward(batch)``."""

    def __init__(
        self, task: nn.Module, backbone: nn.Module, aux: dict[str, nn.Module], weights: list[float], cfg
    ):
        super().__init__()
        self.task = task
        self.backbone = [backbone]  # a list keeps it out of this module's children (it is the task's)
        self.aux = nn.ModuleDict({name: unshare(unit, backbone) for name, unit in aux.items()})
        self.cfg = cfg
        self.register_buffer("log_weights", torch.tensor([math.log(w) for w in weights], dtype=torch.float32))
        self.best_metric = getattr(task, "best_metric", ("loss", "min"))

    def weights(self) -> dict[str, float]:
        return {name: float(w) for name, w in zip(self.aux, self.log_weights.exp())}

    def learned(self) -> tuple[dict, str]:
        """What the run learned beside the task (train/loop.py's ``learned``): the objectives' weights."""
        return {"aux_weights": self.weights()}, f"aux weights at the end: {self.weights()}"

    def summarize(self, means: dict) -> dict:
        return self.task.summarize(means) if hasattr(self.task, "summarize") else means

    def forward(self, batch: dict):
        if "aux" not in batch:  # an evaluation batch: the task alone
            return self.task(batch)
        device = self.log_weights.device
        aux = [_to(b, device) for b in batch["aux"]]
        task_batch = {k: v for k, v in batch.items() if k not in ("aux", "dev")}
        if "dev" in batch and self.training and torch.is_grad_enabled():
            self._learn_weights(_to(batch["dev"], device), aux)
        loss, stats = self.task(task_batch)
        n = stats["loss"][1] if "loss" in stats else 1
        stats = {"task/loss": (loss.detach() * n, n), **{k: v for k, v in stats.items() if k != "loss"}}
        total = loss
        for (name, unit), w, aux_batch in zip(self.aux.items(), self.log_weights.exp(), aux):
            aux_loss, _ = unit(aux_batch)
            total = total + w * aux_loss
            stats[f"{name}/loss"] = (aux_loss.detach() * n, n)
            if self.cfg.learn_weights:  # the weight's trajectory
                stats[f"{name}/weight"] = (w.detach() * n, n)
        stats["loss"] = (total.detach() * n, n)  # the step's mean is over the task's examples
        return total, stats

    def _shared(self) -> list[nn.Parameter]:
        return [p for p in self.backbone[0].parameters() if p.requires_grad]

    def _learn_weights(self, dev_batch: dict, aux: list[dict]) -> None:
        """One first-order META-TARTAN update of the log-weights (see the module's docstring)."""
        shared = self._shared()
        if not shared:
            return
        dev_loss, _ = self.task(dev_batch)
        dev = _flat(torch.autograd.grad(dev_loss, shared, allow_unused=True), shared)
        for i, (unit, aux_batch) in enumerate(zip(self.aux.values(), aux)):
            aux_loss, _ = unit(aux_batch)
            g = _flat(torch.autograd.grad(aux_loss, shared, allow_unused=True), shared)
            cosine = float(dev @ g / (dev.norm() * g.norm()).clamp_min(1e-12))
            self.log_weights[i] = (self.log_weights[i] + self.cfg.meta_lr * cosine).clamp(-5.0, 2.0)


def _to(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}


def _flat(grads, params) -> torch.Tensor:
    return torch.cat(
        [(g if g is not None else torch.zeros_like(p)).float().reshape(-1) for g, p in zip(grads, params)]
    )


class JointBatches:
    """Micro-batch ``i``: the task's micro-batch ``i`` and micro-batch ``i`` of every objective's windows
    (each a pure function of ``i``: exact resume), plus a validation batch on the steps that learn weights."""

    def __init__(self, task_batches, aux_batches: list, dev=None, dev_every: int = 0, seed: int = 0):
        self.task, self.aux, self.dev = task_batches, aux_batches, dev
        self.dev_every, self.seed = dev_every, seed
        self.batches_per_epoch = task_batches.batches_per_epoch

    def batch(self, index: int) -> dict:
        out = {**self.task.batch(index), "aux": [a.batch(index) for a in self.aux]}
        if self.dev is not None and index % self.dev_every == 0:
            g = step_generator(self.seed + 7919, index)
            n = len(self.dev)
            picked = torch.randperm(n, generator=g)[: min(n, self.dev_batch)].tolist()
            out["dev"] = self.dev.take(sorted(picked))
        return out

    dev_batch = 32

    def position(self, index: int) -> tuple[int, int]:
        return self.task.position(index)


def check_aux(cfg, family: str, objectives: dict) -> None:
    """Refuse, before the run directory exists, objectives a ``family`` model cannot train and setups not
    covered; ``objectives``: the registry's table, name -> class."""
    if not cfg.aux.objectives:
        return
    if ddp.world() > 1 or cfg.train.fsdp:
        raise WarmstartError(
            "aux.objectives runs in one process only (torchrun splits the task's rows, not the objectives')",
            "run it without torchrun",
        )
    for name in cfg.aux.objectives:
        if name not in objectives:
            raise WarmstartError(
                f"unknown objective '{name}'", f"choose one of: {', '.join(sorted(objectives))}"
            )
        cls = objectives[name]
        if family not in cls.families or cls.data_kind != "windows":
            fits = [n for n, c in objectives.items() if family in c.families and c.data_kind == "windows"]
            raise WarmstartError(
                f"aux.objectives: {name} cannot train a {family} model beside a task",
                f"choose from: {', '.join(fits)}",
            )


def aux_texts(cfg, records: dict) -> list[str]:
    """The objectives' text: aux.corpus's documents (at most aux.corpus_limit), or the task's own inputs."""
    if not cfg.aux.corpus:
        return task_texts(records["train"])
    texts = []
    for r in open_dataset(cfg.aux.corpus).records("train"):
        texts += task_texts([r])
        if len(texts) >= cfg.aux.corpus_limit:
            break
    if not texts:
        raise WarmstartError(f"aux.corpus {cfg.aux.corpus} has no text", "name a corpus, e.g. wiki-leads")
    return texts


def exported(unit: nn.Module) -> dict:
    """The weights RUN/best and RUN/final hold: the unit's, LoRA merged; of a joint unit, the task's alone."""
    return merged_state(unit.task if isinstance(unit, JointUnit) else unit)
