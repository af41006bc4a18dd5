"""Issue 40, part 3: examples/two_sided_cheats.py at its smallest size, run as a user runs it. The same
tiny encoder trained to predict the next token without a causal mask copies it (its training loss
collapses), while the causal (GPT-style) and the masked (BERT) versions must guess."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two_sided_cheats.py"


def test_a_two_sided_next_token_model_cheats(tmp_path):
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--size", "tiny", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "two_sided_cheats.json").read_text())
    final = result["final_loss"]
    two_sided, causal, masked = (final[k] for k in ("two-sided, next token", "causal, next token",
                                                   "masked (15%)"))  # fmt: skip
    assert two_sided < 0.35 * causal and two_sided < 1.5, final  # it copies the token it is shown
    assert causal > 3.0 and masked > 3.0, final  # the others must guess
    curves = result["curves"]
    assert all(len(v) == 260 for v in curves.values())
    assert curves["two-sided, next token"][0] > 5.0  # it started where the others did
    assert "| two-sided, next token |" in done.stdout
    assert (tmp_path / "two_sided_cheats.png").stat().st_size > 10_000
