import pytest

from tests.helpers.runs import finish, start


@pytest.fixture(scope="session")
def cli_baseline(small_shards, tmp_path_factory):
    """The uninterrupted subprocess run that killed and signalled runs must match bit for bit; it keeps
    every checkpoint, to compare each one a broken run leaves."""
    out = tmp_path_factory.mktemp("baseline") / "run"
    code, err = finish(start(small_shards, out, keep_last=1000))
    assert code == 0, err
    return out
