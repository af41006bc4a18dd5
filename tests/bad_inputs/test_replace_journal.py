"""An --overwrite killed at any moment loses nothing (issue 38): the old run, moved aside under a journal,
comes back with the next command, or the replacement that had been settled is finished; each says which.
Real processes, killed with SIGKILL at the moment that used to hide a finished run."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import run

pytestmark = pytest.mark.integration

OLD_RUN = Path(__file__).parents[1] / "fixtures" / "old_runs" / "finetuned"

REPLACE_AND_DIE = """
import os, sys
from warmstart.train.rundir import open_run_dir
open_run_dir(sys.argv[1], overwrite=True)
(open(sys.argv[1] + "/config.yaml", "w")).write("out: new\\n")  # what a new run writes first
{before_kill}
os.kill(os.getpid(), 9)
"""
SETTLE_AND_DIE = """
import shutil
from warmstart.outputs import journal
def die(*a, **k):
    os.kill(os.getpid(), 9)
journal.shutil.rmtree = die  # killed while the old run is being removed
journal.settle(sys.argv[1])
"""


def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def kill_during(code: str, run_dir: Path) -> None:
    done = subprocess.run([sys.executable, "-c", code, str(run_dir)], env=os.environ.copy(), timeout=120)
    assert done.returncode == -9


def hidden(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_a_replacement_killed_before_its_checkpoint_is_undone_by_any_next_command(tmp_path, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(OLD_RUN, run_dir)
    before = snapshot(run_dir)
    kill_during(REPLACE_AND_DIE.format(before_kill=""), run_dir)
    assert snapshot(run_dir) != before and len(hidden(tmp_path)) == 2  # moved aside + its journal
    code, _, err = run(capsys, "data", "list")
    assert code == 0 and f"restored {run_dir}" in err and "earlier one is back" in err
    assert snapshot(run_dir) == before and hidden(tmp_path) == []
    code, _, err = run(capsys, "data", "list")
    assert "restored" not in err  # said once


def test_the_next_command_on_that_path_restores_it_without_the_cache(tmp_path, test_cache, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(OLD_RUN, run_dir)
    before = snapshot(run_dir)
    kill_during(REPLACE_AND_DIE.format(before_kill=""), run_dir)
    shutil.rmtree(test_cache / "replacing")  # a cache wiped, or another user's
    code, _, err = run(capsys, "export", OLD_RUN, "--out", run_dir)
    assert code == 2 and f"restored {run_dir}" in err and "already exists" in err
    assert snapshot(run_dir) == before and hidden(tmp_path) == []


def test_a_replacement_killed_while_settling_is_finished(tmp_path, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(OLD_RUN, run_dir)
    kill_during(REPLACE_AND_DIE.format(before_kill=SETTLE_AND_DIE), run_dir)
    code, _, err = run(capsys, "data", "list")
    assert code == 0 and f"finished replacing {run_dir}" in err
    assert (run_dir / "config.yaml").read_text() == "out: new\n" and hidden(tmp_path) == []


def test_a_replacement_whose_process_lives_is_left_to_it(tmp_path, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(OLD_RUN, run_dir)
    before = snapshot(run_dir)
    code = REPLACE_AND_DIE.format(before_kill="print('aside', flush=True); import time; time.sleep(60)")
    live = subprocess.Popen([sys.executable, "-c", code, str(run_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline().strip() == "aside"
        code, _, err = run(capsys, "data", "list")
        assert "restored" not in err and len(hidden(tmp_path)) == 2
    finally:
        live.kill()
        live.wait()
    code, _, err = run(capsys, "data", "list")
    assert "restored" in err and snapshot(run_dir) == before
