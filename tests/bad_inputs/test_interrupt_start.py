"""Ctrl+C in the very first moments of a command (issue 38): before cli/main.py installs its own handling,
while Python is still importing warmstart, a SIGINT printed a KeyboardInterrupt traceback. ``import
warmstart`` now installs, first, a handler for the command line only (the `warmstart` script and ``python -m
warmstart``): one line, ``interrupted``, exit code 130. Earlier, while Python itself starts (its site module,
runpy finding the package), no warmstart code has run yet and Python's own handling stays."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SCRIPT = Path(sys.executable).with_name("warmstart")
DELAYS = (0.0, 0.01, 0.03, 0.08, 0.2, 0.5)  # the deterministic moments: the sitecustomize test above
COMMANDS = {
    "module": [sys.executable, "-m", "warmstart", "--help"],
    "script": [str(SCRIPT), "--help"],
}
HOOK = """
import os, signal, sys


class InterruptAt:  # Ctrl+C, exactly when the module named in $INTERRUPT_AT is first imported
    def find_spec(self, name, path=None, target=None):
        if name == os.environ["INTERRUPT_AT"]:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None


sys.meta_path.insert(0, InterruptAt())
"""
# imported by warmstart/__init__.py after its handler, by the script before main, and inside main
MODULES = [
    "warmstart.word2vec",
    "warmstart.cli",
    "warmstart.errors",
    "warmstart.paths",
    "warmstart.cli.common",
]


def _sigint_as_a_terminal_sends_it() -> None:
    """In the child: SIGINT's default disposition (a shell's background job, nohup or CI may start the suite
    with SIGINT ignored, which Python keeps: then no Ctrl+C reaches warmstart at all)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(command: list[str], delay: float | None = None, at: str | None = None, hook: Path | None = None):
    """(exit code, stderr) of ``command`` sent SIGINT ``delay`` seconds after it started, or by itself when
    it first imports the module ``at`` (through a sitecustomize in ``hook``)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if at is not None and hook is not None:
        paths = [str(hook), env.get("PYTHONPATH", "")]
        env.update(INTERRUPT_AT=at, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        preexec_fn=_sigint_as_a_terminal_sends_it,
    )  # fmt: skip
    if delay is not None:
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode()


def command(how: str) -> list[str]:
    if how == "script" and not SCRIPT.is_file():
        pytest.skip("no warmstart script beside the interpreter")
    return COMMANDS[how]


@pytest.mark.parametrize("how", COMMANDS)
@pytest.mark.parametrize("module", MODULES)
def test_ctrl_c_while_warmstart_imports_is_one_line(how, module, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    code, err = run(command(how), at=module, hook=tmp_path)
    assert (code, err.strip()) == (130, "interrupted"), err


@pytest.mark.parametrize("how", COMMANDS)
def test_ctrl_c_in_the_first_second_never_shows_warmstart_s_traceback(how):
    """At any moment once warmstart runs: one line and 130. Before, Python's own start-up is all there is."""
    seen = []
    for delay in DELAYS:
        code, err = run(command(how), delay=delay)
        if code == 130:
            assert err.strip() == "interrupted", (delay, err)
        elif "Traceback" in err:  # Python's start-up (or the script's first line), before the package's
            assert "/warmstart/" not in err, (delay, err)
        else:  # ended by the signal before Python handled it, or --help had finished
            assert code in (0, -signal.SIGINT) and "KeyboardInterrupt" not in err, (delay, code, err)
        seen.append(code)
    assert 130 in seen, seen


def test_import_warmstart_from_python_leaves_ctrl_c_alone():
    code = (
        "import signal, sys, warmstart\n"
        "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
        "import warmstart.cli.main\n"
        "print(sorted(m for m in sys.modules if m in ('torch', 'numpy', 'yaml')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        preexec_fn=_sigint_as_a_terminal_sends_it,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # light: neither import pulls torch, numpy or yaml in


def test_a_worker_with_the_command_line_s_argv_keeps_the_default_handling():
    """A worker started with ``-c`` (multiprocessing's spawn) imports warmstart with the parent's sys.argv:
    the handler follows Python's own command line (sys.orig_argv), not sys.argv."""
    code = (
        "import signal, sys\n"
        f"sys.argv = [{str(SCRIPT)!r}, 'pretrain']\n"
        "import warmstart\n"
        "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        preexec_fn=_sigint_as_a_terminal_sends_it,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
