"""Shared, built once: a labeled CSV of real wiki-leads text, and a tiny finetuned run on it."""

import csv

import pytest


@pytest.fixture(scope="session")
def labeled_csv(wiki_extracts, tmp_path_factory):
    """80 real extracts (first 300 characters) with labels a/b, columns text,label."""
    path = tmp_path_factory.mktemp("bad_inputs") / "labeled.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text", "label"])
        writer.writerows([t[:300], "ab"[i % 2]] for i, t in enumerate(wiki_extracts[100:180]))
    return path


@pytest.fixture(scope="session")
def tiny_finetuned(tiny_pretrained, labeled_csv, tmp_path_factory):
    """One epoch of classification on ``labeled_csv`` from ``tiny_pretrained``: a run directory."""
    from warmstart.commands.finetune import finetune

    out = tmp_path_factory.mktemp("finetuned") / "run"
    flags = {
        "init": str(tiny_pretrained),
        "data": {"dataset": str(labeled_csv)},
        "epochs": 1,
        "out": str(out),
    }
    overrides = ["train.batch_size=16", "task.max_length=32", "evals_per_epoch=1", "train.progress=false"]
    finetune(None, flags, overrides)
    return out


@pytest.fixture(scope="session")
def fx(small_tokenizer, other_tokenizer, small_shards, tiny_pretrained, tiny_finetuned, labeled_csv):
    """The paths a case's command line may name as {tok}, {other_tok}, {shards}, {pre}, {ft}, {csv}."""
    return {
        "tok": small_tokenizer,
        "other_tok": other_tokenizer,
        "shards": small_shards,
        "pre": tiny_pretrained,
        "ft": tiny_finetuned,
        "csv": labeled_csv,
    }
