"""Bad input: one clear line on stderr, exit code 2, no traceback, nothing already written lost."""

import pytest

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.shapes import TINY_MODEL


def test_missing_corpus_file(capsys, tmp_path):
    code, _, err = run(
        capsys, "tokenizer", "train", "--corpus", tmp_path / "nope.txt", "--out", tmp_path / "t"
    )
    assert_one_line_error(code, err, "no such file", "nope.txt")
    assert not (tmp_path / "t").exists()


def test_empty_corpus(capsys, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n   \n\n")
    code, _, err = run(capsys, "tokenizer", "train", "--corpus", empty, "--out", tmp_path / "t")
    assert_one_line_error(code, err, "empty")
    assert not (tmp_path / "t").exists()


def test_empty_corpus_for_prepare_leaves_nothing(capsys, tmp_path, small_tokenizer):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    code, _, err = run(
        capsys, "prepare", "--corpus", empty, "--tokenizer", small_tokenizer, "--out", tmp_path / "s"
    )
    assert_one_line_error(code, err)
    assert not (tmp_path / "s").exists()


def test_unknown_dataset_name(capsys, tmp_path, small_tokenizer):
    code, _, err = run(
        capsys, "prepare", "--corpus", "wiki-lead", "--tokenizer", small_tokenizer, "--out", tmp_path
    )
    assert_one_line_error(code, err, "wiki-leads")


def test_unknown_preset(capsys, tmp_path, small_shards):
    code, _, err = run(
        capsys, "pretrain", "--preset", "bert-huge", "--shards", small_shards, "--out", tmp_path / "r"
    )
    assert_one_line_error(code, err, "unknown preset 'bert-huge'")
    assert not (tmp_path / "r").exists()


def test_unknown_config_key(capsys, tmp_path, small_shards):
    code, _, err = run(
        capsys, "pretrain", "--shards", small_shards, "--out", tmp_path / "r", "train.warmup=5"
    )
    assert_one_line_error(code, err, "train.warmup", "did you mean")
    assert not (tmp_path / "r").exists()


def test_existing_run_dir_is_refused_and_untouched(capsys, tmp_path, small_shards):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "precious.txt").write_text("keep me")
    code, _, err = run(capsys, "pretrain", "--shards", small_shards, "--out", run_dir, *TINY_MODEL)
    assert_one_line_error(code, err, "already exists", "--resume", "--overwrite")
    assert [p.name for p in run_dir.iterdir()] == ["precious.txt"]
    assert (run_dir / "precious.txt").read_text() == "keep me"


def test_resume_of_a_directory_that_is_not_a_run(capsys, tmp_path):
    code, _, err = run(capsys, "pretrain", "--resume", tmp_path)
    assert_one_line_error(code, err, "not a run directory")


def test_tokenizer_that_does_not_match_the_model(capsys, tmp_path, small_shards, other_tokenizer):
    code, _, err = run(
        capsys, "pretrain", "--shards", small_shards, "--out", tmp_path / "r", "model.vocab_size=999"
    )
    assert_one_line_error(code, err, "999", "1000")
    code, _, err = run(
        capsys, "pretrain", "--shards", small_shards, "--tokenizer", other_tokenizer, "--out", tmp_path / "r"
    )
    assert_one_line_error(code, err, "another tokenizer")
    assert not (tmp_path / "r").exists()


def test_sequence_longer_than_positions(capsys, tmp_path, small_shards):
    code, _, err = run(
        capsys, "pretrain", "--shards", small_shards, "--out", tmp_path / "r", *TINY_MODEL, "data.seq_len=128"
    )
    assert_one_line_error(code, err, "max_position_embeddings")


def test_non_utf8_is_replaced_and_counted_and_long_lines_are_split(capsys, tmp_path, wiki_extracts):
    corpus = tmp_path / "mixed.txt"
    long_line = " ".join(wiki_extracts[:300])  # one "document" far longer than any model's length
    assert len(long_line) > 100_000
    corpus.write_bytes(
        b"caf\xe9 au lait is a drink\n"
        + "\n".join(wiki_extracts[300:700]).encode()
        + b"\n"
        + long_line.encode()
        + b"\nbad \xff\xfe bytes\n"
    )
    code, _, err = run(
        capsys, "tokenizer", "train", "--corpus", corpus, "--vocab-size", 600, "--out", tmp_path / "t"
    )
    assert code == 0
    assert (
        "warning: " in err and "2 line" in err and "line 1" in err
    )  # the replacement is reported with a count and a line number
    code, out, _ = run(
        capsys, "prepare", "--corpus", corpus, "--tokenizer", tmp_path / "t", "--out", tmp_path / "s"
    )
    assert code == 0 and "train:" in out
    code, out, err = run(
        capsys,
        "pretrain",
        "--shards",
        tmp_path / "s",
        "--out",
        tmp_path / "r",
        *TINY_MODEL,
        "--steps",
        3,
        "--seq-len",
        64,
        "--batch-size",
        4,
        "train.progress=false",
        "train.eval_batches=1",
    )
    assert code == 0, err
    assert (tmp_path / "r" / "final" / "model.safetensors").is_file()


@pytest.mark.parametrize(
    "argv",
    [
        ["data", "show", "no-such-dataset"],
        ["finetune", "--dataset", "news", "--init", "nowhere", "--out", "x"],
    ],
)
def test_other_commands_fail_cleanly(capsys, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err)


def test_recipe_that_needs_another_tokenizer_kind(capsys, tmp_path, small_shards):
    code, _, err = run(
        capsys, "pretrain", "--preset", "roberta-mini", "--shards", small_shards, "--out", tmp_path / "r"
    )
    assert_one_line_error(code, err, "needs a bpe tokenizer", "wordpiece", "--kind bpe")
    assert not (tmp_path / "r").exists()
    code, _, err = run(
        capsys, "pretrain", "--objective", "nsp", "--shards", small_shards, "--out", tmp_path / "r"
    )
    assert_one_line_error(code, err, "unknown objective 'nsp'", "mlm+nsp")
    assert not (tmp_path / "r").exists()
    nsp = ["pretrain", "--objective", "mlm+nsp", "--shards", small_shards, "--out", tmp_path / "r"]
    code, _, err = run(capsys, *nsp, "model.pooler=false")  # found only when the unit is built
    assert_one_line_error(code, err, "no pooler", "model.pooler=true")
    assert not (tmp_path / "r").exists()
