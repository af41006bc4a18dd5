"""A tokenizer's temporary directories (issue 38): named ``.OUT.tmp-PID@HOST-RANDOM``; the next write of the
same tokenizer removes those of writers that were killed (this host, process gone) and leaves the others."""

import os
import signal
import subprocess
import sys
import time

import pytest

from warmstart.tokenization import leftovers
from warmstart.tokenization.train import train_tokenizer

pytestmark = pytest.mark.integration

WRITER = """
import sys, time
from pathlib import Path
from warmstart.tokenization.tokenizer import write_atomic
def write(d):
    (d / "tokenizer.json").write_text("{}")
    time.sleep(300)
write_atomic(Path(sys.argv[1]), write)
"""


def test_a_killed_tokenizer_writes_temp_dir_goes_with_the_next_train(tmp_path, wiki_extracts):
    out, host = tmp_path / "tok", leftovers.host()
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(out)])
    deadline = time.monotonic() + 120
    while not any(tmp_path.glob(".tok.tmp-*/tokenizer.json")):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (left,) = tmp_path.iterdir()
    assert left.name.startswith(f".tok.tmp-{proc.pid}@{host}-")
    kept = [f".tok.tmp-{os.getpid()}@{host}-running1", f".tok.tmp-{proc.pid}@otherhost-remote12",
            f".other.tmp-{proc.pid}@{host}-another1"]  # fmt: skip
    for name in kept:
        (tmp_path / name).mkdir()
    (tmp_path / f".tok.tmp-{proc.pid}").mkdir()  # no host: this host's

    train_tokenizer(wiki_extracts[:200], "wordpiece", 200, out, show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["tok", *kept])
    assert (out / "tokenizer.json").stat().st_size > 100
