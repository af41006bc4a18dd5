"""A small real study, made once for the folder: the tiny pretrained BERT on 200 rotten-tomatoes snippets."""

import pytest

from warmstart.cli.main import main

FAST = [
    "data.train_limit=200",
    "task.max_length=48",
    "train.batch_size=16",
    "train.lr=1e-3",
    "eval_batch_size=256",
]


def study_args(run, out, *extra):
    return [
        "study", str(run), "--data", "rotten-tomatoes", "--out", str(out), "--fractions", "0.1,1",
        "--seeds", "1,2", "--epochs", "1", "--min-steps", "0", *FAST, *extra,
    ]  # fmt: skip


@pytest.fixture(scope="session")
def study_dir(tiny_pretrained, tmp_path_factory):
    """2 fractions x 2 seeds x (pretrained, scratch, tfidf) = 12 cells, and the report."""
    out = tmp_path_factory.mktemp("study") / "rt"
    assert main(study_args(tiny_pretrained, out)) == 0
    return out
