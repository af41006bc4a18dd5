"""`warmstart serve RUN --port 0` in a subprocess: its URL once it listens, stopped on exit."""

import contextlib
import os
import subprocess
import sys
import threading
import time


@contextlib.contextmanager
def live_server(run, *flags, wait: float = 60.0, log: list | None = None):
    """Yields the base URL (http://127.0.0.1:PORT) of a server started by the real command line. Its stderr
    after the start (the access log) is read all along, so the pipe never fills, into ``log`` if given."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "warmstart", "serve", str(run), "--port", "0", *flags]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    reader = None
    try:
        deadline, line = time.monotonic() + wait, ""
        while "serving" not in line:
            line = proc.stderr.readline()
            if (not line and proc.poll() is not None) or time.monotonic() > deadline:
                raise AssertionError(f"the server did not start: {line}{proc.stderr.read()}")
        reader = threading.Thread(target=_keep, args=(proc.stderr, log), daemon=True)
        reader.start()
        yield line.split(" at ")[1].split("/ ")[0]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if reader is not None:
            reader.join(5)
        proc.stderr.close()


def _keep(stream, log: list | None) -> None:
    for line in iter(stream.readline, ""):
        if log is not None:
            log.append(line.rstrip("\n"))
