"""`warmstart pretrain --corpus F.csv --text-column NAME`, the flag finetune, prepare and tokenizer train
take; without it a CSV whose text is elsewhere is one line naming the flag."""

import csv

import yaml

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.shapes import TINY_MODEL

FAST = [
    "--steps",
    "2",
    "--seq-len",
    "32",
    "--batch-size",
    "4",
    "train.progress=false",
    "train.eval_batches=1",
]


def test_pretrain_reads_a_csv_corpus_by_its_text_column(rt_small, small_tokenizer, tmp_path, capsys):
    corpus = tmp_path / "reviews.csv"
    with open(corpus, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["body", "verdict"])
        writer.writerows((r["text"], r["label"]) for r in csv.DictReader(open(rt_small, encoding="utf-8")))
    argv = ["pretrain", "--corpus", corpus, "--tokenizer", small_tokenizer, *TINY_MODEL, *FAST]
    code, _, err = run(capsys, *argv, "--out", tmp_path / "no")
    assert_one_line_error(code, err, "no column 'text'", "--text-column")
    assert not (tmp_path / "no").exists()
    code, _, err = run(capsys, *argv, "--text-column", "body", "--out", tmp_path / "run")
    assert code == 0, err
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["data"]["text_column"] == "body"
