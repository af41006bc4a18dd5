"""``atomic_dir`` after a kill -9 (issue 38): the next write to the same directory removes what the killed
writer left (its ``.tmp-NAME-PID@HOST``), and first puts back the directory it had moved aside when the kill
fell between the swap's two renames; a running process's, another host's and another output's are left."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from warmstart.tokenization import leftovers
from warmstart.train.checkpoint import SWAP_PAUSE_ENV, Checkpointer, atomic_dir

pytestmark = pytest.mark.integration

PAUSE = 3.0  # seconds the writer sleeps after writing, and again between its two renames
WRITER = """
import sys
from pathlib import Path
from warmstart.train.checkpoint import atomic_dir
atomic_dir(Path(sys.argv[1]), lambda d: (d / "weights.txt").write_text(sys.argv[2]))
"""


def writer_killed_when(final: Path, text: str, seen) -> int:
    """Start a process writing ``text`` into ``final`` by atomic_dir, SIGKILL it once ``seen()``; its pid."""
    env = {**os.environ, SWAP_PAUSE_ENV: str(PAUSE)}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(final), text], env=env)
    deadline = time.monotonic() + 180
    while not seen():
        assert proc.poll() is None, "the writer finished before the kill"
        assert time.monotonic() < deadline, "the writer never got there"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    return proc.pid


def write(text: str):
    return lambda d: (d / "weights.txt").write_text(text)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def running_pid():
    proc = subprocess.Popen(["sleep", "300"])
    yield proc.pid
    proc.kill()
    proc.wait()


def test_a_write_killed_midway_leaves_a_temp_dir_the_next_write_removes(tmp_path, running_pid):
    final, host = tmp_path / "final", leftovers.host()
    pid = writer_killed_when(final, "killed", lambda: any(tmp_path.glob(".tmp-final-*/weights.txt")))
    assert names(tmp_path) == [f".tmp-final-{pid}@{host}"] and not final.exists()
    kept = [f".tmp-final-{running_pid}@{host}", f".tmp-final-{pid}@otherhost", f".tmp-other-{pid}@{host}"]
    for name in kept:
        (tmp_path / name).mkdir()
    (tmp_path / f".tmp-final-{pid}").mkdir()  # an older version's name, without the host: this host's

    atomic_dir(final, write("next"))
    assert (final / "weights.txt").read_text() == "next"
    assert names(tmp_path) == sorted(["final", *kept])


def test_a_swap_killed_between_its_renames_is_put_back_first(tmp_path):
    final, host = tmp_path / "final", leftovers.host()
    atomic_dir(final, write("old"))
    pid = writer_killed_when(final, "new", lambda: any(tmp_path.glob(".old-final-*")))
    assert names(tmp_path) == [f".old-final-{pid}@{host}", f".tmp-final-{pid}@{host}"]  # final is missing

    def fails(d: Path) -> None:
        raise RuntimeError("the next write fails too")

    with pytest.raises(RuntimeError):
        atomic_dir(final, fails)
    assert names(tmp_path) == ["final"]  # the old directory came back before the failed write
    assert (final / "weights.txt").read_text() == "old"
    atomic_dir(final, write("newer"))
    assert names(tmp_path) == ["final"] and (final / "weights.txt").read_text() == "newer"


def test_a_killed_swap_whose_directory_is_in_place_loses_its_old_copy(tmp_path):
    final, host = tmp_path / "final", leftovers.host()
    atomic_dir(final, write("current"))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    pid = int(dead.stdout)  # a process that has exited
    (tmp_path / f".old-final-{pid}@{host}").mkdir()  # killed after its second rename, before the removal
    assert leftovers.clear_swap(final) == [tmp_path / f".old-final-{pid}@{host}"]
    assert names(tmp_path) == ["final"] and (final / "weights.txt").read_text() == "current"


def test_resume_puts_back_a_swap_under_the_new_names(tmp_path):
    """Checkpointer.recover (resume) reads NAME from .old-NAME-PID@HOST at the last '-': hosts have none."""
    assert "-" not in leftovers.host()
    moved = leftovers.swap_name(tmp_path / "best", "old")
    moved.mkdir()
    (moved / "weights.txt").write_text("best")
    Checkpointer(tmp_path, {}).recover()
    assert names(tmp_path) == ["best"] and (tmp_path / "best" / "weights.txt").read_text() == "best"
