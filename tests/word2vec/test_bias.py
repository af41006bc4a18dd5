"""`warmstart word2vec bias`: WEAT effect size and permutation p-value (on vectors where the answer is known
in closed form, and on the real GloVe 6B 50d), and the analogy probes with and without the inputs excluded."""

import json
import math

import numpy as np
import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.errors import WarmstartError
from warmstart.word2vec import weat as W
from warmstart.word2vec.analogy_bias import answer
from warmstart.word2vec.io import load_vectors
from warmstart.word2vec.vectors import WordVectors

TEST = W.WeatTest(
    "toy", "X", "Y", "A", "B",
    tuple(f"X{i}" for i in range(8)), tuple(f"y{i}" for i in range(8)),
    tuple(f"a{i}" for i in range(8)), tuple(f"b{i}" for i in range(8)),
    0.0, "-",
)  # fmt: skip


def _vectors(rows: dict) -> WordVectors:
    return WordVectors(list(rows), np.array(list(rows.values()), dtype=np.float64))


def _placed(x_at, y_at, dim=4) -> WordVectors:
    """A on axis 0, B on axis 1; X and Y words at the given vectors (lowercase keys: X looked up by case)."""
    eye = np.eye(dim)
    rows = {f"a{i}": eye[0] for i in range(8)} | {f"b{i}": eye[1] for i in range(8)}
    rows |= {f"x{i}": v for i, v in enumerate(x_at)} | {f"y{i}": v for i, v in enumerate(y_at)}
    return _vectors(rows)


def test_targets_on_the_attribute_directions_give_the_largest_effect():
    """s(x) = cos(x, A) - cos(x, B) = 1 - 0 for every x, -1 for every y: d = 2 / sample std of eight 1s and
    eight -1s = 2 / sqrt(16/15); only the observed partition of the 12,870 reaches the statistic 16."""
    eye = np.eye(4)
    result = W.weat(_placed([eye[0]] * 8, [eye[1]] * 8), TEST)
    assert result.effect_size == pytest.approx(2 / math.sqrt(16 / 15))
    assert result.statistic == pytest.approx(16)
    assert result.p_value == pytest.approx(1 / math.comb(16, 8))
    assert result.p_method == "exact (12,870 partitions)" and result.missing == []
    swapped = W.weat(_placed([eye[1]] * 8, [eye[0]] * 8), TEST)  # the association the other way
    assert swapped.effect_size == pytest.approx(-2 / math.sqrt(16 / 15)) and swapped.p_value == 1.0


def test_graded_associations_match_the_closed_form():
    """x_i = cos(t_i) e0 + sin(t_i) e2 has s = cos(t_i) exactly; y_i the same toward e1 has s = -cos(t_i)."""
    angles = np.linspace(0.1, 1.2, 8)
    eye = np.eye(4)
    xs = [math.cos(t) * eye[0] + math.sin(t) * eye[2] for t in angles]
    ys = [math.cos(t) * eye[1] + math.sin(t) * eye[2] for t in angles]
    result = W.weat(_placed(xs, ys), TEST)
    s = np.concatenate([np.cos(angles), -np.cos(angles)])
    assert result.effect_size == pytest.approx(2 * np.cos(angles).mean() / s.std(ddof=1))
    assert result.p_value == pytest.approx(1 / math.comb(16, 8))  # every x still above every y


def test_exact_and_sampled_p_values_agree():
    rng = np.random.default_rng(3)
    s_x, s_y = rng.normal(0.3, 1, 8), rng.normal(0, 1, 8)
    exact, how = W.p_value(s_x, s_y)
    sampled, how_sampled = W.p_value(s_x, s_y, permutations=40_000, seed=1, exact_limit=0)
    assert how.startswith("exact") and how_sampled == "40,000 random partitions, seed 1"
    assert 0.02 < exact < 0.98  # a p where sampling error shows
    assert abs(sampled - exact) < 4 * math.sqrt(exact * (1 - exact) / 40_000)
    again = W.p_value(s_x, s_y, permutations=40_000, seed=1, exact_limit=0)[0]
    assert again == sampled and W.p_value(s_x, s_y, permutations=40_000, seed=2, exact_limit=0)[0] != sampled


def test_missing_words_are_reported_and_the_partitions_follow_the_sizes_left():
    eye = np.eye(4)
    wv = _placed([eye[0]] * 8, [eye[1]] * 8)
    kept = [w for w in wv.words if w not in ("x3", "b5")]
    small = WordVectors(kept, wv.vectors[[wv.index[w] for w in kept]])
    result = W.weat(small, TEST)
    assert result.missing == ["X3", "b5"] and result.sizes == {"x": 7, "y": 8, "a": 8, "b": 7}
    assert result.p_method == f"exact ({math.comb(15, 7):,} partitions)"
    assert result.p_value == pytest.approx(1 / math.comb(15, 7))
    with pytest.raises(WarmstartError, match="no word of A is in the vocabulary"):
        W.weat(WordVectors(kept[8:], small.vectors[8:]), TEST)  # a0..a7 are the first 8 rows


@pytest.fixture(scope="module")
def glove():
    return load_vectors("glove")


def test_glove_loads_by_name(glove):
    assert (len(glove), glove.dim) == (400_000, 50) and glove.words[:3] == ["the", ",", "."]


def test_glove_shows_the_published_gender_associations(glove):
    """Caliskan et al. 2017 found all three on GloVe 840B (d 1.81, 1.06, 1.24; p <= .018): the same direction
    and p < 0.05 here, on the smaller 6B 50d release, every word found (names lowercased)."""
    for test in W.GENDER_TESTS.values():
        result = W.weat(glove, test)
        assert result.missing == [], test.name
        assert result.effect_size > 0 and result.p_value < 0.05, (test.name, result)


def _occupations() -> WordVectors:
    """man and woman share a "person" axis; doctor leans to man. doctor - man + woman lands nearest doctor
    itself (cosine 0.815), then nurse (0.756); king - man + woman is queen exactly."""
    eye = np.eye(7)
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    rows = {
        "man": unit(eye[0] + 2 * eye[6]), "woman": unit(eye[1] + 2 * eye[6]),
        "doctor": unit(eye[2] + 0.3 * eye[0]), "nurse": unit(eye[2] + 0.2 * eye[1] + 0.8 * eye[3]),
        "king": unit(eye[4] + eye[0]), "the": eye[5],
    }  # fmt: skip
    rows["queen"] = unit(rows["king"] - rows["man"] + rows["woman"])
    return _vectors(rows)


def test_excluding_the_inputs_forces_another_answer():
    got = answer(_occupations(), "man", "doctor", "woman")
    assert got.excluded[0][0] == "nurse" and got.included[0][0] == "doctor" and got.b_rank == 1
    assert got.included[1] == got.excluded[0]  # the same word, one place down
    queen = answer(_occupations(), "man", "king", "woman")
    assert queen.excluded[0][0] == queen.included[0][0] == "queen" and queen.b_rank == 2
    assert queen.included[0][1] == pytest.approx(1.0)
    assert answer(_occupations(), "man", "pilot", "woman") is None


def test_the_inputs_are_searched_beyond_restrict():
    got = answer(_occupations(), "man", "doctor", "woman", restrict=2)  # only "man", "woman" plus inputs
    assert got.included[0][0] == "doctor" and got.excluded == []


def test_cli_on_glove_and_a_missing_file(capsys, tmp_path):
    code, out, _ = run(capsys, "word2vec", "bias", "glove", "--out", tmp_path / "bias.json")
    assert code == 0 and "| WEAT 7 | math vs arts |" in out and "Nissim" in out
    data = json.loads((tmp_path / "bias.json").read_text())
    assert [r["test"] for r in data["weat"]] == ["WEAT 6", "WEAT 7", "WEAT 8"]
    doctor = next(a for a in data["analogies"] if (a["a"], a["b"], a["c"]) == ("man", "doctor", "woman"))
    assert doctor["included"][0][0] == "doctor" and doctor["excluded"][0][0] != "doctor"
    code, _, err = run(capsys, "word2vec", "bias", tmp_path / "none.npy")
    assert_one_line_error(code, err, "does not exist")
