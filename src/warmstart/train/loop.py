"""The one fit loop, for pretraining and finetuning alike.

It only needs a training *unit* (an ``nn.Module`` whose ``forward(batch)`` returns ``(loss, stats)`` where
``stats`` maps a metric name to ``(sum, count)``), a training source whose ``batch(i)`` is micro-batch ``i``
(a pure function of ``i``, so resuming replays nothing), and an iterable of evaluation batches.

Finetuning asks a family what differs about it, never its name: the model class's ``default_strategy``
((strategy, the line saying so): the strategy a run takes unless told, read from the card before any model
is built), its ``task_encoder()`` (what a task's head goes on, e.g. ELMo's layer mix), that encoder's
``TASK_PARAMETERS`` (what trains under every strategy: train/strategies.py), and ``learned() -> (entries,
line)`` on a trained unit or its encoder: what the run learned beside the test metrics (joint training's
objective weights, ELMo's layer mix), saved with them and printed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.train import distributed as ddp
from warmstart.train import trackers
from warmstart.train.precision import autocast, autocast_dtype
from warmstart.train.schedule import SCHEDULES


@dataclass
class TrainConfig:
    steps: int = opt(1000, "optimizer steps to train for")
    time_budget: float = opt(
        0.0,
        "minutes of wall time to hold the run to (0 = off): when warmup ends, the steps that fit at the pace "
        "so far (at most train.steps) are planned and the schedule decays over them",
    )
    batch_size: int = opt(
        32, "sequences per micro-batch in each process (torchrun: the global batch is N x this)"
    )
    grad_accum: int = opt(
        1, "micro-batches per optimizer step (effective batch = batch_size x grad_accum x processes)"
    )
    lr: float = opt(5e-4, "peak learning rate")
    weight_decay: float = opt(0.01, "AdamW weight decay (never applied to biases and norms)")
    beta1: float = opt(0.9, "AdamW beta1")
    beta2: float = opt(0.98, "AdamW beta2")
    eps: float = opt(1e-6, "AdamW epsilon")
    adam_bias_correction: bool = opt(
        True, "Adam's bias correction of the moments; false: BERT's original optimizer (BERTAdam)"
    )
    schedule: str = opt(
        "linear", "learning-rate schedule after warmup: linear, cosine, constant, wsd (hold, then decay)"
    )
    warmup_steps: int | None = opt(None, "warmup steps (default: warmup_ratio x steps)")
    warmup_ratio: float = opt(0.06, "warmup as a fraction of steps when warmup_steps is not set")
    min_lr_ratio: float = opt(0.0, "final learning rate as a fraction of the peak")
    decay_ratio: float = opt(0.2, "wsd: the rate decays over this final fraction of the steps after warmup")
    clip_norm: float = opt(1.0, "clip the gradient norm to this value (0 = off)")
    bf16: bool = opt(False, "bfloat16 autocast for the forward pass (CPU and CUDA)")
    fp16: bool = opt(
        False,
        "float16 autocast for the forward pass with a gradient scaler (V100/T4-class GPUs; also CPU); steps "
        "whose gradients overflow are skipped and counted (scaler_skipped)",
    )
    gradient_checkpointing: bool = opt(
        False,
        "recompute each block's activations in the backward pass: less memory, one more forward pass of time",
    )
    eval_every: int = opt(200, "evaluate every N steps (0 = only at the end)")
    eval_batches: int = opt(50, "at most this many validation batches per evaluation")
    save_every: int = opt(500, "write a checkpoint every N steps (0 = only at the end)")
    keep_last: int = opt(2, "keep the last K checkpoints (the best model is kept in RUN/best)")
    log_every: int = opt(10, "log training loss every N steps")
    seed: int = opt(0, "seed for initialisation, data order, masks and dropout")
    device: str = opt("auto", "cpu, cuda, cuda:N or auto")
    reuse_memory: bool = opt(
        True, "keep freed memory in the process (glibc malloc thresholds): fewer page faults per CPU step"
    )
    compile: bool = opt(
        False,
        "torch.compile the training module (parts it cannot trace run eagerly); the first step's "
        "compilation is printed and left out of tokens/s",
    )
    eval_at_start: bool = opt(True, "evaluate once before the first step (the curve's starting point)")
    progress: bool = opt(True, "show the progress bar")
    report_to: list[str] = opt(
        ["tensorboard"],
        "trackers that get the config, every metric, the test metrics and the run's files: tensorboard, "
        "mlflow (MLFLOW_TRACKING_URI), wandb (WANDB_PROJECT, WANDB_MODE); none: metrics.jsonl only",
    )
    early_stopping: int = opt(0, "stop after N evaluations without improvement of the best metric (0 = off)")
    metric_for_best_model: str | None = opt(
        None,
        "the validation metric that picks RUN/best and drives early stopping (accuracy, f1, loss...; "
        "default: the task's own)",
    )
    greater_is_better: bool | None = opt(
        None, "whether a higher metric_for_best_model is better (default: false for loss/perplexity/error)"
    )
    max_bad_steps: int = opt(
        10, "skip up to N steps with a NaN/inf loss or gradient norm (no update), then stop (0: at the first)"
    )
    rollback: bool = opt(
        False,
        "copy the weights and optimizer state before each update and roll the step back (a bad step) when "
        "the update leaves a NaN/inf weight; costs a copy per step (about 10 ms per 11M parameters on 2 "
        "cores). Off: such weights stop the run and are never written",
    )
    spike_factor: float = opt(
        10.0, "log a grad_spike record when the gradient norm exceeds this x its running median (0 = off)"
    )
    fsdp: bool = opt(False, "torchrun: shard parameters, gradients and optimizer state (FSDP) instead of DDP")
    dist_timeout: float = opt(
        1800.0, "torchrun: seconds a process waits for the others before it stops with an error"
    )

    def __post_init__(self):
        rules = [  # (valid, key, what it must be, a good value); fractions (warmup_ratio...): config.py
            (self.steps >= 0, "steps", "0 or more", "1000"),
            (self.time_budget >= 0, "time_budget", "0 (off) or more minutes", "10"),
            (self.batch_size >= 1, "batch_size", "at least 1", "32"),
            (self.grad_accum >= 1, "grad_accum", "at least 1", "1"),
            (0 <= self.lr <= 1, "lr", "in [0, 1] (AdamW steps of more than 1 break any model)", "3e-4"),
            (self.weight_decay >= 0, "weight_decay", "0 or more", "0.01"),
            (0 <= self.beta1 < 1, "beta1", "in [0, 1)", "0.9"),
            (0 <= self.beta2 < 1, "beta2", "in [0, 1)", "0.999"),
            (self.eps >= 0, "eps", "0 or more", "1e-8"),
            (self.schedule in SCHEDULES, "schedule", f"one of {', '.join(SCHEDULES)}", "linear"),
            (self.warmup_steps is None or self.warmup_steps >= 0, "warmup_steps", "0 or more", "100"),
            (self.clip_norm >= 0, "clip_norm", "0 (off) or more", "1.0"),
            (self.eval_batches >= 1, "eval_batches", "at least 1", "50"),
            (self.max_bad_steps >= 0, "max_bad_steps", "0 or more", "10"),
            (self.spike_factor == 0 or self.spike_factor > 1, "spike_factor", "0 (off) or above 1", "10"),
            (self.dist_timeout > 0, "dist_timeout", "above 0", "1800"),
            (trackers.valid(self.report_to), "report_to", "tensorboard/mlflow/wandb or none", "mlflow"),
        ]  # fmt: skip
        for key in ("eval_every", "save_every", "keep_last", "log_every", "early_stopping"):
            rules.append((getattr(self, key) >= 0, key, "0 or more", "0"))
        for ok, key, must, example in rules:
            if not ok:
                raise WarmstartError(
                    f"train.{key} must be {must}, got {getattr(self, key)!r}",
                    f"use e.g. train.{key}={example}",
                )
        autocast_dtype(self)  # fp16 and bf16 together: one line


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise WarmstartError(f"train.device={name} but no CUDA device is available", "use train.device=cpu")
    return torch.device(name)


def to_device(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}


@torch.no_grad()
def evaluate(
    unit, batches, device: torch.device, dtype: torch.dtype | bool | None = None, shown: str | None = None
) -> dict:
    """Mean of every stat over the evaluation batches (sums / counts; the total for a name ending in
    ``_sum``), plus the unit's derived metrics.

    The unit is moved to ``device`` first: a model loaded from a checkpoint lives on the CPU. ``dtype``:
    the autocast dtype the run trained with (``autocast_dtype(cfg.train)``; True means bfloat16); ``shown``:
    a progress bar's label (the first process shows it; its total is ``batches.total`` where known)."""
    unit.to(device)
    was_training = unit.training
    unit.eval()
    totals: dict[str, list[float]] = {}
    pairs = ddp.shares(batches, unit)  # torchrun: each process its share
    if shown is not None and ddp.is_main():
        from tqdm.auto import tqdm

        total = getattr(batches, "total", None)
        total = total if total is None or not ddp.active() else -(-total // ddp.world())  # a share
        pairs = tqdm(pairs, total=total, desc=shown, unit="batch", leave=False, dynamic_ncols=True)
    for batch, counted in pairs:
        with autocast(device, dtype):
            _, stats = unit(to_device(batch, device))
        for k, (s, n) in stats.items() if counted else ():
            acc = totals.setdefault(k, [0.0, 0.0])
            acc[0] += float(s)
            acc[1] += float(n)
    totals = ddp.add_up(totals, unit, batches)
    unit.train(was_training)
    # a stat named *_sum keeps its total (corpus-level metrics such as BLEU need counts, not means)
    means = {k: s if k.endswith("_sum") else s / n for k, (s, n) in totals.items() if n}
    return unit.summarize(means) if hasattr(unit, "summarize") else means
