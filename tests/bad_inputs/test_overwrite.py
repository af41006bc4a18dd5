"""--overwrite cannot eat inputs or lose a run (issue 22, data loss): an output that is, contains or lies
inside an input is refused before anything changes; the replaced run is moved aside and removed only when
the new run has written its first checkpoint, and put back when the new run fails before that."""

import shutil

import pytest

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.runs import pretrain_argv, run_args

pytestmark = pytest.mark.integration


def snapshot(root):
    """Every file under ``root`` (and its hidden siblings' absence) as {relative path: bytes}."""
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def leftovers(parent):
    return sorted(
        p.name for p in parent.iterdir() if any(m in p.name for m in (".replaced-", ".replacing", ".tmp-"))
    )


@pytest.fixture
def finished(tiny_pretrained, tmp_path):
    """A copy of a finished pretraining run: tmp_path/run."""
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_pretrained, run_dir)
    return run_dir


def test_pretrain_into_its_own_init_is_refused_and_changes_nothing(finished, small_shards, capsys):
    before = snapshot(finished)
    argv = pretrain_argv(small_shards, finished, "--overwrite")
    argv += ["--init", str(finished)]
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, "is the --init", "nothing was changed")
    assert snapshot(finished) == before and leftovers(finished.parent) == []


def test_finetune_into_the_run_that_holds_its_init_is_refused(finished, rt_small, capsys):
    before = snapshot(finished)
    code, _, err = run(
        capsys,
        "finetune",
        "--init",
        finished / "final",
        "--dataset",
        rt_small,
        "--out",
        finished,
        "--overwrite",
    )
    assert_one_line_error(code, err, "contains the --init")
    assert snapshot(finished) == before


def test_pretrain_into_its_own_shards_is_refused(small_shards, tmp_path, capsys):
    shards = tmp_path / "shards"
    shutil.copytree(small_shards, shards)
    before = snapshot(shards)
    code, _, err = run(capsys, *pretrain_argv(shards, shards / "run", "--overwrite"))
    assert_one_line_error(code, err, "lies inside the --shards")
    assert snapshot(shards) == before


def test_prepare_over_the_folder_of_its_corpus_is_refused(small_tokenizer, tmp_path, capsys):
    corpus = tmp_path / "data"
    corpus.mkdir()
    (corpus / "text.txt").write_text("one line of text\nanother line\n" * 50)
    before = snapshot(corpus)
    code, _, err = run(
        capsys, "prepare", "--corpus", corpus / "text.txt", "--tokenizer", small_tokenizer, "--out", corpus,
        "--overwrite",
    )  # fmt: skip
    assert_one_line_error(code, err, "contains the --corpus")
    assert snapshot(corpus) == before


def test_prepare_over_its_tokenizer_is_refused(small_tokenizer, wiki_extracts, tmp_path, capsys):
    """The tokenizer was read first and the shards would have been written in its place."""
    tok = tmp_path / "tok"
    shutil.copytree(small_tokenizer, tok)
    (tmp_path / "text.txt").write_text("\n".join(wiki_extracts[:50]))
    before = snapshot(tok)
    code, _, err = run(
        capsys, "prepare", "--corpus", tmp_path / "text.txt", "--tokenizer", tok, "--out", tok, "--overwrite"
    )
    assert_one_line_error(code, err, "is the --tokenizer")
    assert snapshot(tok) == before


def test_a_tokenizer_trained_into_the_folder_of_its_corpus_is_refused(tmp_path, wiki_extracts, capsys):
    corpus = tmp_path / "data"
    corpus.mkdir()
    (corpus / "text.txt").write_text("\n".join(wiki_extracts[:50]))
    before = snapshot(corpus)
    argv = ["tokenizer", "train", "--kind", "wordpiece", "--vocab-size", "300"]
    argv += ["--corpus", corpus / "text.txt"]
    code, _, err = run(capsys, *argv, "--out", corpus, "--overwrite")
    assert_one_line_error(code, err, "contains the --corpus")
    assert snapshot(corpus) == before


def test_a_replacement_that_fails_before_its_first_checkpoint_puts_the_old_run_back(
    finished, small_shards, tmp_path, capsys
):
    before = snapshot(finished)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    argv = [
        a
        for a in pretrain_argv(small_shards, finished, "--overwrite")
        if a not in ("--shards", str(small_shards))
    ]
    code, _, err = run(capsys, *argv, "--corpus", empty, "--tokenizer", finished / "final")
    assert code == 2 and "Traceback" not in err
    assert snapshot(finished) == before and leftovers(finished.parent) == []


def test_a_failure_inside_training_before_a_checkpoint_restores_and_after_one_does_not(
    finished, small_shards, monkeypatch
):
    from warmstart.commands.pretrain import pretrain

    before = snapshot(finished)

    def boom(step, loss):
        raise RuntimeError("injected before the first checkpoint")

    kwargs = run_args(small_shards, finished)  # 16 steps, a checkpoint every 4
    with pytest.raises(RuntimeError, match="injected"):
        pretrain(**kwargs, overwrite=True, hooks=[boom])  # fails at step 1
    assert snapshot(finished) == before and leftovers(finished.parent) == []

    def late(step, loss):
        if step == 5:
            raise RuntimeError("injected after the first checkpoint")

    with pytest.raises(RuntimeError, match="after"):
        pretrain(**kwargs, overwrite=True, hooks=[late])
    assert snapshot(finished) != before and (finished / "checkpoints" / "step-00000004").is_dir()
    assert leftovers(finished.parent) == []  # the replaced run went with the new run's first checkpoint


@pytest.mark.parametrize("command", ["predict", "evaluate", "embed"])
def test_a_file_output_that_is_the_input_file_is_refused(
    command, tiny_finetuned, labeled_csv, tmp_path, capsys
):
    """predict --input x --out x wrote its predictions over the texts it read, evaluate its metrics."""
    data = tmp_path / "data.csv"
    shutil.copy(labeled_csv, data)
    before = data.read_bytes()
    flag = {"predict": "--input", "evaluate": "--data", "embed": "--data"}[command]
    code, _, err = run(capsys, command, tiny_finetuned, flag, data, "--out", data)
    assert_one_line_error(code, err, "is the")
    assert data.read_bytes() == before


def test_word2vec_export_over_its_vectors_file_is_refused(tmp_path, capsys):
    vectors = tmp_path / "v.txt"
    vectors.write_text("2 3\ncat 0.1 0.2 0.3\ndog 0.3 0.2 0.1\n")
    before = vectors.read_bytes()
    code, _, err = run(capsys, "word2vec", "export", vectors, "--out", vectors, "--format", "text")
    assert_one_line_error(code, err, "is the VECTORS")
    assert vectors.read_bytes() == before


@pytest.mark.parametrize("inside", [False, True])
def test_a_study_into_its_own_model_is_refused_and_changes_nothing(inside, finished, rt_small, capsys):
    """study RUN --out RUN --overwrite removed the pretrained run before anything checked it."""
    before = snapshot(finished)
    out = finished / "study" if inside else finished
    argv = ["study", finished, "--data", rt_small, "--out", out, "--overwrite", "--fractions", "1"]
    code, _, err = run(capsys, *argv, "--seeds", "1", "--epochs", "1")
    assert_one_line_error(code, err, "which this command reads")
    assert snapshot(finished) == before
