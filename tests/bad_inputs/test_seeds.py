"""A seed beyond what torch and numpy take (2**70) is one line in `generate`, and an HTTP 400 that says so
from `warmstart serve`, not a 500 (issue 38): GenerationConfig checks it however it is built."""

import pytest

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.shapes import SHAPES

pytestmark = pytest.mark.integration

HUGE = 2**70


@pytest.fixture(scope="module")
def gpt2_run(bpe_shards, tmp_path_factory):
    """A tiny GPT-2 pretrained for 6 steps (as the serve tests' run)."""
    from warmstart.commands.pretrain import pretrain

    out = tmp_path_factory.mktemp("seeds") / "gpt2"
    flags = {"out": str(out), "arch": "gpt2", "data": {"shards": str(bpe_shards)}, "train": {"steps": 6}}
    extra = ["data.seq_len=64", "train.batch_size=8", "train.progress=false", "train.save_every=0",
             "train.eval_every=0", "train.eval_batches=1"]  # fmt: skip
    pretrain(None, None, flags, SHAPES["gpt2"] + extra)
    return out


def test_a_huge_seed_is_one_line_in_generate(gpt2_run, capsys):
    argv = ["generate", gpt2_run, "--prompt", "The city", "strategy=sample", "max_new_tokens=3"]
    code, _, err = run(capsys, *argv, f"seed={HUGE}")
    assert_one_line_error(code, err, f"seed must be at most 4294967295, got {HUGE}")
    code, out, err = run(capsys, *argv, "seed=4294967295")
    assert code == 0 and out.startswith("The city"), err


def test_a_huge_seed_is_a_400_from_serve(gpt2_run):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from warmstart.serve.app import create_app
    from warmstart.serve.limits import Limits
    from warmstart.serve.load import open_model

    client = TestClient(create_app(open_model(str(gpt2_run)), Limits(), "gpt2"))
    fields = {"text": "The city", "strategy": "sample", "max_new_tokens": 3}
    answer = client.post("/api/predict", json={**fields, "seed": HUGE})
    assert answer.status_code == 400 and "seed must be at most 4294967295" in answer.text, answer.text
    assert client.post("/api/predict", json={**fields, "seed": 7}).status_code == 200
