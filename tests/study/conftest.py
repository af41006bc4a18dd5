"""A small real study, made once for the folder: the tiny pretrained BERT on 200 rotten-tomatoes snippets."""

import pytest

from tests.helpers.runs import study_args
from warmstart.cli.main import main


@pytest.fixture(scope="session")
def study_dir(tiny_pretrained, tmp_path_factory):
    """2 fractions x 2 seeds x (pretrained, scratch, tfidf) = 12 cells, and the report."""
    out = tmp_path_factory.mktemp("study") / "rt"
    assert main(study_args(tiny_pretrained, out)) == 0
    return out
