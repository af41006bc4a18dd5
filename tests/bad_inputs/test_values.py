"""Values that would poison a run are refused when the config is read, in one short line (issue 22)."""

import pytest

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.runs import pretrain_argv


@pytest.mark.parametrize("value", ["inf", "-inf", ".nan", "1e400"])
def test_a_non_finite_learning_rate_is_refused_before_anything(value, small_shards, tmp_path, capsys):
    code, _, err = run(capsys, *pretrain_argv(small_shards, tmp_path / "run", f"train.lr={value}"))
    assert_one_line_error(code, err, "train.lr", "finite")
    assert not (tmp_path / "run").exists()


def test_a_mask_rate_of_zero_is_refused(small_shards, tmp_path, capsys):
    code, _, err = run(capsys, *pretrain_argv(small_shards, tmp_path / "run", "mlm.mask_prob=0"))
    assert_one_line_error(code, err, "mlm.mask_prob is 0")
    assert not (tmp_path / "run").exists()


def test_a_yaml_alias_bomb_is_quoted_short(tmp_path, capsys):
    """A few hundred bytes of YAML aliases expanding to millions of items under a number's key."""
    items = ["&a0 [x, x, x, x, x, x, x, x, x]"]
    items += [f"&a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 7)]
    lines = ["train:", f"  lr: [{', '.join(items)}]"]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    assert bomb.stat().st_size < 500
    code, _, err = run(capsys, "finetune", "--config", bomb, "--init", tmp_path, "--dataset", "x")
    assert code == 2 and len(err.strip().splitlines()) == 1 and len(err) < 400, err[:400]
    assert "train.lr" in err and "characters)" in err  # the value's repr, cut


def test_overwrite_never_replaces_the_home_or_working_directory(tmp_path, monkeypatch, capsys):
    """--out ~, --out . and --out / with --overwrite: refused before anything is read (issue 38)."""
    home, work = tmp_path / "home", tmp_path / "home" / "work"
    work.mkdir(parents=True)
    (home / "notes.txt").write_text("mine")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    cases = [("~", "is the home directory"), (".", "is the working directory"),
             ("/", "holds the working directory"), (str(tmp_path), "holds the working")]  # fmt: skip
    for out, needle in cases:
        code, _, err = run(capsys, "pretrain", "--shards", "none", "--out", out, "--overwrite")
        assert_one_line_error(code, err, f"--out {out} ", needle, "nothing was changed")
    assert sorted(p.name for p in home.iterdir()) == ["notes.txt", "work"]
    assert (home / "notes.txt").read_text() == "mine"


STATE = {"step": 12, "epoch": 1, "batch_in_epoch": 3, "best_step": 6, "best_value": 5.5,
         "tokens_seen": 90, "bad_steps": 0, "grad_norms": [1.5, 2], "stopped_early": False,
         "global_batch": 8, "processes": 1}  # fmt: skip


@pytest.mark.parametrize(
    "change, needle",
    [
        (dict(step=1e30), "holds step 1e+30, not a count"),
        (dict(step=2**63), "not a count"),
        (dict(step=6), "holds step 6, not the step of step-00000012"),
        (dict(epoch=-1), "holds epoch -1"),
        (dict(tokens_seen="many"), "holds tokens_seen many"),
        (dict(best_step=13), "holds best_step 13, not a step of this run"),
        (dict(best_value=float("nan")), "holds best_value nan, not a finite number"),
        (dict(grad_norms=["x"]), "grad_norms"),
        (dict(stopped_early="no"), "stopped_early"),
    ],
)
def test_a_trainer_state_no_run_writes_is_a_damaged_checkpoint(change, needle, tmp_path):
    from warmstart.errors import WarmstartError
    from warmstart.train.checkpoint import check_state

    checkpoint = tmp_path / "checkpoints" / "step-00000012"
    check_state(checkpoint, dict(STATE))
    with pytest.raises(WarmstartError) as caught:
        check_state(checkpoint, {**STATE, **change})
    assert "step-00000012 is damaged" in caught.value.problem and needle in caught.value.problem
