"""Run directories written by the release before the run card (tests/fixtures/old_runs, made by the old
code with make_old.py there) still load, predict, continue and export with today's code."""

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from warmstart.checkpoints.card import RunCard, checkpoint_config
from warmstart.checkpoints.continue_from import open_init
from warmstart.checkpoints.load import load_encoder, load_finetuned
from warmstart.data.catalog import open_dataset
from warmstart.hub.convert import export_hf
from warmstart.inference.predict import predict_lines
from warmstart.tasks.base import TaskConfig

OLD = Path(__file__).parents[1] / "fixtures" / "old_runs"


def test_the_old_block_reads_as_a_card_with_its_label_map():
    config = json.loads((OLD / "finetuned" / "best" / "config.json").read_text())
    assert config["warmstart"]["labels"] == ["fresh", "rotten"]  # the old layout: stored twice
    card = RunCard.read(config)
    assert (card.arch, card.objective, card.task_name) == ("bert", "mlm", "classification")
    assert card.labels == ["fresh", "rotten"] and card.tokenizer == config["warmstart"]["tokenizer"]
    pretrained = RunCard.read(json.loads((OLD / "pretrained" / "final" / "config.json").read_text()))
    assert not pretrained.finetuned and pretrained.labels == [] and pretrained.objective == "mlm"


def test_rewritten_the_label_map_is_stored_once():
    config = json.loads((OLD / "finetuned" / "best" / "config.json").read_text())
    again = RunCard.read(config).write(config)
    assert "labels" not in again["warmstart"] and again["id2label"] == {0: "fresh", 1: "rotten"}
    assert RunCard.read(json.loads(json.dumps(again))).labels == ["fresh", "rotten"]


def test_an_old_finetuned_run_predicts_as_it_scored():
    unit, task, tokenizer, labels = load_finetuned(OLD / "finetuned")
    assert labels == ["fresh", "rotten"] and task.name == "classification"
    scored = json.loads((OLD / "finetuned" / "test_metrics.json").read_text())["test"]
    rows = list(open_dataset("rotten-tomatoes").records("test"))[:16]  # data.test_limit=16 in make_old.py
    out = list(predict_lines(str(OLD / "finetuned"), [json.dumps({"text": r["text"]}) for r in rows]))
    accuracy = sum(o["label"] == r["label"] for o, r in zip(out, rows)) / len(rows)
    loss = -sum(math.log(o["probabilities"][r["label"]]) for o, r in zip(out, rows)) / len(rows)
    assert accuracy == scored["accuracy"] and abs(loss - scored["loss"]) < 1e-4


def test_an_old_pretrained_run_loads_as_an_encoder_and_exports(tmp_path):
    transformers = pytest.importorskip("transformers")
    encoder, tokenizer, config_json = load_encoder(OLD / "pretrained")
    export_hf(str(OLD / "pretrained"), tmp_path / "hf")
    hf = transformers.AutoModel.from_pretrained(tmp_path / "hf").eval()
    ids = torch.tensor([tokenizer.encode("the city of light")])
    with torch.no_grad():
        ours, theirs = encoder.eval()(ids), hf(ids).last_hidden_state
    assert (ours - theirs).abs().max() < 1e-4
    init = open_init(str(OLD / "pretrained"), {}, "bert")  # continued pretraining starts from it
    assert init.objective == "mlm" and init.model.hidden_size == 16


def test_a_finetuned_config_from_an_old_encoder_keeps_one_label_map():
    config = json.loads((OLD / "pretrained" / "final" / "config.json").read_text())
    task = SimpleNamespace(
        hf_architecture="BertForSequenceClassification", cfg=TaskConfig(name="classification")
    )
    out = checkpoint_config(config, task, ["a", "b", "c"])
    assert "labels" not in out["warmstart"] and out["num_labels"] == 3
    assert (
        RunCard.read(out).labels == ["a", "b", "c"] and out["warmstart"]["task"]["name"] == "classification"
    )
