"""word2vec evaluation: analogies and word-pair similarity (equal to gensim's), tables, the projection PNG."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from warmstart.data.packages import package_file
from warmstart.errors import WarmstartError
from warmstart.word2vec import evaluate as ev
from warmstart.word2vec.plot import COUNTRY_CAPITAL, projection_png
from warmstart.word2vec.vectors import WordVectors

gensim_models = pytest.importorskip("gensim.models")
QUESTIONS = package_file("gensim", "gensim", ev.QUESTIONS)


def _unit(v):
    return v / np.linalg.norm(v)


@pytest.fixture(scope="module")
def royal():
    """king - man + woman = queen exactly (on unit vectors); prince, girl, ... are elsewhere."""
    eye = np.eye(8)
    vec = {
        "man": eye[0],
        "woman": eye[1],
        "king": _unit(eye[0] + eye[2]),
        "boy": _unit(eye[0] + eye[3]),
        "prince": _unit(eye[4] + 0.2 * eye[0]),
        "uncle": _unit(eye[5] + eye[0]),
        "aunt": _unit(eye[5] + eye[1]),
        "girl": _unit(eye[6] + eye[1]),
        "the": _unit(eye[7] + 0.1 * eye[2]),
    }
    vec["queen"] = _unit(vec["king"] - vec["man"] + vec["woman"])
    words = ["the", "man", "woman", "king", "queen", "boy", "prince", "uncle", "aunt", "girl"]
    return WordVectors(words, np.stack([vec[w] for w in words]))


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_analogy_known_answers_oov_and_malformed(royal, tmp_path):
    path = _write(
        tmp_path,
        "q.txt",
        "man woman king queen\n"  # before any section: malformed
        ": family\n"
        "man king woman queen\n"  # king - man + woman = queen: correct
        "Man Woman King Queen\n"  # case-insensitive: woman - man + king = queen: correct
        "man woman king prince\n"  # answer is queen: incorrect
        "man king woman empress\n"  # empress is OOV
        "man king woman\n"  # 3 words: malformed
        "\n"
        ": gram-extra\n"
        "man king woman queen extra\n"  # 5 words: malformed
        "king queen uncle aunt\n",  # queen - king + uncle: aunt
    )
    result = ev.analogy(royal, path)
    family, extra = result.sections
    assert (family.name, family.correct, family.incorrect, family.oov) == ("family", 2, 1, 1)
    assert (extra.name, extra.correct, extra.incorrect, extra.oov) == ("gram-extra", 1, 0, 0)
    assert result.malformed == 3
    assert result.questions == 5
    assert result.accuracy == pytest.approx(3 / 4)
    assert result.semantic.accuracy == pytest.approx(2 / 3) and result.syntactic.accuracy == 1.0
    # only the 4 most frequent words: queen and the rest are out of the vocabulary
    small = ev.analogy(royal, path, restrict=4)
    assert small.total.scored == 0 and small.total.oov == 5 and small.accuracy == 0.0
    # case-sensitive: the capitalised question is OOV
    exact = ev.analogy(royal, path, case_insensitive=False)
    assert (exact.sections[0].correct, exact.sections[0].oov) == (1, 2)

    summary = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert summary["total"] == {"name": "total", "correct": 3, "incorrect": 1, "oov": 1, "accuracy": 0.75}
    assert summary["sections"][0]["accuracy"] == pytest.approx(2 / 3) and summary["malformed"] == 3

    table = ev.analogy_table(result)
    assert "| family | 2 | 3 | 66.7% | 1 |" in table
    assert "**total** | 3 | 4 | 75.0%" in table and "3 malformed lines skipped" in table
    assert ev.solve(royal, "man", "king", "woman", topn=1)[0][0] == "queen"
    assert ev.solve(royal, "Man", "King", "Woman", topn=1)[0][0] == "queen"
    near = ev.neighbours(royal, "Aunt", topn=2)  # aunt . woman = 1/sqrt(2), aunt . queen = 0.562
    assert [w for w, _ in near] == ["woman", "queen"] and near[0][1] == pytest.approx(0.5**0.5)
    assert "| 1 | woman | 0.707 |" in ev.neighbours_table(near)


def test_analogy_bad_files(royal, tmp_path):
    with pytest.raises(WarmstartError, match="nowhere.txt"):
        ev.analogy(royal, tmp_path / "nowhere.txt")
    with pytest.raises(WarmstartError, match="no analogy questions .2 malformed"):
        ev.analogy(royal, _write(tmp_path, "bad.txt", ": s\na b c\nman king woman queen x\n"))
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b": s\ncaf\xe9 a b c\n")
    with pytest.raises(WarmstartError, match="UTF-8"):
        ev.analogy(royal, latin)


@pytest.fixture(scope="module")
def structured():
    """3,000 words: the question words (5% dropped) with vectors where each section's pairs share an offset
    (so many analogies are right), 40 capitalised near-copies of question words, random filler words."""
    rng = np.random.default_rng(0)
    dim, vec, offset = 32, {}, None
    for line in QUESTIONS.read_text().splitlines():
        if line.startswith(":"):
            offset = rng.standard_normal(dim)
            continue
        a, b, c, d = line.lower().split()
        for x, y in ((a, b), (c, d)):
            vec.setdefault(x, rng.standard_normal(dim))
            vec.setdefault(y, vec[x] + offset + 0.5 * rng.standard_normal(dim))
    for name in ev.PAIRS:
        for line in package_file("gensim", "gensim", ev.PAIRS[name]).read_text().splitlines()[2:]:
            for w in line.lower().split("\t")[:2]:
                vec.setdefault(w, rng.standard_normal(dim))
    words = [w for w in vec if rng.random() < 0.95]
    variants = [w.capitalize() for w in rng.choice(words, 40, replace=False)]
    for w in variants:
        vec[w] = vec[w.lower()] + 0.1 * rng.standard_normal(dim)
    words += variants + [f"w{i:04d}" for i in range(3600 - len(words) - len(variants))]
    rng.shuffle(words)
    matrix = np.stack([vec.get(w, rng.standard_normal(dim)) for w in words]).astype(np.float32)
    kv = gensim_models.KeyedVectors(dim)
    kv.add_vectors(words, matrix)
    return WordVectors(words, matrix), kv


@pytest.mark.parametrize("restrict,case_insensitive", [(2000, True), (None, True), (2000, False)])
def test_analogy_equals_gensim(structured, restrict, case_insensitive):
    wv, kv = structured
    ours = ev.analogy(wv, restrict=restrict, case_insensitive=case_insensitive)
    score, sections = kv.evaluate_word_analogies(
        str(QUESTIONS), restrict_vocab=restrict or len(wv), case_insensitive=case_insensitive
    )
    assert sections[-1]["section"] == "Total accuracy"
    assert [(s["section"], len(s["correct"]), len(s["incorrect"])) for s in sections[:-1]] == [
        (s.name, s.correct, s.incorrect) for s in ours.sections
    ]
    assert ours.accuracy == score
    assert 0.3 < score < 1.0 and ours.total.oov > 0
    assert ours.questions == 19544 and ours.malformed == 0


@pytest.mark.parametrize("dataset", ["wordsim353", "simlex999"])
def test_similarity_equals_gensim(structured, dataset):
    wv, kv = structured
    ours = ev.similarity(wv, dataset=dataset)
    pearson, spearman, oov_ratio = kv.evaluate_word_pairs(
        str(package_file("gensim", "gensim", ev.PAIRS[dataset]))
    )
    assert ours.spearman == pytest.approx(spearman[0], abs=1e-9)
    assert ours.pearson == pytest.approx(pearson[0], abs=1e-6)
    assert ours.oov_ratio == pytest.approx(oov_ratio)
    assert ours.pairs > 100 and ours.oov > 0 and ours.malformed == 0
    assert ours.pairs + ours.oov == {"wordsim353": 353, "simlex999": 999}[dataset]


def test_similarity_known_rho(tmp_path):
    angles = {"a": 0.0, "b": 0.3, "c": 0.6, "d": 1.0, "e": 1.5}
    words = list(angles)
    wv = WordVectors(words, np.array([[math.cos(t), math.sin(t)] for t in angles.values()]))
    # model similarities: a-b 0.955 > a-c 0.825 > a-d 0.540 > a-e 0.071; gold swaps the middle two
    path = _write(
        tmp_path,
        "pairs.tsv",
        "# comment\nWord 1\tWord 2\tHuman (mean)\n"
        "a\tb\t9\nA\tc\t5\na\td\t6\na\te\t1\na\tzz\t3\nbroken line\n",
    )
    result = ev.similarity(wv, path)
    assert result.spearman == pytest.approx(0.8)  # 1 - 6 * 2 / (4 * 15)
    assert (result.pairs, result.oov, result.malformed, result.dataset) == (4, 1, 1, "pairs")
    assert "| pairs | 0.800 |" in ev.similarity_table([result])
    none = ev.similarity(wv, _write(tmp_path, "oov.tsv", "x\ty\t1\n"))
    assert none.pairs == 0 and math.isnan(none.spearman) and "n/a" in ev.similarity_table(none)
    assert json.dumps(none.to_dict(), allow_nan=False) and none.to_dict()["spearman"] is None
    assert ev.similarity_table({"a": result, "b": none}).count("\n") == 3
    with pytest.raises(WarmstartError, match="no word pairs"):
        ev.similarity(wv, _write(tmp_path, "empty.tsv", "# nothing\n"))
    with pytest.raises(WarmstartError, match="unknown word-pair dataset"):
        ev.similarity(wv, dataset="men3000")


def test_ranks_average_ties():
    from scipy.stats import rankdata

    x = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 1.0])
    assert ev._ranks(x).tolist() == rankdata(x).tolist()


def test_analogy_is_fast_on_30k_words():
    """19,544 questions over 30,000 words: batched matrix products, not one search per question."""
    import time

    rng = np.random.default_rng(1)
    words = sorted({w.lower() for line in QUESTIONS.read_text().splitlines()[1:] for w in line.split()})
    words += [f"w{i}" for i in range(30000 - len(words))]
    wv = WordVectors(words, rng.standard_normal((30000, 50)).astype(np.float32))
    start = time.perf_counter()
    result = ev.analogy(wv)
    assert result.total.scored == 19544
    assert time.perf_counter() - start < 10  # ~1.5 s on 2 busy cores


def test_projection_png(royal, tmp_path):
    wv = royal
    pairs = [("man", "woman"), ("king", "queen"), ("France", "Paris"), ("uncle", "aunt")]
    info = projection_png(wv, pairs, tmp_path / "fig" / "royal.png", title="royal")
    png = Path(info["path"])
    assert png.stat().st_size > 1000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert info["used"] == [("man", "woman"), ("king", "queen"), ("uncle", "aunt")]
    assert info["skipped"] == [("France", "Paris")]
    assert not [p for p in png.parent.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(WarmstartError, match="none of the 12 word pairs"):
        projection_png(wv, COUNTRY_CAPITAL, tmp_path / "none.png")
    pytest.importorskip("sklearn")
    tsne = projection_png(wv, pairs, tmp_path / "tsne.png", method="tsne")
    assert Path(tsne["path"]).stat().st_size > 1000 and tsne["method"] == "tsne"
    with pytest.raises(WarmstartError, match="unknown projection"):
        projection_png(wv, pairs, tmp_path / "x.png", method="umap")


def test_a_projection_is_written_in_the_format_its_name_says(royal, tmp_path):
    pairs = [("man", "woman"), ("king", "queen")]
    svg = Path(projection_png(royal, pairs, tmp_path / "royal.svg")["path"])
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()
    pdf = Path(projection_png(royal, pairs, tmp_path / "royal.pdf")["path"])
    assert pdf.read_bytes()[:5] == b"%PDF-"
    with pytest.raises(WarmstartError, match="not the name of a picture file"):
        projection_png(royal, pairs, tmp_path / "royal.csv")
    assert not (tmp_path / "royal.csv").exists()
