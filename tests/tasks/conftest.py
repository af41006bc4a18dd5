"""The tiny multitask encoder run that the tests of its heads share (tests/helpers/multitask.py)."""

import pytest

from tests.helpers.multitask import multitask_run


@pytest.fixture(scope="session")
def mt_run(tiny_pretrained, tmp_path_factory):
    return multitask_run(tiny_pretrained, tmp_path_factory.mktemp("mt") / "run")
