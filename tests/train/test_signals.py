"""SIGTERM/SIGINT: the run finishes its step, writes a checkpoint, says how to resume and exits with
128 + the signal number; the resumed run ends bitwise equal to an uninterrupted one."""

import os
import re
import signal

import pytest
from safetensors.torch import load_file

from tests.helpers.runs import (
    STEPS,
    final_weights,
    finish,
    last_train_step,
    read_checkpoint,
    run_args,
    same_tensors,
    start,
    wait_for,
)
from warmstart.commands.pretrain import pretrain
from warmstart.train.signals import Stopped, StopRequest

pytestmark = pytest.mark.integration

LINE = re.compile(
    r"stopped by SIGTERM after step (\d+); checkpoint (\S+); continue with: warmstart pretrain --resume (\S+)"
)


def test_sigterm_mid_run_checkpoints_and_resumes_exactly(small_shards, cli_baseline, tmp_path):
    run = tmp_path / "run"
    proc = start(small_shards, run)
    assert wait_for(proc, lambda: last_train_step(run) >= 5)
    proc.send_signal(signal.SIGTERM)
    code, err = finish(proc)
    assert code == 128 + signal.SIGTERM, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and (m := LINE.fullmatch(lines[0])), err  # one line, no traceback
    step = int(m.group(1))
    assert 5 <= step < STEPS and m.group(2) == str(run / "checkpoints" / f"step-{step:08d}")
    assert m.group(3) == str(run) and not (run / "final").exists()
    ckpt = read_checkpoint(run / "checkpoints" / f"step-{step:08d}")  # complete, at the step reached
    same_step = cli_baseline / "checkpoints" / f"step-{step:08d}" / "model.safetensors"
    if same_step.exists():  # the baseline saves every few steps; the resumed end is compared in any case
        assert same_tensors(ckpt["model"], load_file(str(same_step)))

    code, err = finish(start(small_shards, run, resume=True))
    assert code == 0, err
    assert same_tensors(final_weights(run), final_weights(cli_baseline))


def test_sigint_in_process_stops_after_the_step_and_resumes_exactly(small_shards, tmp_path):
    def interrupt(step, loss):
        if step == 6:
            os.kill(os.getpid(), signal.SIGINT)  # handled at once: the loop stops after the next step

    before = signal.getsignal(signal.SIGINT)  # SIG_IGN under nohup or a background job, else Python's
    full = pretrain(**run_args(small_shards, tmp_path / "full"))
    with pytest.raises(Stopped) as info:
        pretrain(**run_args(small_shards, tmp_path / "cut"), hooks=[interrupt])
    cut = tmp_path / "cut"
    assert info.value.exit_code == 130 and "stopped by SIGINT after step 7" in str(info.value)
    assert f"warmstart pretrain --resume {cut}" in str(info.value)
    assert (cut / "checkpoints" / "step-00000007").is_dir() and not (cut / "final").exists()
    assert signal.getsignal(signal.SIGINT) == before  # handlers restored

    resumed = pretrain(None, None, {}, [], resume=str(cut))
    assert resumed["step"] == full["step"]
    assert same_tensors(final_weights(cut), final_weights(tmp_path / "full"))


def test_a_second_signal_stops_at_once():
    stop = StopRequest().install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.signum == signal.SIGTERM
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
    finally:
        stop.restore()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
