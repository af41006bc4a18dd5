"""Text that is not UTF-8 given to predict: the bad bytes are replaced and said once on stderr (as every
data reader says it), never dropped in silence."""

import pytest

from tests.helpers.cli import run

pytestmark = pytest.mark.integration


def test_predict_says_when_input_lines_were_not_utf8(tiny_finetuned, tmp_path, capsys):
    src = tmp_path / "latin1.txt"
    src.write_bytes("caf\xe9 au lait, a fine film\nplain ascii line\n".encode("latin-1"))
    code, out, err = run(capsys, "predict", tiny_finetuned, "--input", src)
    assert code == 0, err
    assert len(out.strip().splitlines()) == 2
    warned = [line for line in err.splitlines() if "not valid UTF-8" in line]
    assert len(warned) == 1 and "line 1" in warned[0] and "latin1.txt" in warned[0], err
