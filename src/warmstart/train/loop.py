"""The one fit loop, for pretraining and finetuning alike.

It only needs a training *unit* (an ``nn.Module`` whose ``forward(batch)`` returns ``(loss, stats)`` where
``stats`` maps a metric name to ``(sum, count)``), a training source whose ``batch(i)`` is micro-batch ``i``
(a pure function of ``i``, so resuming replays nothing), and an iterable of evaluation batches.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.train import distributed as ddp
from warmstart.train.checkpoint import Checkpointer, step_dirs
from warmstart.train.guards import StepGuard
from warmstart.train.logging import RunLogger, progress
from warmstart.train.optim import adamw
from warmstart.train.schedule import SCHEDULES, lr_multiplier
from warmstart.train.signals import StopRequest
from warmstart.train.step import step_gradients


@dataclass
class TrainConfig:
    steps: int = opt(1000, "optimizer steps to train for")
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
    schedule: str = opt(
        "linear", "learning-rate schedule after warmup: linear, cosine, constant, wsd (hold, then decay)"
    )
    warmup_steps: int | None = opt(None, "warmup steps (default: warmup_ratio x steps)")
    warmup_ratio: float = opt(0.06, "warmup as a fraction of steps when warmup_steps is not set")
    min_lr_ratio: float = opt(0.0, "final learning rate as a fraction of the peak")
    decay_ratio: float = opt(0.2, "wsd: the rate decays over this final fraction of the steps after warmup")
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
    max_bad_steps: int = opt(
        10, "skip up to N steps with a NaN/inf loss or gradient norm (no update), then stop (0: at the first)"
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
            (self.batch_size >= 1, "batch_size", "at least 1", "32"),
            (self.grad_accum >= 1, "grad_accum", "at least 1", "1"),
            (self.lr >= 0, "lr", "0 or more", "3e-4"),
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
        ]  # fmt: skip
        for key in ("eval_every", "save_every", "keep_last", "log_every", "early_stopping"):
            rules.append((getattr(self, key) >= 0, key, "0 or more", "0"))
        for ok, key, must, example in rules:
            if not ok:
                raise WarmstartError(
                    f"train.{key} must be {must}, got {getattr(self, key)!r}",
                    f"use e.g. train.{key}={example}",
                )


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise WarmstartError(f"train.device={name} but no CUDA device is available", "use train.device=cpu")
    return torch.device(name)


def _to(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}


@torch.no_grad()
def evaluate(unit, batches, device: torch.device, bf16: bool = False) -> dict:
    """Mean of every stat over the evaluation batches (sums / counts; the total for a name ending in
    ``_sum``), plus the unit's derived metrics.

    The unit is moved to ``device`` first: a model loaded from a checkpoint lives on the CPU."""
    unit.to(device)
    was_training = unit.training
    unit.eval()
    totals: dict[str, list[float]] = {}
    for batch, counted in ddp.shares(batches, unit):  # torchrun: each process its share
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            _, stats = unit(_to(batch, device))
        for k, (s, n) in stats.items() if counted else ():
            acc = totals.setdefault(k, [0.0, 0.0])
            acc[0] += float(s)
            acc[1] += float(n)
    totals = ddp.add_up(totals, unit, batches)
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


def _resume_dir(run_dir: Path) -> Path:
    """The directory to pass to --resume: the nearest one holding the run's config.yaml (a seed's parent)."""
    return next((p for p in (run_dir, *run_dir.parents) if (p / "config.yaml").is_file()), run_dir)


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
    """Train ``unit`` for ``cfg.steps`` steps; returns the last evaluation metrics and the best step.

    A step with a NaN/inf loss or gradient norm is skipped, up to ``cfg.max_bad_steps`` (guards.py);
    SIGTERM/SIGINT end the run after the current step and a checkpoint, raising Stopped (signals.py)."""
    device = ddp.device(pick_device(cfg.device))
    unit.to(device)
    model = ddp.wrap(unit, cfg.fsdp, device, cfg.seed)  # torchrun: DDP, or the unit sharded (FSDP)
    train = ddp.RankBatches(train)  # torchrun: this process's rows of each global micro-batch
    optimizer = adamw(unit, cfg.lr, cfg.weight_decay, (cfg.beta1, cfg.beta2), cfg.eps, lr_scales=lr_scales)
    warmup = cfg.warmup_steps if cfg.warmup_steps is not None else int(cfg.warmup_ratio * cfg.steps)
    lr_at = lr_multiplier(cfg.schedule, warmup, cfg.steps, cfg.min_lr_ratio, cfg.decay_ratio)
    metric, mode = getattr(unit, "best_metric", ("loss", "min"))
    state = {"step": 0, "best_step": None, "best_value": None}
    latest = ddp.main_first(checkpointer.latest) if resume else None  # the first process tidies up
    if latest is not None:
        state.update(checkpointer.restore(latest, unit, optimizer))
    ddp.check_batch(state, cfg.batch_size)  # torchrun: resumed on as many processes (or the same batch)
    step = state["step"]
    guard = StepGuard(cfg.max_bad_steps, cfg.spike_factor, state)
    # resumed without a checkpoint (killed before the first): the old records all go, the run starts over
    main = ddp.is_main()  # only the first process logs and shows progress
    resume_step = (step if latest else -1) if resume else None
    logger = RunLogger(checkpointer.run_dir, resume_step=resume_step) if main else ddp.Quiet()
    bar = progress(cfg.steps, step, desc, cfg.progress) if main else ddp.Quiet()
    last_eval: dict = {}
    unit.train()
    window_tokens, window_start = 0, time.perf_counter()
    stop = StopRequest().install()  # SIGTERM/SIGINT: finish the step, checkpoint, raise Stopped
    try:
        if step == 0 and cfg.eval_at_start:
            logger.log(0, "validation", evaluate(unit, eval_batches, device, cfg.bf16))
        while step < cfg.steps and not state.get("stopped_early"):
            lr = cfg.lr * lr_at(step)
            for group in optimizer.param_groups:  # lr_scale: layer-wise decay and other per-group factors
                group["lr"] = lr * group.get("lr_scale", 1.0)
            batches, counted = [], []
            for a in range(cfg.grad_accum):
                batches.append(_to(train.batch(step * cfg.grad_accum + a), device))
                counted.append(not train.stand_in)  # torchrun: a process without rows runs a stand-in
            autocast = lambda: torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.bf16)  # noqa: E731
            # the gradient of one mean over every micro-batch and process (train/step.py)
            loss_value, tokens = step_gradients(model, unit, batches, counted, autocast)
            window_tokens += tokens
            grad_norm = (
                float(torch.nn.utils.clip_grad_norm_(unit.parameters(), cfg.clip_norm))
                if cfg.clip_norm
                else None
            )
            problem = guard.problem(loss_value, grad_norm)
            if problem is None:  # a NaN/inf step is skipped: no update, its batch consumed (guards.py)
                optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            bar.update(1)
            if problem is not None:
                logger.log(step, "bad_step", guard.skip(problem))
                bar.write(
                    f"step {step}: skipped, {problem} (bad step {guard.bad_steps} of {cfg.max_bad_steps})"
                )
                if guard.exhausted:
                    last = step_dirs(checkpointer.root)
                    raise guard.stop(step, problem, last[-1][1] if last else None)
            elif grad_norm is not None and (spike := guard.spike(grad_norm)) is not None:
                logger.log(step, "grad_spike", spike)
            if problem is None and (step % cfg.log_every == 0 or step == cfg.steps):
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
            caught = ddp.signal_seen(stop) is not None  # torchrun: by any process
            signalled = caught and step < cfg.steps and not state.get("stopped_early")
            if due or state.get("stopped_early") or signalled:
                state["step"] = step
                state["epoch"], state["batch_in_epoch"] = train.position(step * cfg.grad_accum)  # next batch
                state.update(guard.state())
                saved = checkpointer.save(unit, optimizer, dict(state), cfg.keep_last)
            window_start += time.perf_counter() - paused
            for hook in hooks:
                hook(step, loss_value)
            if signalled:
                raise stop.stopped(step, saved, _resume_dir(checkpointer.run_dir), desc.split()[0])
    except RuntimeError as exc:  # torchrun: another process died or hung
        lost = ddp.failure(exc, f"warmstart {desc.split()[0]} --resume {_resume_dir(checkpointer.run_dir)}")
        if lost is None:
            raise
        raise lost from None
    finally:
        stop.restore()
        bar.close()
        logger.close()
    checkpointer.save_final(unit)
    return {
        "metrics": last_eval,
        "best_step": state["best_step"],
        "best_value": state["best_value"],
        "step": step,
        "stopped_early": bool(state.get("stopped_early")),
        "bad_steps": guard.bad_steps,
    }
