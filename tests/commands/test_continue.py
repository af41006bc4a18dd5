"""Continued pretraining (DAPT/TAPT): `warmstart pretrain --init RUN` on new text, same model and vocab."""

import json

import pytest
import torch
import yaml
from safetensors.torch import load_file

from tests.helpers.cli import assert_one_line_error, run
from warmstart.commands.pretrain import pretrain
from warmstart.errors import WarmstartError

SHORT = ["train.batch_size=8", "train.eval_every=0", "train.eval_batches=2", "train.progress=false"]


def test_tapt_continues_from_the_weights_on_a_labeled_datasets_text(tiny_pretrained, rt_small, tmp_path):
    out = tmp_path / "tapt"
    result = pretrain(
        None,
        None,
        {"out": str(out), "init": str(tiny_pretrained), "data": {"corpus": [str(rt_small)]}},
        SHORT + ["train.steps=3", "train.lr=1e-12", "data.seq_len=64", "model.hidden_dropout_prob=0.0"],
    )
    assert result["step"] == 3
    info = json.loads((out / "init.json").read_text())
    assert info["fresh"] == [] and info["loaded_tensors"] > 10  # encoder and MLM head both continue
    before = load_file(str(tiny_pretrained / "final" / "model.safetensors"))
    after = load_file(str(out / "final" / "model.safetensors"))
    for k in ("encoder.layers.0.attn.qkv.weight", "head.dense.weight", "encoder.embeddings.word.weight"):
        assert torch.allclose(before[k], after[k], atol=1e-6)  # lr ~0: the weights are the starting ones
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert saved["model"]["hidden_size"] == 32 and saved["model"]["hidden_dropout_prob"] == 0.0
    assert (out / "final" / "tokenizer.json").read_text() == (
        tiny_pretrained / "final" / "tokenizer.json"
    ).read_text()
    # the run resumes like any other: the tokenizer and shape come from its own saved config, and a resume
    # is the same run (more steps would change its schedule: refused)
    assert pretrain(resume=str(out))["step"] == 3
    with pytest.raises(WarmstartError, match=r"train.steps \(was 3, now 4\)"):
        pretrain(resume=str(out), flags={"train": {"steps": 4}})


def test_another_objective_starts_its_heads_fresh(tiny_pretrained, small_shards, tmp_path):
    out = tmp_path / "electra"
    pretrain(
        None,
        None,
        {"out": str(out), "init": str(tiny_pretrained), "objective": "electra"},
        SHORT + ["train.steps=2", f"data.shards={small_shards}", "data.seq_len=64"],
    )
    info = json.loads((out / "init.json").read_text())
    assert info["fresh"] == ["discriminator_head", "generator", "generator_head"]


def test_bad_continuations_fail_before_anything_is_written(
    capsys, tiny_pretrained, rt_small, other_tokenizer, tmp_path
):
    out = tmp_path / "r"
    args = ["pretrain", "--init", tiny_pretrained, "--corpus", rt_small, "--out", out]
    code, _, err = run(capsys, *args, "model.hidden_size=64")
    assert_one_line_error(code, err, "model.hidden_size", "--init")
    code, _, err = run(capsys, *args, "--tokenizer", other_tokenizer)
    assert_one_line_error(code, err, "another vocabulary", "tokenizer")
    code, _, err = run(capsys, *args, "embeddings.vectors=v")
    assert_one_line_error(code, err, "embeddings.vectors", "--init")
    code, _, err = run(capsys, "pretrain", "--init", tmp_path / "nothing", "--corpus", rt_small, "--out", out)
    assert_one_line_error(code, err, "no model found")
    assert not out.exists()
