"""XLNet downstream (issue 25): a permutation-LM run finetunes with every task head (classification and
multiple choice from the last real token's state, tagging, extractive QA) and predicts as it scored."""

import json

import pytest

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.data import choice_records
from tests.helpers.runs import pretrain_family

FAST = ["train.progress=false", "train.batch_size=16", "evals_per_epoch=1", "--lr", "1e-3", "--epochs", "1"]


@pytest.fixture(scope="module")
def xlnet_run(unigram_shards, tmp_path_factory):
    out = tmp_path_factory.mktemp("xlnet") / "run"
    pretrain_family("xlnet", unigram_shards, out, steps=8, extra=["data.tokenizer_kind=unigram"])
    return out


def finetune(capsys, xlnet_run, out, task, dataset, *extra):
    code, _, err = run(capsys, "finetune", "--task", task, "--init", xlnet_run, "--dataset", dataset,
                       "--out", out, *FAST, *extra)  # fmt: skip
    assert code == 0, err
    return json.loads((out / "test_metrics.json").read_text())


def predict(capsys, out, src):
    code, stdout, err = run(capsys, "predict", out, "--input", src)
    assert code == 0, err
    return [json.loads(x) for x in stdout.splitlines()]


def test_classification_reads_the_last_real_token(xlnet_run, rt_small, tmp_path, capsys):
    metrics = finetune(capsys, xlnet_run, tmp_path / "cls", "classification", rt_small, "task.max_length=48")
    assert 0 <= metrics["test"]["accuracy"] <= 1
    config = json.loads((tmp_path / "cls" / "best" / "config.json").read_text())
    assert config["model_type"] == "xlnet" and config["architectures"] == ["XLNetForSequenceClassification"]
    src = tmp_path / "in.txt"
    src.write_text("a gorgeous , witty film .\nthe plot is a mess .\n")
    preds = predict(capsys, tmp_path / "cls", src)
    assert len(preds) == 2 and all(p["label"] in ("fresh", "rotten") for p in preds)


def test_tagging_qa_and_multiple_choice(xlnet_run, wiki_extracts, tmp_path, capsys):
    pytest.importorskip("spacy")
    from warmstart.data.ner_silver import build_ner_silver

    conll = build_ner_silver(limit=30, out=tmp_path / "silver.conll", progress=False)
    tags = finetune(capsys, xlnet_run, tmp_path / "ner", "tagging", conll, "task.max_length=64")
    assert {"precision", "recall", "f1", "accuracy"} <= set(tags["test"])
    qa = finetune(capsys, xlnet_run, tmp_path / "qa", "extractive_qa", "wiki-qa", "task.max_length=96",
                  "task.doc_stride=32", "data.train_limit=64")  # fmt: skip
    assert 0 <= qa["test"]["f1"] <= 100
    src = tmp_path / "q.jsonl"
    src.write_text(json.dumps({"question": "What is Paris?", "context": "Paris is the capital of France."}))
    (answer,) = predict(capsys, tmp_path / "qa", src)
    assert answer["answer"] == "Paris is the capital of France."[answer["start"] : answer["end"]]
    path = tmp_path / "mc.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in choice_records(wiki_extracts, 40)))
    mc = finetune(capsys, xlnet_run, tmp_path / "mc", "multiple_choice", path, "task.max_length=48")
    assert 0 <= mc["test"]["accuracy"] <= 1


def test_embed_and_probe_read_every_layer(xlnet_run, rt_small, tmp_path, capsys):
    import numpy as np

    code, _, err = run(
        capsys, "embed", xlnet_run, "--data", rt_small, "--layer", "1", "--out", tmp_path / "e.npy"
    )
    assert code == 0, err
    vectors = np.load(tmp_path / "e.npy")
    assert vectors.shape[1] == 32 and np.isfinite(vectors).all() and len(np.unique(vectors[:, 0])) > 1
    code, _, err = run(capsys, "probe", xlnet_run, "--data", rt_small, "--out", tmp_path / "probe")
    assert code == 0, err
    result = json.loads((tmp_path / "probe" / "probe.json").read_text())
    assert [r["layer"] for r in result["layers"]["pretrained"]] == [0, 1, 2]


def test_lora_on_xlnet_names_its_feed_forward_layers(xlnet_run, rt_small, tmp_path, capsys):
    args = ["finetune", "--init", xlnet_run, "--dataset", rt_small, *FAST, "--strategy", "lora"]
    code, _, err = run(capsys, *args, "--out", tmp_path / "a")
    assert_one_line_error(code, err, "no linear layer of this xlnet model", "lora_targets=[up,down]")
    code, _, err = run(capsys, *args, "--out", tmp_path / "b", "strategy.lora_targets=[up,down]")
    assert code == 0, err
