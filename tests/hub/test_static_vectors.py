"""`warmstart import vectors:SPEC`: static word vectors as a zero-layer ELMo whose token layer is the vectors
(issue 24's history table: static vectors, ELMo, BERT). The token layer of a text is each word's vector as
word2vec cut it (lowercased, inner apostrophes and hyphens kept, [UNK] zero); a finetune keeps them frozen
and trains the task model; its random twin has other rows; pretraining it and bad vectors are one line."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.hub import load_unit
from warmstart.hub.static_vectors import vectors_tokenizer
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.word2vec import io as vector_io
from warmstart.word2vec.vectors import WordVectors
from warmstart.word2vec.words import tokenize

pytestmark = pytest.mark.integration

FT = ["--epochs", "2", "task.max_length=48", "train.batch_size=16", "train.progress=false", "train.lr=3e-3"]


@pytest.fixture(scope="module")
def vectors_file(rt_small, tmp_path_factory):
    """Random 12-d vectors for every word of the 240 reviews but the rarest, in word2vec's text format."""
    import csv

    words: dict[str, int] = {}
    for row in csv.DictReader(open(rt_small, encoding="utf-8")):
        for w in tokenize(row["text"]):
            words[w] = words.get(w, 0) + 1
    kept = sorted((w for w, n in words.items() if n > 1), key=lambda w: -words[w])
    vectors = np.random.default_rng(0).normal(0, 1, (len(kept), 12)).astype(np.float32)
    path = tmp_path_factory.mktemp("vectors") / "vectors.txt"
    vector_io.save(WordVectors(kept, vectors), path)
    return path


@pytest.fixture(scope="module")
def static_dir(vectors_file, tmp_path_factory):
    from warmstart.cli.main import main

    out = tmp_path_factory.mktemp("static") / "model"
    assert main(["import", f"vectors:{vectors_file}", "--out", str(out)]) == 0
    return out


def test_the_token_layer_is_each_words_vector_as_word2vec_cut_it(static_dir, vectors_file):
    wv = vector_io.load(vectors_file)
    unit = load_unit(static_dir)
    tokenizer = Tokenizer.load(static_dir)
    text = "The FILM\u2019s " + " ".join(wv.words[5:9]) + " , qwzxv!"
    backend = tokenizer.backend
    words = [w for w, _ in backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(text))]
    assert words[:2] == ["the", "film's"] and words[-3:] == [",", "qwzxv", "!"]
    assert [w for w in words if w[0].isalnum()] == tokenize(text)  # word2vec's words, punctuation apart
    encoding = backend.encode(text)
    assert encoding.tokens[1:-1] == [w if w in wv.index else "[UNK]" for w in words]  # <S> ... </S>
    layers = unit.model.hidden_states(torch.tensor([encoding.ids]))
    assert len(layers) == 1  # the token layer only: no LSTM
    rows = layers[0][0, 1:-1, : wv.dim]
    assert rows.shape[0] == len(words) and sum(w in wv.index for w in words) >= 5
    for w, row in zip(words, rows):
        expect = wv[w] if w in wv.index else np.zeros(wv.dim, dtype=np.float32)
        assert np.array_equal(row.detach().numpy(), expect), w


def test_a_finetune_keeps_the_vectors_and_trains_the_task_model(static_dir, rt_small, tmp_path, capsys):
    out = tmp_path / "ft"
    code, stdout, err = run(
        capsys, "finetune", "--init", static_dir, "--dataset", rt_small, "--out", out, *FT
    )
    assert code == 0, err
    assert "strategy frozen" in err and "layer mix of the best model: token layer 1.000" in stdout
    table = load_file(str(static_dir / "model.safetensors"))["model.embed.weight"]
    best = load_file(str(out / "best" / "model.safetensors"))
    assert torch.equal(best["encoder.bilm.embed.weight"], table)
    metrics = json.loads((out / "test_metrics.json").read_text())
    assert metrics["steps"] > 0 and 0 <= metrics["test"]["accuracy"] <= 1
    twin = tmp_path / "twin"
    code, _, err = run(capsys, "finetune", "--init", static_dir, "--dataset", rt_small, "--out", twin, *FT,
                       "--from-scratch")  # fmt: skip
    assert code == 0, err
    random_rows = load_file(str(twin / "best" / "model.safetensors"))["encoder.bilm.embed.weight"]
    assert random_rows.shape == table.shape and not torch.allclose(random_rows[5:], table[5:])


def test_pretraining_static_vectors_is_one_line(static_dir, wiki_extracts, tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(wiki_extracts[:50]) + "\n")
    code, _, err = run(capsys, "pretrain", "--init", static_dir, "--corpus", corpus, "--out", tmp_path / "p",
                       "--steps", "1")  # fmt: skip
    assert_one_line_error(code, err, "no LSTM layers", "finetune it with --init")
    assert not (tmp_path / "p").exists()


def test_bad_vectors_are_one_line(vectors_file, tmp_path, capsys):
    code, _, err = run(capsys, "import", "vectors:", "--out", tmp_path / "a")
    assert_one_line_error(code, err, "names no word vectors", "vectors:RUN_OR_FILE")
    code, _, err = run(capsys, "import", f"vectors:{tmp_path / 'none.txt'}", "--out", tmp_path / "b")
    assert_one_line_error(code, err, "does not exist")
    bad = tmp_path / "nan.txt"
    bad.write_text("2 3\ngood 0.1 0.2 0.3\nbad nan 0.2 0.3\n")
    code, _, err = run(capsys, "import", f"vectors:{bad}", "--out", tmp_path / "c")
    assert_one_line_error(code, err, "NaN or infinite")
    code, _, err = run(capsys, "import", f"vectors:{vectors_file}", "--out", vectors_file.parent)
    assert_one_line_error(code, err, "contains the SRC")
    for d in ("a", "b", "c"):
        assert not (tmp_path / d).exists()


def test_the_tokenizer_keeps_the_vectors_order_after_the_specials():
    tok = vectors_tokenizer(["the", "film", "state-of-the-art"])
    vocab = tok.backend.get_vocab()
    assert [vocab[w] for w in ("the", "film", "state-of-the-art")] == [5, 6, 7]
    assert tok.backend.encode("State-of-the-art FILM").tokens == ["<S>", "state-of-the-art", "film", "</S>"]
