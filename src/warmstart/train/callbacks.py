"""What the fit loop tells its caller while it runs, and how the caller stops it.

A callback is any object with some of the methods below; a plain function ``f(step, loss)`` is an
``on_step``. Each is called in the process that logs (the first under torchrun):

- ``on_train_begin(info)``: once, before the first step (of this process: a resumed run calls it again),
  with a dict: ``metric`` and ``mode`` (the validation metric that picks the best model, "max" or "min"),
  ``run_dir``, ``step`` (0, or the step a resume starts from), ``steps`` (the run's optimizer steps) and
  ``warmup_steps``;
- ``on_step(step, loss)``: after every optimizer step (and after that step's evaluation and checkpoint, if
  any), with the step's mean training loss (a float);
- ``on_log(step, record)``: at the same moment, the step's full record, a dict with ``step``, ``loss``,
  ``lr`` (the step's peak learning rate, after warmup and schedule), ``epoch`` (a float: micro-batches
  trained / micro-batches per epoch, 1.5 is half way through the second pass), ``tokens_seen`` (tokens
  trained on since the run began, resumes included; this process's under torchrun) and ``grad_norm``
  (before clipping; None with ``train.clip_norm=0``). A callback that wants more than the loss defines
  ``on_log``; one that defines both gets both;
- ``on_evaluate(step, metrics)``: after every validation, with the metrics dict that was logged; the
  evaluation before the first step (``train.eval_at_start``) comes as step 0;
- ``on_save(step, path)``: after a checkpoint was written, with its directory;
- ``on_train_end(result)``: once, after ``RUN/final`` was written, with what the loop returns
  (``metrics`` of the last validation, ``best_step``, ``best_value``, ``step``, ``stopped_early``,
  ``bad_steps``); a finetune with several seeds calls it once per seed.

Raising ``StopTraining`` in ``on_step``, ``on_log`` or ``on_evaluate`` ends the run cleanly at that step, as
early stopping does: a checkpoint is written if the step has none, then ``RUN/final`` (and, for a finetune,
the test metrics of the best model); raised at step 0's evaluation, the run stops after its first step.
Any other exception propagates (the run stops as a crash would: resumable).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from warmstart.errors import WarmstartError


class StopTraining(Exception):  # noqa: N818 - a request, not an error
    """Raised by a callback to end the run at the current step (the message is logged with the stop)."""


class _StepFunction:
    def __init__(self, fn: Callable[[int, float], Any]):
        self.on_step = fn


NAMES = ("on_train_begin", "on_step", "on_log", "on_evaluate", "on_save", "on_train_end")


class BadCallback(WarmstartError, TypeError):
    """``callbacks=`` holds something that is not a callback (a TypeError too, as Python raises for one)."""


def callbacks(hooks: Iterable | None) -> list:
    """The callback objects of ``hooks`` (functions become ``on_step`` callbacks), checked before the run
    directory exists: anything else is refused, naming its place (``callbacks[0] is an int (42)``)."""
    need = f"a callback has one of {', '.join(NAMES)}, or is a function(step, loss)"
    if isinstance(hooks, str | bytes | dict) or not isinstance(hooks, Iterable | None):
        shown = _shown(hooks)
        if any(hasattr(hooks, name) for name in NAMES) or callable(hooks):
            raise BadCallback(f"callbacks must be a list, got {shown}", "wrap it in a list: callbacks=[...]")
        raise BadCallback(f"callbacks must be a list of callbacks, got {shown}", need)
    out = []
    for i, hook in enumerate(hooks or ()):
        if isinstance(hook, type):
            raise BadCallback(
                f"callbacks[{i}] is the class {hook.__name__}", f"pass an instance: {hook.__name__}()"
            )
        if any(hasattr(hook, name) for name in NAMES):
            out.append(hook)
        elif callable(hook):
            out.append(_StepFunction(hook))
        else:
            raise BadCallback(f"callbacks[{i}] is {_shown(hook)}, not a callback", need)
    return out


def _shown(value: Any) -> str:
    name = type(value).__name__
    text = repr(value)
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name} ({text[:60]}{'...' if len(text) > 60 else ''})"


def notify(hooks: list, name: str, *args: Any) -> str | None:
    """Call ``name`` on every callback that has it; the reason when one of them asks to stop."""
    reason = None
    for hook in hooks:
        method = getattr(hook, name, None)
        if method is None:
            continue
        try:
            method(*args)
        except StopTraining as stop:
            reason = reason or str(stop) or f"{type(hook).__name__}.{name} asked to stop"
    return reason


def notify_step(hooks: list, record: dict) -> str | None:
    """``on_step(step, loss)`` then ``on_log(step, record)`` on every callback; the first reason to stop."""
    first = notify(hooks, "on_step", record["step"], record["loss"])
    second = notify(hooks, "on_log", record["step"], dict(record))
    return first or second


def epoch_of(train: Any, micro_batches: int) -> float:
    """Passes over the training data after ``micro_batches`` micro-batches (a fraction within a pass)."""
    per_epoch = getattr(train, "batches_per_epoch", None)
    if isinstance(per_epoch, int) and per_epoch > 0:
        return micro_batches / per_epoch
    return float(train.position(micro_batches)[0])
