"""Stop a run cleanly on SIGTERM or SIGINT (clusters preempt with SIGTERM; Ctrl-C sends SIGINT).

While the fit loop runs, the first signal only raises a flag: the loop finishes its step, writes a checkpoint
and raises ``Stopped``, which the CLI prints as one line (where the checkpoint is and how to resume) before
exiting with 128 + the signal number (143 for SIGTERM, 130 for SIGINT), as a shell reports a signal, so
``&&`` chains and job schedulers see that the run did not finish. A second signal stops at once
(KeyboardInterrupt); the last complete checkpoint is still there.
"""

from __future__ import annotations

import signal
import threading

from warmstart.errors import Stopped

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopRequest:
    """Catches SIGTERM and SIGINT from ``install()`` to ``restore()``; ``signum`` is the first one caught."""

    def __init__(self):
        self.signum: int | None = None
        self._previous: dict = {}

    def install(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():  # handlers live in the main thread only
            for s in SIGNALS:
                self._previous[s] = signal.signal(s, self._handle)
        return self

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}

    def _handle(self, signum, frame) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt  # the second signal: stop now
        self.signum = signum

    def stopped(self, step: int, checkpoint, run_dir, command: str) -> Stopped:
        name = signal.Signals(self.signum).name
        return Stopped(
            self.signum,
            f"stopped by {name} after step {step}; checkpoint {checkpoint}; "
            f"continue with: warmstart {command} --resume {run_dir}",
        )
