"""`warmstart word2vec ...` on real text: train a run, evaluate, query, plot, export; bad input."""

import json

import pytest

from tests.helpers.cli import assert_one_line_error, run

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def w2v_run(wiki_extracts, tmp_path_factory):
    """Skip-gram vectors from 2,000 real wiki-leads extracts (a text file), 2 epochs: a run directory."""
    from warmstart.cli.main import main

    base = tmp_path_factory.mktemp("w2v")
    corpus = base / "wiki.txt"
    corpus.write_text("\n".join(t.replace("\n", " ") for t in wiki_extracts[:2000]) + "\n")
    out = base / "run"
    code = main(
        ["word2vec", "train", "--corpus", str(corpus), "--out", str(out), "--epochs", "2", "--dim", "32"]
    )
    assert code == 0
    return out


def test_train_writes_a_complete_run(w2v_run):
    for name in [
        "config.yaml",
        "vectors.npy",
        "vectors.vocab.txt",
        "metrics.json",
        "evaluation.md",
        "projection.png",
    ]:
        assert (w2v_run / name).is_file(), name
    metrics = json.loads((w2v_run / "metrics.json").read_text())
    assert metrics["train"]["vocab_size"] > 1000
    assert metrics["train"]["epoch_losses"][-1] < metrics["train"]["epoch_losses"][0]
    analogy = metrics["analogy"]
    assert len(analogy["sections"]) == 14 and analogy["questions"] == 19544
    total = analogy["total"]
    assert total["correct"] + total["incorrect"] + total["oov"] == 19544
    assert 0 < metrics["similarity"]["wordsim353"]["pairs"] <= 353


def test_evaluate_similar_analogy_export(capsys, w2v_run, tmp_path):
    code, out, _ = run(capsys, "word2vec", "evaluate", w2v_run)
    assert code == 0 and "wordsim353" in out
    code, out, _ = run(capsys, "word2vec", "similar", "city", "--vectors", w2v_run, "--top", "3")
    assert code == 0 and len(out.strip().splitlines()) == 3
    code, out, _ = run(capsys, "word2vec", "analogy", "king", "man", "woman", "--vectors", w2v_run)
    assert code == 0 and "king - man + woman" in out
    code, out, _ = run(capsys, "word2vec", "export", w2v_run, "--out", tmp_path / "v.bin")
    assert code == 0

    from gensim.models import KeyedVectors

    kv = KeyedVectors.load_word2vec_format(str(tmp_path / "v.bin"), binary=True)
    assert kv.vector_size == 32 and "city" in kv.key_to_index


def test_unknown_word_is_one_clear_line(capsys, w2v_run):
    code, _, err = run(capsys, "word2vec", "similar", "qqqqzzzz", "--vectors", w2v_run)
    assert_one_line_error(code, err, "'qqqqzzzz' is not in the vocabulary")


def test_empty_corpus_writes_nothing(capsys, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("!!! ...\n\n")
    code, _, err = run(capsys, "word2vec", "train", "--corpus", empty, "--out", tmp_path / "run")
    assert_one_line_error(code, err)
    assert not (tmp_path / "run").exists()


def test_corpus_below_min_count(capsys, tmp_path):
    small = tmp_path / "small.txt"
    small.write_text("one two three four\nfive six seven\n")
    code, _, err = run(capsys, "word2vec", "train", "--corpus", small, "--out", tmp_path / "run")
    assert_one_line_error(code, err, "min_count")
    assert not (tmp_path / "run").exists()


def test_existing_run_directory_is_refused_before_training(capsys, w2v_run):
    before = (w2v_run / "vectors.npy").stat().st_mtime_ns
    code, _, err = run(capsys, "word2vec", "train", "--corpus", "wiki-leads", "--out", w2v_run)
    assert_one_line_error(code, err, "already exists")
    assert (w2v_run / "vectors.npy").stat().st_mtime_ns == before


def test_a_table_corpus_is_read_by_its_text_column(wiki_extracts, tmp_path, capsys):
    """--text-column reads a CSV's own column (it read "text" only: a CSV of `body` was refused); the run
    counts the words of that column and of no other."""
    import csv

    table = tmp_path / "articles.csv"
    with open(table, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "body"])
        writer.writerows([f"zzid{i}", t] for i, t in enumerate(wiki_extracts[:300]))
    argv = ["word2vec", "train", "--corpus", table, "--out", tmp_path / "run", "--epochs", "1", "--dim", "16"]
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, "no column 'text'", "--text-column")
    code, _, err = run(capsys, *argv, "--text-column", "body", "--min-count", "1")
    assert code == 0, err
    words = (tmp_path / "run" / "vectors.vocab.txt").read_text(encoding="utf-8").split()
    assert "the" in words and not any(w.startswith("zzid") for w in words)
