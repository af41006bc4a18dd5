"""The one fit loop of pretraining and finetuning: ``fit(unit, train, eval_batches, cfg, checkpointer)``.

Each step: the learning rate of the schedule, the gradient of one mean over every micro-batch and process
(train/step.py), clipping, a guarded optimizer step (a NaN/inf step is skipped: guards.py; fp16's loss
scaler skips an overflowed one: precision.py), then logging, evaluation with best-model selection
(train.metric_for_best_model: best_metric.py) and early stopping, and checkpoints. SIGTERM/SIGINT end the
run after the current step and a checkpoint, raising Stopped (signals.py); under torchrun a process that
lost the others stops with one line (distributed.py)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import torch

from warmstart.errors import WarmstartError
from warmstart.nn.checkpointing import set_checkpointing
from warmstart.train import distributed as ddp
from warmstart.train.best_metric import check_reported, chosen_metric
from warmstart.train.callbacks import callbacks, epoch_of, notify, notify_step
from warmstart.train.checkpoint import Checkpointer, step_dirs
from warmstart.train.guards import StepGuard
from warmstart.train.logging import RunLogger, progress
from warmstart.train.loop import TrainConfig, evaluate, pick_device, to_device
from warmstart.train.malloc import keep_freed_memory
from warmstart.train.optim import adamw
from warmstart.train.precision import LossScaler, autocast, autocast_dtype
from warmstart.train.schedule import lr_multiplier
from warmstart.train.signals import StopRequest
from warmstart.train.step import step_gradients
from warmstart.train.time_budget import TimeBudget
from warmstart.train.trackers.run import Trackers


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


class _Fit:
    """One run of the loop: the unit, its optimizer and schedule, the run's state, logger, bar and guard."""

    def __init__(
        self, unit, train, eval_batches, cfg: TrainConfig, checkpointer: Checkpointer, lr_scales, hooks
    ):
        self.unit, self.eval_batches, self.cfg, self.ckpt = unit, eval_batches, cfg, checkpointer
        self.hooks = callbacks(hooks)
        self.device = ddp.device(pick_device(cfg.device))
        unit.to(self.device)
        if cfg.gradient_checkpointing and not set_checkpointing(unit, True):  # nn/checkpointing.py
            raise WarmstartError(
                "train.gradient_checkpointing is on, but this model has no block stack to checkpoint",
                "set train.gradient_checkpointing=false",
            )
        self.model = ddp.wrap(unit, cfg.fsdp, self.device, cfg.seed)  # torchrun: DDP, or sharded (FSDP)
        if cfg.compile:
            self.model.compile()  # in place: the module and its state_dict names stay the same
        self.train = ddp.RankBatches(train)  # torchrun: this process's rows of each global micro-batch
        betas = (cfg.beta1, cfg.beta2)
        correction = cfg.adam_bias_correction  # false: BERTAdam
        self.optimizer = adamw(unit, cfg.lr, cfg.weight_decay, betas, cfg.eps, lr_scales, correction)
        self.warmup = cfg.warmup_steps if cfg.warmup_steps is not None else int(cfg.warmup_ratio * cfg.steps)
        self.set_steps(cfg.steps)
        self.budget = TimeBudget(cfg.time_budget, self.warmup, cfg.steps)
        self.metric, self.mode = chosen_metric(unit, cfg)  # train.metric_for_best_model, or the unit's
        self.dtype = autocast_dtype(cfg)  # bf16, fp16 or None
        self.state = {"step": 0, "best_step": None, "best_value": None}
        self.last_eval: dict = {}

    def restore(self, resume: bool) -> int | None:
        """Resume from the latest checkpoint (if any); the step to start from, or None without one."""
        latest = ddp.main_first(self.ckpt.latest) if resume else None  # the first process tidies up
        if latest is not None:
            self.state.update(self.ckpt.restore(latest, self.unit, self.optimizer))
            self.set_steps(self.state.get("planned_steps", self.cfg.steps))  # train.time_budget's plan
        ddp.check_batch(self.state, self.cfg.batch_size)  # torchrun: resumed on as many processes
        self.guard = StepGuard(self.cfg.max_bad_steps, self.cfg.spike_factor, self.state)
        self.scaler = LossScaler(self.cfg.fp16, self.device, ddp.sharded(self.unit), self.state)
        return self.state["step"] if latest is not None else None

    def open_outputs(self, resume: bool, latest: int | None, desc: str, trackers: Trackers | None) -> None:
        main = ddp.is_main()  # only the first process logs and shows progress
        # resumed without a checkpoint (killed before the first): the old records go, the run starts over
        resume_step = (latest if latest is not None else -1) if resume else None
        # train.report_to; a caller's own trackers (finetune's: test metrics come later) stay open after fit
        self.own_trackers = trackers is None
        self.trackers = Trackers(self.ckpt.run_dir, self.cfg.report_to) if trackers is None else trackers
        self.trackers.start(self.cfg, resume_step)  # the first process only
        logger = RunLogger(self.ckpt.run_dir, resume_step, self.trackers) if main else None
        self.logger = logger or ddp.Quiet()
        self.bar = (
            progress(self.cfg.steps, self.state["step"], desc, self.cfg.progress) if main else ddp.Quiet()
        )
        self.eval_bar = "validating" if self.cfg.progress else None  # a bar over each evaluation's batches
        self.new_window()
        self.budget.start(self.state["step"])  # train.time_budget: the pace counts from here
        self.window_parts: dict[str, list[float]] = {}  # PART/KEY training stats since the last log
        begin = {"metric": self.metric, "mode": self.mode, "run_dir": str(self.ckpt.run_dir),
                 "steps": self.cfg.steps, "warmup_steps": self.warmup}  # fmt: skip
        notify(self.hooks if main else [], "on_train_begin", {**begin, "step": self.state["step"]})

    def set_steps(self, steps: int) -> None:
        """Train for ``steps`` (train.time_budget plans them): the schedule decays over them."""
        c = self.cfg = dataclasses.replace(self.cfg, steps=steps)
        self.lr_at = lr_multiplier(c.schedule, self.warmup, steps, c.min_lr_ratio, c.decay_ratio)

    def new_window(self) -> None:
        """Start counting tokens, wall time and batch waits for the next logged window."""
        self.window_tokens, self.window_start, self.window_data = 0, time.perf_counter(), 0.0

    def gradient_step(self, step: int) -> tuple[float, float, float | None, str | None]:
        """(lr, loss, grad norm, problem) of one optimizer step (skipped when ``problem`` is set)."""
        cfg = self.cfg
        lr = cfg.lr * self.lr_at(step)
        for group in self.optimizer.param_groups:  # lr_scale: layer-wise decay and other per-group factors
            group["lr"] = lr * group.get("lr_scale", 1.0)
        batches, counted, begun = [], [], time.perf_counter()
        for a in range(cfg.grad_accum):
            batches.append(to_device(self.train.batch(step * cfg.grad_accum + a), self.device))
            counted.append(not self.train.stand_in)  # torchrun: a process without rows runs a stand-in
        self.window_data += time.perf_counter() - begun  # the step waited this long for its batches
        context = lambda: autocast(self.device, self.dtype)  # noqa: E731
        scaler = self.scaler  # fp16: the losses scaled up, the gradients unscaled before clipping
        loss, tokens = step_gradients(
            self.model, self.unit, batches, counted, context, self.window_parts, scaler.scale
        )
        self.window_tokens += tokens
        scaler.unscale(self.optimizer)
        norm = (
            torch.nn.utils.clip_grad_norm_(self.unit.parameters(), cfg.clip_norm) if cfg.clip_norm else None
        )
        grad_norm = None if norm is None else float(norm)
        # fp16: an overflowed gradient is the scaler's to skip (precision.py), not a bad step, while the scale
        # is at least 1: float16's range never needs less, so below it the gradient itself is broken
        problem = self.guard.problem(loss, None if scaler.searching else grad_norm)
        if problem is None:
            problem = self.update()
        scaler.update(counted=problem is None)
        self.optimizer.zero_grad(set_to_none=True)
        return lr, loss, grad_norm, problem

    def update(self) -> str | None:
        """The optimizer step; with ``train.rollback``, undone (and named as the step's problem) when it left
        a weight non-finite."""
        if not self.cfg.rollback:
            self.scaler.step(self.optimizer)  # fp16: no step when a gradient overflowed
            return None
        weights = [p.detach().clone() for p in self.unit.parameters()]
        state = {p: {k: v.clone() if torch.is_tensor(v) else v for k, v in s.items()}
                 for p, s in self.optimizer.state.items()}  # fmt: skip
        self.scaler.step(self.optimizer)
        name = self.nonfinite_weight()
        if name is None:
            return None
        with torch.no_grad():
            for p, saved in zip(self.unit.parameters(), weights):
                p.copy_(saved)
        self.optimizer.state.clear()
        self.optimizer.state.update(state)
        return f"{name} non-finite after the update (rolled back)"

    def report(self, step: int, lr: float, loss: float, grad_norm: float | None, problem: str | None) -> None:
        cfg, bar = self.cfg, self.bar
        if problem is not None:
            self.check_weights(step)  # weights already broken: skipping cannot mend them
            self.logger.log(step, "bad_step", self.guard.skip(problem))
            bar.write(
                f"step {step}: skipped, {problem} (bad step {self.guard.bad_steps} of {cfg.max_bad_steps})"
            )
            if self.guard.exhausted:
                raise self.guard.stop(step, problem, self.last_checkpoint())
            return
        overflowed = self.scaler.overflowed  # fp16: skipped by the scaler, its gradient norm is inf
        if grad_norm is not None and not overflowed and (spike := self.guard.spike(grad_norm)) is not None:
            self.logger.log(step, "grad_spike", spike)
        if step % cfg.log_every == 0 or step == cfg.steps:
            elapsed = max(time.perf_counter() - self.window_start, 1e-9)
            rate = self.window_tokens / elapsed
            # data_share: the part of the window's wall time its steps waited for their batches
            record = {"loss": loss, "lr": lr, "tokens_per_s": rate, "data_share": self.window_data / elapsed}
            if grad_norm is not None and not overflowed:
                record["grad_norm"] = grad_norm
            record.update(self.scaler.record())  # fp16: loss_scale, scaler_skipped
            record["epoch"] = self.train.position(step * cfg.grad_accum - 1)[0]
            record.update(self.part_means())
            self.logger.log(step, "train", record)
            bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{rate:,.0f}", refresh=False)
            self.new_window()

    def part_means(self) -> dict[str, float]:
        """The window's ``PART/KEY`` training stats as means over every process (keys with a count), reset."""
        keys = sorted(self.window_parts)
        sums = [self.window_parts[k][0] for k in keys] + [self.window_parts[k][1] for k in keys]
        if keys and ddp.active():
            sums = ddp.sum_all(sums)
        self.window_parts = {}
        return {k: s / n for k, s, n in zip(keys, sums, sums[len(keys) :]) if n}

    def validate(self, step: int) -> None:
        """Evaluate, keep the best model, and decide on early stopping."""
        cfg, state = self.cfg, self.state
        self.last_eval = evaluate(self.unit, self.eval_batches, self.device, self.dtype, self.eval_bar)
        if cfg.metric_for_best_model:
            check_reported(self.metric, self.last_eval)
        self.logger.log(step, "validation", self.last_eval)
        value = self.last_eval.get(self.metric)
        if value is not None and _better(value, state["best_value"], self.mode):
            state["best_step"], state["best_value"] = step, value
            self.ckpt.save_best(self.unit, {"step": step, "metric": self.metric, "value": value})
        self.bar.write(f"step {step}: " + ", ".join(f"{k} {v:.4g}" for k, v in self.last_eval.items()))
        stale = _stale_evaluations(step, state["best_step"], cfg.eval_every)
        if cfg.early_stopping and stale >= cfg.early_stopping:
            self.bar.write(f"early stopping: no better {self.metric} in {stale} evaluations")
            state["stopped_early"] = True
        self.stop_if(step, notify(self.hooks, "on_evaluate", step, dict(self.last_eval)))

    def keep_best(self, step: int) -> None:
        """A run stopped before any evaluation picked a best model (a callback's StopTraining at step 1) is
        evaluated at its last step, and that model kept as RUN/best: a finetune has a model to score. The
        stop was already asked for, so a callback's StopTraining here changes nothing."""
        self.last_eval = evaluate(self.unit, self.eval_batches, self.device, self.dtype, self.eval_bar)
        self.logger.log(step, "validation", self.last_eval)
        value = self.last_eval.get(self.metric)
        self.state["best_step"], self.state["best_value"] = step, value
        self.ckpt.save_best(self.unit, {"step": step, "metric": self.metric, "value": value})
        self.bar.write(f"step {step}: " + ", ".join(f"{k} {v:.4g}" for k, v in self.last_eval.items()))
        notify(self.hooks, "on_evaluate", step, dict(self.last_eval))

    def evaluate_at_start(self) -> str | None:
        """The evaluation before the first step (the curve's starting point), logged and passed to
        ``on_evaluate`` as step 0; the reason when a callback asks to stop."""
        start_metrics = evaluate(self.unit, self.eval_batches, self.device, self.dtype, self.eval_bar)
        if self.cfg.metric_for_best_model:  # a metric the validation does not report: before any step
            check_reported(self.metric, start_metrics)
        self.logger.log(0, "validation", start_metrics)
        return notify(self.hooks, "on_evaluate", 0, dict(start_metrics))

    def step_callbacks(self, step: int, loss: float, lr: float, grad_norm: float | None) -> str | None:
        """``on_step`` and ``on_log`` (train/callbacks.py) after a step; the reason when one asks to stop."""
        if not self.hooks:  # the usual run: no record to build on every step
            return None
        epoch = epoch_of(self.train, step * self.cfg.grad_accum)
        record = {"step": step, "loss": loss, "lr": lr, "epoch": epoch,
                  "tokens_seen": self.state["tokens_seen"], "grad_norm": grad_norm}  # fmt: skip
        return notify_step(self.hooks, record)

    def stop_if(self, step: int, reason: str | None) -> bool:
        """A callback asked to stop (StopTraining): the run ends at this step, as early stopping does."""
        if ddp.active() and self.hooks:  # torchrun: every process stops at the same step
            asked = ddp.sum_all([float(reason is not None)])[0]
            reason = reason or ("another process's callback asked to stop" if asked else None)
        if reason is None:
            return False
        self.bar.write(f"stopped by a callback after step {step}: {reason}")
        self.logger.log(step, "stop", {"reason": reason})
        self.state["stopped_early"] = True
        return True

    def last_checkpoint(self) -> Path | None:
        last = step_dirs(self.ckpt.root)
        return last[-1][1] if last else None

    def nonfinite_weight(self) -> str | None:
        """The parameter holding NaN or inf, in this process or (torchrun: all agree) another one."""
        name = self.guard.nonfinite_weight(self.unit)
        if ddp.active() and ddp.sum_all([float(name is not None)])[0] and name is None:
            name = "a parameter of another process"
        return name

    def check_weights(self, step: int) -> None:
        """Refuse to write weights that hold NaN or inf: the last good checkpoint stays the last one."""
        name = self.nonfinite_weight()
        if name is not None:
            raise self.guard.broken(step, name, self.last_checkpoint())

    def save(self, step: int) -> str:
        self.check_weights(step)
        state = self.state
        state["step"] = step
        state["epoch"], state["batch_in_epoch"] = self.train.position(
            step * self.cfg.grad_accum
        )  # next batch
        state.update(self.guard.state())
        state.update(self.scaler.state())  # fp16: the loss scale and the steps it skipped
        path = self.ckpt.save(self.unit, self.optimizer, dict(state), self.cfg.keep_last)
        notify(self.hooks, "on_save", step, path)
        return path

    def result(self, step: int) -> dict:
        return {
            "metrics": self.last_eval,
            "best_step": self.state["best_step"],
            "best_value": self.state["best_value"],
            "step": step,
            "stopped_early": bool(self.state.get("stopped_early")),
            "bad_steps": self.guard.bad_steps,
            "metric": self.metric,  # what picked the best step (train.metric_for_best_model)
            "greater_is_better": self.mode == "max",
            **({"scaler_skipped": self.scaler.skipped} if self.scaler.enabled else {}),
        }


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
    command: str = "train",
    trackers: Trackers | None = None,
) -> dict:
    """Train ``unit`` for ``cfg.steps`` steps (or those train.time_budget plans); returns the last evaluation
    metrics and the best step. ``hooks``: callbacks (train/callbacks.py: on_step, on_log, on_evaluate,
    on_save, on_train_end; StopTraining ends the run).
    ``command`` names the warmstart command that continues the run (``warmstart COMMAND --resume RUN``).
    ``trackers``: the caller's (train/trackers/run.py), left open for it to finish; None: the run's own,
    finished here (the run's files) and ended as failed when the run fails."""
    if cfg.reuse_memory:
        keep_freed_memory()
    run = _Fit(unit, train, eval_batches, cfg, checkpointer, lr_scales, hooks)
    latest, cfg = run.restore(resume), run.cfg  # resumed: the steps its train.time_budget planned
    run.open_outputs(resume, latest, desc, trackers)
    step = run.state["step"]
    unit.train()
    stop = StopRequest().install()  # SIGTERM/SIGINT: finish the step, checkpoint, raise Stopped
    again = f"warmstart {command} --resume {_resume_dir(checkpointer.run_dir)}"
    ended = False  # the loop ran to its end: the trackers are not ended as failed
    try:
        # a stop asked for by step 0's on_evaluate is honoured after the first step
        pending = run.evaluate_at_start() if step == 0 and cfg.eval_at_start else None
        first = step
        while step < cfg.steps and not run.state.get("stopped_early"):
            begun = time.perf_counter()
            counted = run.window_tokens  # tokens_seen for on_log, kept in the checkpoint's state
            lr, loss, grad_norm, problem = run.gradient_step(step)
            run.state["tokens_seen"] = run.state.get("tokens_seen", 0) + run.window_tokens - counted
            if cfg.compile and step == first:  # the first step of this process compiles
                run.bar.write(f"torch.compile: first step {time.perf_counter() - begun:.1f} s (compiling)")
                run.new_window()
            step += 1
            run.bar.update(1)
            run.report(step, lr, loss, grad_norm, problem)
            cfg = run.budget.keep_to(run, step)  # train.time_budget: the steps planned once warmup ends
            paused = time.perf_counter()  # evaluation and checkpoint time is left out of tokens/s
            if (cfg.eval_every and step % cfg.eval_every == 0) or step == cfg.steps:
                run.validate(step)
            early = bool(run.state.get("stopped_early"))
            signalled = ddp.signal_seen(stop) is not None and step < cfg.steps and not early  # by any process
            due = (cfg.save_every and step % cfg.save_every == 0) or step == cfg.steps or early or signalled
            if due:
                saved = run.save(step)
            reason, pending = run.step_callbacks(step, loss, lr, grad_norm) or pending, None
            if run.stop_if(step, reason) and not due:
                saved = run.save(step)  # stopped by on_step: this step's checkpoint, as early stopping has
            run.window_start += time.perf_counter() - paused
            if signalled:
                raise stop.stopped(step, saved, _resume_dir(checkpointer.run_dir), command)
        if run.state.get("stopped_early") and run.state["best_step"] is None:
            run.keep_best(step)  # stopped before the first evaluation: this step's model is the best
        ended = True
    except RuntimeError as exc:  # torchrun: another process died or hung
        lost = ddp.failure(exc, again)
        if lost is None:
            raise
        raise lost from None
    finally:
        stop.restore()
        run.bar.close()
        run.logger.close()
        if not ended:
            run.trackers.close(ok=False)
    run.check_weights(step)
    checkpointer.save_final(unit)
    if run.own_trackers:
        run.trackers.finish(step)  # the run's files; then ended as finished
    result = run.result(step)
    notify(run.hooks, "on_train_end", dict(result))
    return result
