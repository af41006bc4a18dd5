"""train.reuse_memory: warmstart's training loop keeps freed memory in the process (glibc's mallopt), so a
step that allocates and frees the same buffers does not fault their pages in again."""

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")
def test_glibc_accepts_both_thresholds_once_per_process():
    """mallopt returns 0 for a value outside glibc's limits (an mmap threshold above 32 MiB): the setting
    reports True only when glibc took both; a second call does not set them again."""
    code = (
        "import ctypes, ctypes.util\n"
        "calls = []\n"
        "real = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6')\n"
        "class Libc:\n"
        "    def mallopt(self, key, value):\n"
        "        calls.append((key, value)); return real.mallopt(key, value)\n"
        "ctypes.CDLL = lambda *a, **k: Libc()\n"
        "from warmstart.train.malloc import keep_freed_memory\n"
        "print(keep_freed_memory(), keep_freed_memory(), calls)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"True True [(-3, {32 * 1024 * 1024}), (-1, {2 * 1024**3})]"


def test_the_training_loop_sets_it_unless_told_not_to(monkeypatch):
    from warmstart.train import fit
    from warmstart.train.loop import TrainConfig

    calls = []
    monkeypatch.setattr(fit, "keep_freed_memory", lambda: calls.append(1))
    monkeypatch.setattr(fit, "_Fit", lambda *a: (_ for _ in ()).throw(RuntimeError("stop here")))
    for reuse in (True, False):
        with pytest.raises(RuntimeError, match="stop here"):
            fit.fit(None, None, None, TrainConfig(reuse_memory=reuse), None)
    assert calls == [1]
