"""Issue 40, part 1: `warmstart tokenizer train --cased` trains a cased WordPiece (BERT cased, lecture 003);
without it WordPiece lowercases. A run pretrained and finetuned with the cased tokenizer keeps its casing."""

import json

from tests.helpers.cli import run
from tests.helpers.hub import FINETUNE_FAST
from tests.helpers.shapes import TINY_MODEL
from warmstart.tokenization.tokenizer import Tokenizer


def _corpus(tmp_path, wiki_extracts):
    path = tmp_path / "wiki.txt"
    path.write_text("\n".join(wiki_extracts[:1500]) + "\n", encoding="utf-8")
    return path


def _train(capsys, corpus, out, *flags):
    argv = ["tokenizer", "train", "--corpus", corpus, "--vocab-size", 1000, "--out", out]
    code, said, err = run(capsys, *argv, *flags)
    assert code == 0, err
    return said


def _lowercases(directory) -> bool:
    """Whether the saved tokenizer.json's BertNormalizer lowercases."""
    normalizer = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))["normalizer"]
    assert normalizer["type"] == "BertNormalizer"
    return normalizer["lowercase"]


def _apart(directory) -> bool:
    """Whether the tokenizer in ``directory`` gives "Paris" and "paris" different ids."""
    tok = Tokenizer.load(directory)
    return tok.encode("Paris is in France") != tok.encode("paris is in france")


def test_cased_wordpiece_keeps_paris_and_paris_apart(capsys, tmp_path, wiki_extracts):
    corpus = _corpus(tmp_path, wiki_extracts)
    said = _train(capsys, corpus, tmp_path / "cased", "--cased")
    assert "(wordpiece, cased, " in said
    assert _apart(tmp_path / "cased") and not _lowercases(tmp_path / "cased")
    assert not Tokenizer.load(tmp_path / "cased").do_lower_case
    assert "The" in Tokenizer.load(tmp_path / "cased").get_vocab()  # capitals are learnt as such
    said = _train(capsys, corpus, tmp_path / "uncased")
    assert "(wordpiece, uncased, " in said
    assert not _apart(tmp_path / "uncased") and _lowercases(tmp_path / "uncased")


def test_pretraining_and_finetuning_keep_the_casing(capsys, tmp_path, wiki_extracts, rt_small):
    corpus = _corpus(tmp_path, wiki_extracts)
    tok = tmp_path / "tok"
    _train(capsys, corpus, tok, "--cased")
    code, _, err = run(capsys, "prepare", "--corpus", corpus, "--tokenizer", tok, "--out", tmp_path / "s")
    assert code == 0, err
    pre = tmp_path / "pre"
    argv = ["pretrain", "--shards", tmp_path / "s", "--out", pre, "--steps", 2, *TINY_MODEL]
    code, _, err = run(capsys, *argv, "train.batch_size=4", "train.eval_batches=1", "train.progress=false")
    assert code == 0, err
    ft = tmp_path / "ft"
    argv = ["finetune", "--init", pre, "--dataset", rt_small, "--out", ft, "--epochs", 1, *FINETUNE_FAST]
    code, _, err = run(capsys, *argv, "data.train_limit=16")
    assert code == 0, err
    for saved in (pre / "final", ft / "best"):
        assert _apart(saved) and not _lowercases(saved), saved
        assert not Tokenizer.load(saved).do_lower_case
