"""Every row of the bad-input table: exit code 2, one clear line on stderr, no traceback, and nothing that
was on disk before the command (the case's files, the shared runs) changed, nor anything new written."""

import hashlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bad_inputs.cases import CASES
from tests.bad_inputs.faults import FAULTS
from warmstart.cli.main import main

pytestmark = pytest.mark.integration

PROGRESS = re.compile(r"\[\d\d:\d\d")  # a tqdm bar ("tokenizing train: 0.00B [00:00, ?B/s]") is no message
ERROR = re.compile(r"^(warmstart[\w -]*: )?error: ")  # the parser's line names the command first
SCRIPT = Path(sys.executable).with_name("warmstart")


def snapshot(*roots: Path) -> dict:
    """path -> (size, mtime_ns, sha256) of every file, and "dir" for every directory, under ``roots``."""
    out = {}
    for root in roots:
        for p in [root, *sorted(root.rglob("*"))]:
            if p.is_dir():
                out[p] = "dir"
            else:
                st = p.stat()
                out[p] = (st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def write_files(tmp: Path, files: dict) -> None:
    for name, content in files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def in_process(argv: list[str], env: dict, capsys, monkeypatch) -> tuple[int, str]:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    return code, capsys.readouterr().err


def in_subprocess(argv: list[str], env: dict, cwd: Path) -> tuple[int, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1", **env}
    done = subprocess.run([str(SCRIPT), *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    return done.returncode, done.stderr


def error_line(code: int, err: str) -> str:
    """The one message line, after checking the exit code and that nothing else was said."""
    assert "Traceback" not in err, err
    assert code == 2, f"exit code {code}: {err}"
    lines = [x for x in err.replace("\r", "\n").splitlines() if x.strip() and not PROGRESS.search(x)]
    assert len(lines) == 1 and ERROR.match(lines[0]), err
    return lines[0]


@pytest.mark.parametrize("case", CASES + FAULTS, ids=[c.id for c in CASES + FAULTS])
def test_bad_input(case, fx, tmp_path, capsys, monkeypatch):
    tmp = tmp_path / "case"
    tmp.mkdir()
    write_files(tmp, case.files)
    if case.setup:
        case.setup(tmp, fx)
    argv = shlex.split(case.argv.format(tmp=tmp, **fx))
    before = snapshot(tmp, fx["pre"], fx["ft"], fx["tok"], fx["shards"])
    if case.proc:
        if not SCRIPT.is_file():
            pytest.skip(f"no warmstart script next to {sys.executable}")
        code, err = in_subprocess(argv, case.env, tmp)
    else:
        monkeypatch.chdir(tmp)
        code, err = in_process(argv, case.env, capsys, monkeypatch)
    line = error_line(code, err)
    for needle in case.needles:
        assert needle in line, line
    assert snapshot(tmp, fx["pre"], fx["ft"], fx["tok"], fx["shards"]) == before, "files were changed"


def test_the_table_is_large_and_its_ids_distinct():
    assert len(CASES) >= 40 and len({c.id for c in CASES + FAULTS}) == len(CASES + FAULTS)
    assert len(FAULTS) >= 20
    assert sum(c.proc for c in CASES) >= 3  # some rows go through the real script and exit status


@pytest.mark.skipif(
    os.geteuid() == 0, reason="root writes into read-only directories: covered by *-under-a-file"
)
def test_read_only_output_directory(fx, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        code = main(["pretrain", "--shards", str(fx["shards"]), "--out", str(locked / "r")])
        line = error_line(code, capsys.readouterr().err)
        assert "is not writable" in line and not (locked / "r").exists()
    finally:
        locked.chmod(0o700)
