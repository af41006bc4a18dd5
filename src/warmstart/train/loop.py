"""The one fit loop, for pretraining and finetuning alike.

It only needs a training *unit* (an ``nn.Module`` whose ``forward(batch)`` returns ``(loss, stats)`` where
``stats`` maps a metric name to ``(sum, count)``), a training source whose ``batch(i)`` is micro-batch ``i``
(a pure function of ``i``, so resuming replays nothing), and an iterable of evaluation batches.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.train.checkpoint import Checkpointer
from warmstart.train.logging import RunLogger, progress
from warmstart.train.optim import adamw
from warmstart.train.schedule import lr_multiplier


@dataclass
class TrainConfig:
    steps: int = opt(1000, "optimizer steps to train for")
    batch_size: int = opt(32, "sequences per micro-batch")
    grad_accum: int = opt(1, "micro-batches per optimizer step (effective batch = batch_size x grad_accum)")
    lr: float = opt(5e-4, "peak learning rate")
    weight_decay: float = opt(0.01, "AdamW weight decay (never applied to biases and norms)")
    beta1: float = opt(0.9, "AdamW beta1")
    beta2: float = opt(0.98, "AdamW beta2")
    eps: float = opt(1e-6, "AdamW epsilon")
    schedule: str = opt("linear", "learning-rate schedule after warmup: linear, cosine, constant")
    warmup_steps: int | None = opt(None, "warmup steps (default: warmup_ratio x steps)")
    warmup_ratio: float = opt(0.06, "warmup as a fraction of steps when warmup_steps is not set")
    min_lr_ratio: float = opt(0.0, "final learning rate as a fraction of the peak")
    clip_norm: float = opt(1.0, "clip the gradient norm to this value (0 = off)")
    bf16: bool = opt(False, "bfloat16 autocast for the forward pass (CPU and CUDA)")
    eval_every: int = opt(200, "evaluate every N steps (0 = only at the end)")
    eval_batches: int = opt(50, "at most this many validation batches per evaluation")
    save_every: int = opt(500, "write a checkpoint every N steps (0 = only at the end)")
    keep_last: int = opt(2, "keep the last K checkpoints (the best model is kept in RUN/best)")
    log_every: int = opt(10, "log training loss every N steps")
    seed: int = opt(0, "seed for initialisation, data order, masks and dropout")
    device: str = opt("auto", "cpu, cuda, cuda:N or auto")
    eval_at_start: bool = opt(True, "evaluate once before the first step (the curve's starting point)")
    progress: bool = opt(True, "show the progress bar")
    early_stopping: int = opt(0, "stop after N evaluations without improvement of the best metric (0 = off)")


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise WarmstartError(f"train.device={name} but no CUDA device is available", "use train.device=cpu")
    return torch.device(name)


def _to(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}


def _tokens(batch: dict) -> int:
    mask = batch.get("attention_mask")
    return int(mask.sum()) if mask is not None else batch["input_ids"].numel()


@torch.no_grad()
def evaluate(unit, batches, device: torch.device, bf16: bool = False) -> dict:
    """Mean of every stat over the evaluation batches (sums / counts; the total for a name ending in
    ``_sum``), plus the unit's derived metrics.

    The unit is moved to ``device`` first: a model loaded from a checkpoint lives on the CPU."""
    unit.to(device)
    was_training = unit.training
    unit.eval()
    totals: dict[str, list[float]] = {}
    for batch in batches:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            _, stats = unit(_to(batch, device))
        for k, (s, n) in stats.items():
            acc = totals.setdefault(k, [0.0, 0.0])
            acc[0] += float(s)
            acc[1] += float(n)
    unit.train(was_training)
    # a stat named *_sum keeps its total (corpus-level metrics such as BLEU need counts, not means)
    means = {k: s if k.endswith("_sum") else s / n for k, (s, n) in totals.items() if n}
    return unit.summarize(means) if hasattr(unit, "summarize") else means


def _better(value: float, best: float | None, mode: str) -> bool:
    return best is None or (value < best if mode == "min" else value > best)


def _stale_evaluations(step: int, best_step: int | None, every: int) -> int:
    """Evaluations since the best one (every evaluation counts when none was best yet)."""
    if not every:
        return 0
    return (step - (best_step or 0)) // every


def fit(
    unit,
    train,
    eval_batches,
    cfg: TrainConfig,
    checkpointer: Checkpointer,
    resume: bool = False,
    hooks=(),
    desc: str = "train",
    lr_scales: dict[str, float] | None = None,
) -> dict:
    """Train ``unit`` for ``cfg.steps`` steps; returns the last evaluation metrics and the best step."""
    device = pick_device(cfg.device)
    unit.to(device)
    optimizer = adamw(unit, cfg.lr, cfg.weight_decay, (cfg.beta1, cfg.beta2), cfg.eps, lr_scales=lr_scales)
    warmup = cfg.warmup_steps if cfg.warmup_steps is not None else int(cfg.warmup_ratio * cfg.steps)
    lr_at = lr_multiplier(cfg.schedule, warmup, cfg.steps, cfg.min_lr_ratio)
    metric, mode = getattr(unit, "best_metric", ("loss", "min"))
    state = {"step": 0, "best_step": None, "best_value": None}
    latest = checkpointer.latest() if resume else None
    if latest is not None:
        state.update(checkpointer.restore(latest, unit, optimizer))
    step = state["step"]
    logger = RunLogger(checkpointer.run_dir, resume_step=step if resume else None)
    bar = progress(cfg.steps, step, desc, cfg.progress)
    last_eval: dict = {}
    unit.train()
    window_tokens, window_start = 0, time.perf_counter()
    try:
        if step == 0 and cfg.eval_at_start:
            logger.log(0, "validation", evaluate(unit, eval_batches, device, cfg.bf16))
        while step < cfg.steps and not state.get("stopped_early"):
            lr = cfg.lr * lr_at(step)
            for group in optimizer.param_groups:  # lr_scale: layer-wise decay and other per-group factors
                group["lr"] = lr * group.get("lr_scale", 1.0)
            loss_sum = 0.0
            for a in range(cfg.grad_accum):
                batch = _to(train.batch(step * cfg.grad_accum + a), device)
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.bf16):
                    loss, _ = unit(batch)
                (loss / cfg.grad_accum).backward()
                loss_sum += float(loss.detach())
                window_tokens += _tokens(batch)
            loss_value = loss_sum / cfg.grad_accum
            if not math.isfinite(loss_value):
                raise WarmstartError(
                    f"the loss became {loss_value} at step {step + 1}",
                    "lower train.lr or keep train.clip_norm on, then continue with --resume",
                )
            grad_norm = (
                float(torch.nn.utils.clip_grad_norm_(unit.parameters(), cfg.clip_norm))
                if cfg.clip_norm
                else None
            )
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            bar.update(1)
            if step % cfg.log_every == 0 or step == cfg.steps:
                elapsed = time.perf_counter() - window_start
                rate = window_tokens / max(elapsed, 1e-9)
                record = {"loss": loss_value, "lr": lr, "tokens_per_s": rate}
                if grad_norm is not None:
                    record["grad_norm"] = grad_norm
                record["epoch"] = train.position(step * cfg.grad_accum - 1)[0]
                logger.log(step, "train", record)
                bar.set_postfix(loss=f"{loss_value:.3f}", tok_s=f"{rate:,.0f}", refresh=False)
                window_tokens, window_start = 0, time.perf_counter()
            paused = time.perf_counter()  # evaluation and checkpoint time is left out of tokens/s
            if (cfg.eval_every and step % cfg.eval_every == 0) or step == cfg.steps:
                last_eval = evaluate(unit, eval_batches, device, cfg.bf16)
                logger.log(step, "validation", last_eval)
                if metric in last_eval and _better(last_eval[metric], state["best_value"], mode):
                    state["best_step"], state["best_value"] = step, last_eval[metric]
                    checkpointer.save_best(unit, {"step": step, "metric": metric, "value": last_eval[metric]})
                bar.write(f"step {step}: " + ", ".join(f"{k} {v:.4g}" for k, v in last_eval.items()))
                stale = _stale_evaluations(step, state["best_step"], cfg.eval_every)
                if cfg.early_stopping and stale >= cfg.early_stopping:
                    bar.write(f"early stopping: no better {metric} in {stale} evaluations")
                    state["stopped_early"] = True
            due = (cfg.save_every and step % cfg.save_every == 0) or step == cfg.steps
            if due or state.get("stopped_early"):
                state["step"] = step
                state["epoch"], state["batch_in_epoch"] = train.position(step * cfg.grad_accum)  # next batch
                checkpointer.save(unit, optimizer, dict(state), cfg.keep_last)
            window_start += time.perf_counter() - paused
            for hook in hooks:
                hook(step, loss_value)
    finally:
        bar.close()
        logger.close()
    checkpointer.save_final(unit)
    return {
        "metrics": last_eval,
        "best_step": state["best_step"],
        "best_value": state["best_value"],
        "step": step,
        "stopped_early": bool(state.get("stopped_early")),
    }
