"""What the fit loop tells its caller while it runs, and how the caller stops it.

A callback is any object with some of ``on_step(step, loss)``, ``on_evaluate(step, metrics)`` and
``on_save(step, path)``; a plain function ``f(step, loss)`` is an ``on_step``. Each is called in the
process that logs (the first under torchrun):

- ``on_step``: after every optimizer step (and after that step's evaluation and checkpoint, if any);
- ``on_evaluate``: after every validation, with the metrics dict that was logged;
- ``on_save``: after a checkpoint was written, with its directory.

Raising ``StopTraining`` in any of them ends the run cleanly at that step, as early stopping does: a
checkpoint is written if the step has none, then ``RUN/final`` (and, for a finetune, the test metrics of
the best model). Any other exception propagates (the run stops as a crash would: resumable).
"""

from __future__ import annotations

from collections.abc import Iterable


class StopTraining(Exception):  # noqa: N818 - a request, not an error
    """Raised by a callback to end the run at the current step (the message is logged with the stop)."""


class _StepFunction:
    def __init__(self, fn):
        self.on_step = fn


NAMES = ("on_step", "on_evaluate", "on_save")


def callbacks(hooks: Iterable) -> list:
    """The callback objects of ``hooks`` (functions become ``on_step`` callbacks)."""
    out = []
    for hook in hooks or ():
        if any(hasattr(hook, name) for name in NAMES):
            out.append(hook)
        elif callable(hook):
            out.append(_StepFunction(hook))
        else:
            raise TypeError(f"a callback needs one of {', '.join(NAMES)}, or to be a function(step, loss)")
    return out


def notify(hooks: list, name: str, *args) -> str | None:
    """Call ``name`` on every callback that has it; the reason when one of them asks to stop."""
    reason = None
    for hook in hooks:
        method = getattr(hook, name, None)
        if method is None:
            continue
        try:
            method(*args)
        except StopTraining as stop:
            reason = str(stop) or f"{type(hook).__name__}.{name} asked to stop"
    return reason
