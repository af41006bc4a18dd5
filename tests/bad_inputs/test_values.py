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
