"""The expected-max curve against a hand-worked example, and the search spaces: the named ones, YAML files
flat and nested, and the one-line refusals of a bad space."""

from __future__ import annotations

import math

import pytest

from warmstart.errors import WarmstartError
from warmstart.study.expected_max import expected_max
from warmstart.study.search_space import NAMED, open_space, overrides


def test_expected_max_matches_the_hand_worked_example():
    # scores 0.6, 0.8, 0.7 -> sorted 0.6, 0.7, 0.8; weights (i/3)^k - ((i-1)/3)^k
    # k=1: 1/3 each -> 0.7; k=2: 1/9, 3/9, 5/9 -> 6.7/9; k=3: 1/27, 7/27, 19/27 -> 20.7/27
    ks, means, stds = expected_max([0.6, 0.8, 0.7])
    assert ks == [1, 2, 3]
    assert means == pytest.approx([0.7, 6.7 / 9, 20.7 / 27])
    second = (0.36 * 1 + 0.49 * 3 + 0.64 * 5) / 9  # E[max^2] at k=2
    assert stds[1] == pytest.approx(math.sqrt(second - (6.7 / 9) ** 2))
    assert stds[0] == pytest.approx(math.sqrt((0.36 + 0.49 + 0.64) / 3 - 0.49))
    # lower is better: the expected minimum of 2 is 0.6*5/9 + 0.7*3/9 + 0.8*1/9
    _, low, _ = expected_max([0.6, 0.8, 0.7], ks=[2], lower_is_better=True)
    assert low == pytest.approx([(0.6 * 5 + 0.7 * 3 + 0.8) / 9])
    assert expected_max([]) == ([], [], [])
    assert expected_max([0.5] * 4)[1] == pytest.approx([0.5] * 4)  # one value: the curve is flat


def test_the_named_spaces_are_the_papers_and_the_lectures():
    grid = NAMED["bert-grid"]
    assert grid.grid and grid.size() == 18
    points = grid.points(0)
    assert len(points) == 18 and len({tuple(sorted(p.items())) for p in points}) == 18
    assert {p["train.lr"] for p in points} == {5e-5, 3e-5, 2e-5}
    assert grid.points(0) == points and grid.points(1) != points  # the order is the seed's
    lectures = NAMED["lectures"]
    assert not lectures.grid and lectures.size() is None
    lr = next(d for d in lectures.dims if d.key == "train.lr")
    assert (lr.low, lr.high, lr.log) == (1e-5, 5e-5, True)


def test_a_yaml_space_may_be_flat_or_nested(tmp_path):
    f = tmp_path / "space.yaml"
    f.write_text(
        "train:\n  lr: {type: float, low: 1.0e-5, high: 1.0e-4, log: true}\n  batch_size: [16, 32]\n"
        "strategy.lora.r: {type: int, low: 4, high: 16}\nseed: {choices: [1, 2]}\n"
    )
    space = open_space(str(f))
    assert [d.key for d in space.dims] == ["train.lr", "train.batch_size", "strategy.lora.r", "seed"]
    assert not space.grid
    kinds = {d.key: d.distribution for d in space.dims}
    assert kinds == {
        "train.lr": "float",
        "train.batch_size": "categorical",
        "strategy.lora.r": "int",
        "seed": "categorical",
    }
    assert overrides({"train.lr": 3e-5, "seed": 2}) == ["train.lr=3e-05", "seeds=[2]"]


def test_a_space_written_as_the_help_writes_it_reads_its_numbers(tmp_path):
    # `1e-5` is a string to YAML 1.1 (PyYAML): the help's own example was refused as "not numbers"
    f = tmp_path / "space.yaml"
    f.write_text("train.lr: {type: float, low: 1e-5, high: 1E-4, log: true}\ntrain.weight_decay: [0, 1e-2]\n")
    lr, decay = open_space(str(f)).dims
    assert (lr.low, lr.high, lr.log) == (1e-5, 1e-4, True)
    assert list(decay.choices) == [0, 0.01]


@pytest.mark.parametrize(
    "text, words",
    [
        ("train.lr: {type: float, low: 1, high: 1}", "low < high"),
        ("train.lr: {type: float, low: 0, high: 1, log: true}", "log needs"),
        ("train.lr: {type: number, low: 0, high: 1}", "has type 'number'"),
        ("train.batch_size: {choices: []}", "has no choices"),
        ("train.lr: 3", "not a range or a list of choices"),
        ("epochs: {type: int, low: 1.5, high: 3}", "whole numbers"),
        ("{}", "holds no dimension"),
    ],
)
def test_a_bad_space_is_one_line(tmp_path, text, words):
    f = tmp_path / "space.yaml"
    f.write_text(text + "\n")
    with pytest.raises(WarmstartError, match=words):
        open_space(str(f))


def test_an_unknown_space_name_lists_the_named_ones():
    with pytest.raises(WarmstartError, match="bert-grid, lectures"):
        open_space("bert-grod")


@pytest.mark.parametrize("name", ["bert-grid", "lectures"])
def test_the_named_spaces_pass_the_finetune_config_checks(name):
    from warmstart.commands.search import check_spec
    from warmstart.study.search_spec import SearchSpec

    space = check_spec(SearchSpec(init="runs/none", space=name))  # the default space was refused once
    assert space is NAMED[name] and set(space.example()) == {d.key for d in space.dims}


@pytest.mark.parametrize("direction, pruned_best", [("maximize", 0.62), ("minimize", 0.55)])
def test_the_curve_counts_a_pruned_trial_at_the_best_it_reached(direction, pruned_best):
    """k counts the trials started: a pruned trial is a draw at its best evaluation before it was stopped
    (the report's curve over complete trials only made the survivors the whole population)."""
    from warmstart.report.search_report import reached

    result = {
        "direction": direction,
        "trials": [
            {"state": "complete", "value": 0.8, "intermediate": {1: 0.7, 2: 0.8}},
            {"state": "pruned", "value": None, "intermediate": {1: 0.55, 2: 0.62}},
            {"state": "pruned", "value": None, "intermediate": {}},  # stopped before its first evaluation
            {"state": "fail", "value": None, "intermediate": {1: 0.9}},  # run again as another trial
            {"state": "complete", "value": 0.7, "intermediate": {1: 0.7}},
        ],
    }
    scores = reached(result)
    assert scores == [0.8, pruned_best, 0.7]
    _, means, _ = expected_max(scores, lower_is_better=direction == "minimize")
    assert means[0] == pytest.approx((0.8 + pruned_best + 0.7) / 3)
