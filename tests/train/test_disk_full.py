"""Disk full while writing a checkpoint: one clear line naming the directory, exit 2, the previous
checkpoint intact and loadable, nothing half-written where --resume looks; after freeing space the run
resumes and ends as an uninterrupted one."""

import errno
import shutil
import subprocess
from pathlib import Path

import pytest
from safetensors import SafetensorError

import warmstart.train.checkpoint as checkpoint
from tests.helpers.runs import latest_checkpoint, pretrain_argv, read_checkpoint, run_args, same_tensors
from warmstart.cli.main import main
from warmstart.commands.pretrain import pretrain

pytestmark = pytest.mark.integration


def _fail_at(monkeypatch, name: str, exc: Exception, where: str = "step-00000008") -> None:
    """Make ``checkpoint.<name>`` raise ``exc`` when it writes inside ``where`` (the 2nd checkpoint)."""
    real = getattr(checkpoint, name)

    def fake(obj, path, *a, **k):
        if where in str(path):
            raise exc
        return real(obj, path, *a, **k)

    monkeypatch.setattr(checkpoint, name, fake)


def _assert_left_intact(out: Path, step: int) -> None:
    latest = latest_checkpoint(out)
    assert latest.name == f"step-{step:08d}"
    read_checkpoint(latest)
    assert not list((out / "checkpoints").glob(".*")) and not (out / "final").exists()


@pytest.mark.parametrize(
    "name, exc",
    [  # safetensors reports ENOSPC as a SafetensorError carrying the OS message; JSON writes as OSError
        ("save_file", SafetensorError("I/O error: No space left on device (os error 28)")),
        ("write_json", OSError(errno.ENOSPC, "No space left on device")),
    ],
)  # fmt: skip
def test_disk_full_keeps_the_previous_checkpoint(small_shards, tmp_path, monkeypatch, capsys, name, exc):
    out = tmp_path / "run"
    _fail_at(monkeypatch, name, exc)
    assert main(pretrain_argv(small_shards, out)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: the disk is full (ENOSPC): could not write step-00000008 in {out / 'checkpoints'}; "
        f"the last complete checkpoint, {out / 'checkpoints' / 'step-00000004'}, is intact; "
        "free space on that disk, then continue with --resume"
    ]
    _assert_left_intact(out, 4)

    if name == "save_file":  # space freed: the run resumes and ends as an uninterrupted one
        monkeypatch.undo()
        pretrain(None, None, {}, [], resume=str(out))
        pretrain(**run_args(small_shards, tmp_path / "full"))
        final = [checkpoint.read_tensors(d / "final" / "model.safetensors") for d in (out, tmp_path / "full")]
        assert same_tensors(*final)


def test_a_real_full_tmpfs(small_shards, tmp_path, capsys):
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2000k", "tmpfs", str(mnt)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip() or 'not permitted'}")
    try:
        out = mnt / "run"
        assert (
            main(pretrain_argv(small_shards, out, "train.keep_last=100")) == 2
        )  # every checkpoint kept: fills up
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: the disk is full (ENOSPC): could not write "), err
        assert str(mnt) in err[0] and err[0].endswith("free space on that disk, then continue with --resume")
        latest = latest_checkpoint(out)  # whichever write failed (a checkpoint, RUN/best), this one is whole
        assert latest is not None and f"the last complete checkpoint, {latest}, is intact" in err[0]
        read_checkpoint(latest)
        left = [*out.glob(".*"), *(out / "checkpoints").glob(".*")]
        assert [p.name for p in left] == [".warmstart"]  # no temp directory left, only the run's marker
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
        shutil.rmtree(mnt, ignore_errors=True)
