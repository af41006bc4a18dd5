"""`train.compile=true`: the training module runs through torch.compile (in place, so checkpoints keep their
names) and trains to the losses of the eager run on the same batches. The CPU run needs a C++ compiler
(inductor); the gpu-marked run is issue 26's check of the compiled GPU path."""

import shutil

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers.cli import run
from tests.helpers.runs import pretrain_argv
from warmstart.train.logging import read_metrics

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def losses(path):
    return [r["loss"] for r in read_metrics(path, "train")]


@pytest.mark.parametrize(
    "device",
    [
        pytest.param("cpu", marks=pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")),
        pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(),
                                                                         reason="no CUDA device")]),
    ],
)  # fmt: skip
def test_the_compiled_step_trains_as_the_eager_one(small_shards, tmp_path, capsys, device):
    # the demo's fast path: bf16, no dropout (one graph up to the fused MLM head, which stays out of it),
    # windows of 128 tokens (masked counts that pad to different sizes: a recompile with dynamic shapes)
    common = [
        "--steps",
        "4",
        "train.log_every=1",
        "train.eval_every=0",
        f"train.device={device}",
        "train.bf16=true",
        "model.max_position_embeddings=128",
        "data.seq_len=128",
        "model.hidden_dropout_prob=0",
        "model.attention_probs_dropout_prob=0",
        "train.eval_at_start=false",  # the first compile is the training step's
    ]
    code, _, err = run(capsys, *pretrain_argv(small_shards, tmp_path / "eager", *common))
    assert code == 0, err
    code, out, err = run(
        capsys, *pretrain_argv(small_shards, tmp_path / "compiled", *common, "train.compile=true")
    )
    assert code == 0, err
    assert "torch.compile: first step" in out + err
    eager, compiled = losses(tmp_path / "eager"), losses(tmp_path / "compiled")
    assert len(eager) == len(compiled) == 4
    torch.testing.assert_close(torch.tensor(compiled), torch.tensor(eager), rtol=5e-3, atol=5e-3)
    a = load_file(str(tmp_path / "eager" / "final" / "model.safetensors"))
    b = load_file(str(tmp_path / "compiled" / "final" / "model.safetensors"))
    assert a.keys() == b.keys()  # compiled in place: no _orig_mod. prefix
    assert max(float((a[k].float() - b[k].float()).abs().max()) for k in a) < 1e-2
