"""Workers of a study or a search (``--workers 2``) end with their main process. A `warmstart search
--workers 2` stopped by SIGTERM to its main process alone (pkill, a scheduler) left both workers alive: one
finished the trial it held, then both waited for work, idle, for the 79 minutes until they were found."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = """
import os, sys, time
from pathlib import Path

def cell(folder):
    Path(folder, str(os.getpid())).write_text("")
    time.sleep(120)
    Path(folder, "finished-" + str(os.getpid())).write_text("")

if __name__ == "__main__":
    from warmstart.study.parallel import run_cells
    run_cells([(i, (sys.argv[1],)) for i in range(2)], 2, cell, lambda key, ran: None)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie (exited, not yet reaped by init) is gone
        return f.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_workers_end_with_their_main_process(tmp_path, sig):
    script = tmp_path / "cells.py"
    script.write_text(SCRIPT)
    main = subprocess.Popen([sys.executable, str(script), str(tmp_path)], env={**os.environ})
    deadline = time.monotonic() + 120
    while len([p for p in tmp_path.iterdir() if p.name.isdigit()]) < 2:
        assert time.monotonic() < deadline and main.poll() is None, "the workers never started"
        time.sleep(0.2)
    workers = [int(p.name) for p in tmp_path.iterdir() if p.name.isdigit()]
    main.send_signal(sig)
    main.wait(timeout=30)
    deadline = time.monotonic() + 15
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(w) for w in workers), workers
    assert not any(p.name.startswith("finished-") for p in tmp_path.iterdir())  # stopped, not finished


def _fails(folder):
    raise ValueError("this cell fails")


def _waits(folder):
    Path(folder, str(os.getpid())).write_text("")
    time.sleep(60)
    Path(folder, "finished").write_text("")


def _cell(name, folder):
    return {"fails": _fails, "waits": _waits}[name](folder)


def test_a_failing_cell_stops_the_other_workers_at_once(tmp_path):
    """A search's worker runs trials until the study is full: when the other worker failed, the error
    waited for all of them."""
    from warmstart.study.parallel import run_cells

    def started():
        return any(p.name.isdigit() for p in tmp_path.iterdir())

    start = time.monotonic()
    with pytest.raises(ValueError, match="this cell fails"):
        run_cells([("w", ("waits", str(tmp_path))), ("f", ("fails", str(tmp_path)))], 2, _cell,
                  lambda key, ran: None)  # fmt: skip
    assert time.monotonic() - start < 40
    assert not (tmp_path / "finished").exists()
    if started():
        assert not _alive(int(next(p.name for p in tmp_path.iterdir() if p.name.isdigit())))
