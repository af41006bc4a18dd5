"""`warmstart serve RUN --port 0` in a subprocess: its URL once it listens, stopped on exit."""

import contextlib
import os
import subprocess
import sys
import time


@contextlib.contextmanager
def live_server(run, *flags, wait: float = 60.0):
    """Yields the base URL (http://127.0.0.1:PORT) of a server started by the real command line."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "warmstart", "serve", str(run), "--port", "0", *flags]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline, line = time.monotonic() + wait, ""
        while "serving" not in line:
            line = proc.stderr.readline()
            if (not line and proc.poll() is not None) or time.monotonic() > deadline:
                raise AssertionError(f"the server did not start: {line}{proc.stderr.read()}")
        yield line.split(" at ")[1].split("/ ")[0]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()
