"""Ctrl+C at any moment of any command is one line, ``interrupted``, and exit code 130 (issue 38): in the
first second too, while the command line is still importing torch and building its parser."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SCRIPT = Path(sys.executable).with_name("warmstart")


def interrupt_after(delay: float, *argv: str) -> tuple[int, str]:
    """(exit code, stderr) of `warmstart ARGV` sent SIGINT (Ctrl+C) ``delay`` seconds after it started."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([str(SCRIPT), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err.decode()


@pytest.mark.skipif(not SCRIPT.is_file(), reason="no warmstart script beside the interpreter")
def test_ctrl_c_while_the_command_line_starts_is_one_line():
    codes = []
    for delay in (0.3, 0.6, 0.9):
        code, err = interrupt_after(delay, "data", "list")
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        if code == 130:
            assert err.strip() == "interrupted", err
        else:  # the command had already finished
            assert code == 0, err
        codes.append(code)
    assert 130 in codes  # torch alone takes longer than 0.3 s to import
