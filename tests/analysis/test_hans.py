"""HANS-style pairs from templates, and `warmstart probe --hans RUN` on a finetuned classifier: accuracy per
heuristic, on the pairs the heuristic gets right (entailed) and on those it gets wrong."""

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.analysis.hans_templates import TEMPLATES, hans_examples

pytestmark = pytest.mark.integration

OLD_RUNS = Path(__file__).parents[1] / "fixtures" / "old_runs"


def words(text):
    return re.findall(r"[a-z]+", text.lower())


def test_each_heuristic_holds_of_its_pairs():
    examples = hans_examples(20)
    assert len(examples) == 20 * sum(len(t) for t in TEMPLATES.values())
    for e in examples:
        premise, hypothesis = words(e["text"]), words(e["text_pair"])
        assert premise != hypothesis
        assert set(hypothesis) <= set(premise), e  # every heuristic overlaps lexically
        joined, part = " ".join(premise), " ".join(hypothesis)
        if e["heuristic"] in ("subsequence", "constituent"):
            assert f" {part} " in f" {joined} ", e  # a contiguous run of the premise
        if e["heuristic"] == "lexical_overlap":
            assert f" {part} " not in f" {joined} ", e  # overlap alone, not a subsequence
    for heuristic in TEMPLATES:
        mine = [e for e in examples if e["heuristic"] == heuristic]
        assert {e["entailed"] for e in mine} == {True, False}
    assert hans_examples(20) == examples  # the same pairs for the same seed
    assert hans_examples(20, seed=1) != examples


def test_probe_hans_reports_each_heuristic(tmp_path, capsys):
    ft = tmp_path / "ft"
    shutil.copytree(OLD_RUNS / "finetuned", ft)
    out = tmp_path / "hans"
    code, stdout, err = run(capsys, "probe", "--hans", ft, "--entailment-label", "fresh", "--out", out)
    assert code == 0, err
    result = json.loads((out / "hans.json").read_text())
    examples = result["examples"]
    assert len(examples) == 50 * 12
    for heuristic in TEMPLATES:
        for side, entailed in (("entailed", True), ("not_entailed", False)):
            mine = [e for e in examples if e["heuristic"] == heuristic and e["entailed"] == entailed]
            right = sum((e["predicted"] == "fresh") == entailed for e in mine)
            assert result["heuristics"][heuristic][side] == {"accuracy": right / len(mine), "n": len(mine)}
            assert f"| {heuristic} |" in stdout
    assert {e["predicted"] for e in examples} <= {"fresh", "rotten"}


def test_probe_hans_bad_inputs_are_one_line(tmp_path, capsys):
    ft = tmp_path / "ft"
    shutil.copytree(OLD_RUNS / "finetuned", ft)
    code, _, err = run(capsys, "probe", "--hans", ft, "--out", tmp_path / "a")
    assert_one_line_error(code, err, "fresh, rotten", "have no 'entailment'", "--entailment-label")
    code, _, err = run(capsys, "probe", "--hans", OLD_RUNS / "pretrained", "--out", tmp_path / "b")
    assert_one_line_error(code, err)
    code, _, err = run(capsys, "probe", ft, "--out", tmp_path / "c")
    assert_one_line_error(code, err, "--data")
    assert not any((tmp_path / n).exists() for n in "abc")
