"""Embedding warm start: which tokens get a vector, the projection, and a real pretraining run with it."""

import json

import numpy as np
import pytest
import torch

from tests.helpers.shapes import TINY_MODEL
from warmstart.errors import WarmstartError
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.word2vec.vectors import WordVectors
from warmstart.word2vec.warm_start import project_rows, token_words, warm_start_embeddings


def _cosines(m: np.ndarray) -> np.ndarray:
    unit = m / np.linalg.norm(m, axis=1, keepdims=True)
    return unit @ unit.T


def test_whole_word_tokens_per_tokenizer_kind():
    assert token_words({"[CLS]": 0, "the": 1, "##s": 2, "Paris": 3}, "wordpiece", {0}) == {
        1: "the",
        3: "paris",
    }
    vocab = {"<s>": 0, "the": 1, "##s": 2, "\u0120Cat": 4, "\u2581dog": 5}
    assert token_words(vocab, "bpe", {0}) == {4: "cat"}
    assert token_words(vocab, "unigram", {0}) == {5: "dog"}


def test_up_projection_keeps_cosines_and_matches_the_init_scale():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 10)).astype(np.float32)
    y = project_rows(x, 32, 0.02, "auto")
    assert y.shape == (50, 32)
    assert abs(float(y.std()) - 0.02) < 1e-4
    xc = x - x.mean(0)
    np.testing.assert_allclose(_cosines(y), _cosines(xc), atol=1e-4)


def test_down_projection_is_pca():
    rng = np.random.default_rng(1)
    basis = rng.standard_normal((3, 20))
    x = rng.standard_normal((100, 3)) @ basis  # rank 3 in 20 dimensions
    y = project_rows(x.astype(np.float32), 3, 0.02, "auto")
    xc = x - x.mean(0)
    # PCA onto the 3 directions that span the data keeps all pairwise distances (up to the common scale)
    d_x = np.linalg.norm(xc[:, None] - xc[None], axis=-1)
    d_y = np.linalg.norm(y[:, None] - y[None], axis=-1)
    np.testing.assert_allclose(d_y / d_y.max(), d_x / d_x.max(), atol=1e-4)


def test_another_dimension_with_projection_off_is_one_clear_error():
    with pytest.raises(WarmstartError, match="100 dimensions but the model's hidden size is 32"):
        project_rows(np.zeros((4, 100), np.float32), 32, 0.02, "none")
    with pytest.raises(WarmstartError, match="unknown embeddings.project"):
        project_rows(np.zeros((4, 32), np.float32), 32, 0.02, "pca")


def test_only_whole_word_rows_change(small_tokenizer):
    tok = Tokenizer.load(small_tokenizer)
    vocab = tok.get_vocab()
    words = ["the", "city", "river", "zzzznotaword"]
    wv = WordVectors(words, np.random.default_rng(0).standard_normal((4, 16)))
    emb = torch.nn.Embedding(tok.vocab_size, 16)
    before = emb.weight.detach().clone()
    info = warm_start_embeddings(emb, tok, wv, std=0.02, project="none")
    changed = set(torch.nonzero((emb.weight != before).any(1)).flatten().tolist())
    assert changed == {vocab[w] for w in words[:3] if w in vocab}
    assert info["tokens_warm"] == len(changed)


def test_no_shared_word_is_an_error(small_tokenizer):
    tok = Tokenizer.load(small_tokenizer)
    wv = WordVectors(["qqqq", "wwww"], np.ones((2, 8)))
    with pytest.raises(WarmstartError, match="no token of the tokenizer is a word"):
        warm_start_embeddings(torch.nn.Embedding(tok.vocab_size, 8), tok, wv, 0.02)


def _vectors_file(tmp_path, tok, dim):
    from warmstart.word2vec import io

    words = [w for w in tok.get_vocab() if w.isalpha()][:200]
    wv = WordVectors(words, np.random.default_rng(0).standard_normal((len(words), dim)))
    path = tmp_path / "vec.txt"
    io.save(wv, path, "text")
    return path, words


def test_pretrain_with_vectors_starts_from_them(small_shards, small_tokenizer, tmp_path):
    from warmstart.commands.pretrain import pretrain

    tok = Tokenizer.load(small_tokenizer)
    path, words = _vectors_file(tmp_path, tok, 24)  # hidden size is 32: projected up
    out = tmp_path / "run"
    overrides = TINY_MODEL + ["train.progress=false", "train.eval_batches=1", "train.save_every=1"]
    flags = {"out": str(out), "data": {"shards": str(small_shards)}, "train": {"steps": 1, "lr": 1e-12}}
    pretrain(None, None, {**flags, "embeddings": {"vectors": str(path)}}, overrides)
    info = json.loads((out / "warm_start.json").read_text())
    assert info["tokens_warm"] == len(words) and info["vector_dim"] == 24

    from safetensors.torch import load_file

    from warmstart.checkpoints.load import resolve_checkpoint

    weights = load_file(resolve_checkpoint(out) / "model.safetensors")
    table = next(v for k, v in weights.items() if k.endswith("embeddings.word.weight"))
    ids = [tok.token_to_id(w) for w in words]
    warm = table[ids].numpy()
    # with a vanishing learning rate the rows are still the projected vectors: cosines as in the file
    from warmstart.word2vec import io

    x = io.load(path).vectors
    x = x - x.mean(0)
    np.testing.assert_allclose(_cosines(warm), _cosines(x), atol=2e-3)


def test_pretrain_refuses_other_dimension_before_writing(small_shards, small_tokenizer, tmp_path):
    from warmstart.commands.pretrain import pretrain

    path, _ = _vectors_file(tmp_path, Tokenizer.load(small_tokenizer), 24)
    out = tmp_path / "run"
    flags = {"out": str(out), "data": {"shards": str(small_shards)}, "train": {"steps": 1}}
    flags["embeddings"] = {"vectors": str(path), "project": "none"}
    with pytest.raises(WarmstartError, match="24 dimensions but the model's hidden size is 32"):
        pretrain(None, None, flags, TINY_MODEL)
    assert not out.exists()
