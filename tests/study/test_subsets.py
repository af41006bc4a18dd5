"""Label fractions: seeded, nested, stratified, and the same rows wherever they are asked for."""

import pytest

from warmstart.data.subsets import nested_subset
from warmstart.errors import WarmstartError

ROWS = [{"text": f"t{i}", "label": "a" if i % 4 else "b"} for i in range(400)]  # 300 a, 100 b


def texts(rows):
    return {r["text"] for r in rows}


def test_nested_and_stratified():
    for seed in (1, 2):
        small, mid, full = (nested_subset(ROWS, f, seed) for f in (0.01, 0.1, 1))
        assert texts(small) < texts(mid) < texts(full) and full == ROWS
        assert [r["label"] for r in small].count("b") == 1 and len(small) == 4  # ceil(3) a + ceil(1) b
        assert len(mid) == 40 and [r["label"] for r in mid].count("b") == 10
        assert mid == [r for r in ROWS if r["text"] in texts(mid)]  # original order kept
    assert nested_subset(ROWS, 0.1, 1) == nested_subset(ROWS, 0.1, 1)
    assert texts(nested_subset(ROWS, 0.1, 1)) != texts(nested_subset(ROWS, 0.1, 2))


@pytest.mark.parametrize("fraction", [0, -0.5, 1.5])
def test_fraction_outside_0_1_is_refused(fraction):
    with pytest.raises(WarmstartError, match=r"in \(0, 1\]"):
        nested_subset(ROWS, fraction, 0)
