"""Hard debiasing (word2vec/debias.py): neutral words lose their gender component, equality pairs end up
symmetric around the gender direction, gender-specific words stay as they were, a constructed WEAT bias
vanishes, and `warmstart word2vec debias` never writes over its input."""

import hashlib
import json

import numpy as np
import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.word2vec import io
from warmstart.word2vec.debias import direct_bias, gender_direction, hard_debias
from warmstart.word2vec.vectors import WordVectors
from warmstart.word2vec.weat import GENDER_TESTS, weat

DIM = 8
G = np.eye(DIM)[0]  # the gender direction the handmade vectors are built around


def _handmade() -> WordVectors:
    """she/he, woman/man, her/his along axis 0 (plus a shared axis 1 and a little of axis 2 for woman/man);
    neutral words leaning either way; actress gender-specific but in no equality pair."""
    e = np.eye(DIM)
    rows = {
        "she": e[0] + e[1], "he": -e[0] + e[1],
        "woman": 0.9 * e[0] + e[1] + 0.3 * e[2], "man": -0.7 * e[0] + e[1] - 0.2 * e[2],
        "her": 2 * (e[0] + 0.5 * e[1]), "his": -e[0] + 0.5 * e[1],
        "nurse": 0.6 * e[0] + e[3], "engineer": -0.5 * e[0] + 2 * e[4], "table": e[5] + 0.1 * e[0],
        "actress": 3 * (0.8 * e[0] + e[6]),
    }  # fmt: skip
    return WordVectors(list(rows), np.array(list(rows.values())), np.arange(len(rows), 0, -1))


def test_the_direction_is_the_pairs_difference_oriented_toward_she():
    g, explained, pairs = gender_direction(_handmade())
    assert abs(float(g @ G)) == pytest.approx(1, abs=0.02) and float(g @ G) > 0  # she side is +g
    assert explained > 0.9 and ("she", "he") in pairs and ("mary", "john") not in pairs


def test_neutral_words_lose_the_direction_and_keep_their_length():
    wv = _handmade()
    result = hard_debias(wv)
    out, g = result.vectors, result.direction
    for word in ("nurse", "engineer", "table"):
        assert float(out.unit()[out.index[word]] @ g) == pytest.approx(0, abs=1e-6)
        assert np.linalg.norm(out[word]) == pytest.approx(np.linalg.norm(wv[word]), rel=1e-6)
    assert float(wv.unit()[wv.index["nurse"]] @ g) > 0.4  # it leaned before
    assert direct_bias(out, g, ["nurse", "engineer"])[0] == pytest.approx(0, abs=1e-6)
    assert direct_bias(wv, g, ["nurse", "engineer"])[0] > 0.3


def test_equality_pairs_are_symmetric_and_specific_words_untouched():
    wv = _handmade()
    result = hard_debias(wv)
    out, g = result.vectors, result.direction
    assert ("woman", "man") in result.equalised and ("she", "he") in result.equalised
    for a, b in (("woman", "man"), ("she", "he"), ("her", "his")):
        ua, ub = out.unit()[out.index[a]], out.unit()[out.index[b]]
        assert float(ua @ g) == pytest.approx(-float(ub @ g), abs=1e-6) and float(ua @ g) > 0
        np.testing.assert_allclose(ua - (ua @ g) * g, ub - (ub @ g) * g, atol=1e-6)
        # both equally far from every neutral word
        for neutral in ("nurse", "engineer", "table"):
            assert out.similarity(a, neutral) == pytest.approx(out.similarity(b, neutral), abs=1e-6)
    assert out["actress"].tobytes() == wv["actress"].tobytes()  # gender-specific, no pair: as it was
    assert out.counts.tolist() == wv.counts.tolist() and out.words == wv.words
    assert wv["nurse"].tolist() == _handmade()["nurse"].tolist()  # the input object is not changed


def _biased_weat7() -> WordVectors:
    """WEAT 7: math and arts words on axes of their own, math leaning male and arts female along axis 0;
    the male terms at e1 - e0, the female terms at e1 + e0 (so the gender direction is axis 0 exactly)."""
    test = GENDER_TESTS["weat7"]
    targets = [w.lower() for w in dict.fromkeys([*test.x, *test.y])]
    rng = np.random.default_rng(0)
    eye = np.eye(len(targets) + 2)
    lean = {w: -rng.uniform(0.2, 0.8) for w in test.x} | {w: rng.uniform(0.2, 0.8) for w in test.y}
    rows = {w: eye[i + 2] * rng.uniform(0.5, 1.5) + lean[w] * eye[0] for i, w in enumerate(targets)}
    rows |= {w: eye[1] - eye[0] for w in test.a} | {w: eye[1] + eye[0] for w in test.b}
    return WordVectors(list(rows), np.array(list(rows.values())))


def test_a_constructed_weat_bias_vanishes():
    wv = _biased_weat7()
    before = weat(wv, GENDER_TESTS["weat7"])
    after = weat(hard_debias(wv).vectors, GENDER_TESTS["weat7"])
    assert before.effect_size > 1.5 and before.statistic > 1
    assert after.statistic == pytest.approx(0, abs=1e-6)  # every target orthogonal to every attribute


def _digest(paths) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


def test_cli_writes_new_vectors_and_the_figures(capsys, tmp_path):
    given = io.save(_biased_weat7(), tmp_path / "in.txt")
    before = _digest([given])
    code, out, err = run(capsys, "word2vec", "debias", given, "--out", tmp_path / "new.npy")
    assert code == 0, err
    assert "DirectBias_1" in out and "WEAT 7 d (p; statistic)" in out
    assert _digest([given]) == before
    report = json.loads((tmp_path / "new.debias.json").read_text())
    row = next(r for r in report["weat"] if r["test"] == "WEAT 7")
    assert row["d_before"] > 1.5 and row["statistic_before"] > 1
    assert row["statistic_after"] == pytest.approx(0, abs=1e-6)
    assert next(r for r in report["weat"] if r["test"] == "WEAT 6")["skipped"]  # no names in it
    new = io.load(tmp_path / "new.npy")
    assert new.words == io.load(given).words


def test_cli_refuses_to_write_over_its_input(capsys, tmp_path):
    given = io.save(_handmade(), tmp_path / "in.npy")
    files = [tmp_path / "in.npy", tmp_path / "in.vocab.txt"]
    before = _digest(files)
    code, _, err = run(capsys, "word2vec", "debias", given, "--out", tmp_path / "in.npy")
    assert_one_line_error(code, err, "which this command reads")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    io.save(_handmade(), run_dir / io.RUN_VECTORS, "npy")
    code, _, err = run(capsys, "word2vec", "debias", run_dir, "--out", run_dir / "vectors.npy")
    assert_one_line_error(code, err, "which this command reads")
    assert _digest(files) == before


@pytest.mark.parametrize(
    "args, says",
    [
        (["--out", "new.vectors"], "cannot tell the word vector format"),
        (["--out", "new.txt"], "does not exist"),
    ],
)
def test_bad_inputs_are_one_line(capsys, tmp_path, args, says):
    missing = tmp_path / "missing.txt"
    args = [a if a.startswith("--") else str(tmp_path / a) for a in args]
    code, _, err = run(capsys, "word2vec", "debias", missing, *args)
    assert_one_line_error(code, err, says)
    assert not list(tmp_path.iterdir())


def test_no_definitional_pair_is_one_line(capsys, tmp_path):
    given = io.save(WordVectors(["apple", "pear"], np.eye(2)), tmp_path / "in.txt")
    code, _, err = run(capsys, "word2vec", "debias", given, "--out", tmp_path / "new.txt")
    assert_one_line_error(code, err, "none of the definitional pairs")
    assert not (tmp_path / "new.txt").exists()
