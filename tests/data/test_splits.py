import pytest

from warmstart.data import splits
from warmstart.errors import WarmstartError


def test_assign_split_is_deterministic_and_seeded():
    keys = [f"document number {i}" for i in range(2000)]
    first = [splits.assign_split(k, 0, 0.1, 0.1) for k in keys]
    assert first == [splits.assign_split(k, 0, 0.1, 0.1) for k in keys]
    assert first != [splits.assign_split(k, 1, 0.1, 0.1) for k in keys]
    assert set(first) == {"train", "validation", "test"}


def test_fractions_are_approximately_right():
    keys = [f"k{i}" for i in range(20000)]
    got = [splits.assign_split(k, 3, 0.2, 0.05) for k in keys]
    assert abs(got.count("validation") / len(keys) - 0.2) < 0.01
    assert abs(got.count("test") / len(keys) - 0.05) < 0.005


def test_duplicates_share_a_split_after_normalization():
    a = {"text": "The  cat sat.\n"}
    b = {"text": "the cat SAT."}
    for seed in range(50):
        assert splits.record_split(a, seed, 0.3, 0.3) == splits.record_split(b, seed, 0.3, 0.3)
    # the pair is part of the key
    keys = {splits.record_key({"text": "q", "text_pair": p}) for p in ("a", "b")}
    assert len(keys) == 2


def test_held_out_parts_nest_across_fractions():
    keys = [f"k{i}" for i in range(5000)]
    for k in keys:
        small = splits.assign_split(k, 7, 0.02, 0.01)
        big = splits.assign_split(k, 7, 0.1, 0.1)
        if small != "train":
            assert big == small


def test_filter_split_partitions_a_stream():
    records = [{"text": f"t{i}"} for i in range(500)]
    parts = [list(splits.filter_split(iter(records), s, 0, 0.1, 0.1)) for s in splits.SPLITS]
    assert sum(map(len, parts)) == 500
    assert list(splits.filter_split(iter(records), "all", 0, 0.1, 0.1)) == records


@pytest.mark.parametrize("validation,test", [(-0.1, 0.1), (0.6, 0.5), (1.0, 0.0)])
def test_bad_fractions(validation, test):
    with pytest.raises(WarmstartError, match="fractions"):
        splits.resolve_fractions("labeled", validation, test)


def test_default_fractions():
    assert splits.resolve_fractions("corpus", None, None) == (0.02, 0.01)
    assert splits.resolve_fractions("labeled", None, 0.2) == (0.1, 0.2)
