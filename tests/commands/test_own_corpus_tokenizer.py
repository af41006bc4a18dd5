"""`pretrain --corpus FILES` with no --tokenizer trains the family's tokenizer on the corpus once, into the
cache (BERT: WordPiece; the gpt2/t5/xlnet/elmo recipes name theirs): a corpus edited afterwards gets a
tokenizer of its own. A folder of text files that are not named by split says to pass the files."""

import yaml

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.shapes import SHAPES, TINY_MODEL
from warmstart.tokenization.tokenizer import Tokenizer

FAST = [*TINY_MODEL, "train.steps=2", "train.progress=false", "train.eval_batches=1", "data.vocab_size=400"]


def test_a_bert_run_on_own_files_trains_its_wordpiece_tokenizer(wiki_extracts, tmp_path, capsys, test_cache):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"doc{i}.txt").write_text("\n".join(wiki_extracts[i * 60 : (i + 1) * 60]), encoding="utf-8")
    files = sorted(docs.glob("*.txt"))
    code, out, err = run(
        capsys, "pretrain", "--arch", "bert", "--corpus", *files, "--out", tmp_path / "a", *FAST
    )
    assert code == 0, err
    assert "training a wordpiece tokenizer (400 tokens)" in out
    used = yaml.safe_load((tmp_path / "a" / "config.yaml").read_text())["data"]["tokenizer"]
    assert used.startswith(str(test_cache / "tokenizers" / "wordpiece-"))
    assert Tokenizer.load(used).algorithm == "wordpiece"
    code, out, err = run(
        capsys, "pretrain", "--arch", "bert", "--corpus", *files, "--out", tmp_path / "b", *FAST
    )
    assert code == 0 and "training a" not in out  # the same corpus: the cached tokenizer
    files[0].write_text("\n".join(wiki_extracts[500:560]), encoding="utf-8")  # the corpus edited
    code, out, err = run(
        capsys, "pretrain", "--arch", "bert", "--corpus", *files, "--out", tmp_path / "c", *FAST
    )
    assert code == 0 and "training a wordpiece tokenizer" in out
    again = yaml.safe_load((tmp_path / "c" / "config.yaml").read_text())["data"]["tokenizer"]
    assert again != used
    pattern = str(docs / "*.txt")  # a quoted pattern: the same files; an edit is seen through it too
    code, out, err = run(
        capsys, "pretrain", "--arch", "bert", "--corpus", pattern, "--out", tmp_path / "p", *FAST
    )
    assert code == 0 and "training a wordpiece tokenizer" in out  # another key (the name), trained once
    files[1].write_text("\n".join(wiki_extracts[600:660]), encoding="utf-8")
    code, out, err = run(
        capsys, "pretrain", "--arch", "bert", "--corpus", pattern, "--out", tmp_path / "q", *FAST
    )
    assert code == 0 and "training a wordpiece tokenizer" in out, err
    code, out, err = run(
        capsys, "pretrain", "--arch", "bert", "--corpus", docs, "--out", tmp_path / "d", *FAST
    )
    assert_one_line_error(code, err, "it holds 3 .txt files", f"--corpus {docs}/*.txt")
    assert "training a" not in out and not (tmp_path / "d").exists()


def test_a_t5_run_on_own_files_gets_sentinels_for_span_corruption(wiki_extracts, tmp_path, capsys):
    """T5's tokenizer, trained for the run, holds <extra_id_N> (it had none: span corruption refused it)."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(wiki_extracts[:150]), encoding="utf-8")
    argv = ["pretrain", "--arch", "t5", "--corpus", corpus, "--out", tmp_path / "t5", *SHAPES["t5"]]
    code, out, err = run(capsys, *argv, "train.steps=2", "train.progress=false", "train.eval_batches=1",
                         "data.vocab_size=400", "data.seq_len=64")  # fmt: skip
    assert code == 0, err
    assert "training a unigram tokenizer (400 tokens)" in out
    used = yaml.safe_load((tmp_path / "t5" / "config.yaml").read_text())["data"]["tokenizer"]
    assert Tokenizer.load(used).token_to_id("<extra_id_99>") is not None
