"""ELMo downstream (issue 24): a finetune keeps the biLM frozen by default and trains the layer mix, a task
biLSTM and the head; the learned mix is printed and saved; `--strategy full` trains the biLM too; the
finetuned model loads back and predicts as it scored."""

import json

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers.cli import assert_one_line_error, run
from warmstart.commands.pretrain import pretrain
from warmstart.data.shard_writer import prepare_shards
from warmstart.nn.scalar_mix import ScalarMix
from warmstart.tokenization.train import train_tokenizer

pytestmark = pytest.mark.integration

SHAPE = ["model.projection_dim=16", "model.cell_size=32", "model.filters=[[1,8],[2,8],[3,16]]",
         "data.seq_len=32", "train.batch_size=8", "train.eval_batches=1", "train.progress=false"]  # fmt: skip
FT = ["--epochs", "1", "task.max_length=32", "train.batch_size=16", "train.progress=false", "train.lr=3e-3"]


@pytest.fixture(scope="module")
def elmo_run(wiki_extracts, rt_small, tmp_path_factory):
    """A tiny ELMo pretrained 4 steps on real text whose word tokenizer also knows the reviews' words."""
    import csv

    root = tmp_path_factory.mktemp("elmo_task")
    reviews = [row["text"] for row in csv.DictReader(open(rt_small, encoding="utf-8"))]
    tok = train_tokenizer(wiki_extracts[:400] + reviews, "word", 4000, root / "tok", show_progress=False)
    prepare_shards({"train": wiki_extracts[:400], "validation": wiki_extracts[400:440]}, tok, root / "s",
                   show_progress=False)  # fmt: skip
    flags = {"out": str(root / "run"), "data": {"shards": str(root / "s")}, "train": {"steps": 4}}
    pretrain("elmo-mini", None, flags, SHAPE)
    return root / "run"


def test_the_mix_starts_even_and_learns():
    mix = ScalarMix(3)
    states = [torch.full((1, 2, 4), float(i)) for i in range(3)]
    assert torch.allclose(mix(states), torch.full((1, 2, 4), 1.0))  # (0 + 1 + 2) / 3
    mix(states).sum().backward()
    assert mix.scalars.grad.abs().sum() > 0 and mix.gamma.grad is not None
    assert mix.weights() == {"weights": [0.3333, 0.3333, 0.3333], "gamma": 1.0}


def bilm_weights(path):
    state = load_file(str(path / "model.safetensors"))
    return {k: v for k, v in state.items() if k.startswith("encoder.bilm.")}


def test_frozen_by_default_the_mix_is_learned_and_saved(elmo_run, rt_small, tmp_path, capsys):
    out = tmp_path / "ft"
    code, stdout, err = run(capsys, "finetune", "--init", elmo_run, "--dataset", rt_small, "--out", out, *FT)
    assert code == 0, err
    assert "an ELMo run: strategy frozen" in err and "layer mix of the best model: token layer" in stdout
    metrics = json.loads((out / "test_metrics.json").read_text())
    mix = metrics["layer_mix"]
    assert len(mix["weights"]) == 3 and abs(sum(mix["weights"]) - 1) < 1e-3
    assert mix["weights"] != [0.3333, 0.3333, 0.3333]  # the task moved it
    pretrained = load_file(str(elmo_run / "final" / "model.safetensors"))
    for name, value in bilm_weights(out / "best").items():  # the biLM is exactly the pretrained one
        assert torch.equal(value, pretrained[name.replace("encoder.bilm.", "model.")]), name
    texts = tmp_path / "in.txt"
    texts.write_text("A warm, funny film.\nDull and far too long.\nZyxquvian.\nQwertzuiop.\n")
    code, stdout, err = run(capsys, "predict", out, "--input", texts)
    assert code == 0, err
    preds = [json.loads(line) for line in stdout.splitlines()]
    assert [p["text"] for p in preds][:2] == ["A warm, funny film.", "Dull and far too long."]
    assert all(abs(sum(p["probabilities"].values()) - 1) < 1e-5 for p in preds)
    # two words outside the vocabulary: read as their characters, not both as [UNK]
    assert preds[2]["probabilities"] != preds[3]["probabilities"]


def test_full_trains_the_bilm_and_other_strategies_are_refused(elmo_run, rt_small, tmp_path, capsys):
    out = tmp_path / "full"
    code, _, err = run(capsys, "finetune", "--init", elmo_run, "--dataset", rt_small, "--out", out, *FT,
                       "--strategy", "full")  # fmt: skip
    assert code == 0, err
    pretrained = load_file(str(elmo_run / "final" / "model.safetensors"))
    moved = [
        n
        for n, v in bilm_weights(out / "best").items()
        if not torch.equal(v, pretrained[n.replace("encoder.bilm.", "model.")])
    ]
    assert moved  # the biLM trained
    code, _, err = run(capsys, "finetune", "--init", elmo_run, "--dataset", rt_small, "--out", tmp_path / "x",
                       *FT, "--strategy", "lora")  # fmt: skip
    assert_one_line_error(code, err, "strategy frozen", "or full, not lora")


def test_generate_and_export_refuse_an_elmo_run_in_one_line(elmo_run, tmp_path, capsys):
    code, _, err = run(capsys, "generate", elmo_run, "--prompt", "the")
    assert_one_line_error(code, err, "model_type elmo", "does not generate text")
    code, _, err = run(capsys, "export", elmo_run, "--to", "hf", "--out", tmp_path / "hf")
    assert_one_line_error(code, err, "transformers has no elmo", "warmstart embed")
    assert not (tmp_path / "hf").exists()
