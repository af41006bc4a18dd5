"""Tagging, extractive QA and multiple choice through `warmstart finetune`, evaluate and predict."""

import json

import pytest
import yaml

from tests.helpers.data import choice_records
from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import saved_task
from warmstart.cli.main import main
from warmstart.errors import WarmstartError
from warmstart.tasks.base import TaskConfig

FAST = ["train.progress=false", "train.batch_size=16", "evals_per_epoch=1", "--lr", "1e-3"]


@pytest.fixture(scope="module")
def silver_conll(tmp_path_factory):
    pytest.importorskip("spacy")
    from warmstart.data.ner_silver import build_ner_silver

    return build_ner_silver(limit=30, out=tmp_path_factory.mktemp("ner") / "silver.conll", progress=False)


def test_tagging_on_silver_conll(tiny_pretrained, silver_conll, tmp_path, capsys):
    run = tmp_path / "ner"
    argv = ["finetune", "--task", "tagging", "--init", str(tiny_pretrained), "--dataset", str(silver_conll)]
    assert main(argv + ["--out", str(run), "--epochs", "2", "task.max_length=64", *FAST]) == 0
    test = json.loads((run / "test_metrics.json").read_text())["test"]
    assert {"precision", "recall", "f1", "accuracy"} <= set(test)
    config = json.loads((run / "best" / "config.json").read_text())
    assert config["architectures"] == ["BertForTokenClassification"] and config["id2label"]["0"] == "O"
    src = tmp_path / "in.txt"
    src.write_text("Barack Obama visited Paris in 2009 .\n")
    capsys.readouterr()
    assert main(["predict", str(run), "--input", str(src)]) == 0
    (pred,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert pred["tokens"] == "Barack Obama visited Paris in 2009 .".split() and len(pred["tags"]) == 7


def test_qa_on_wiki_qa(tiny_pretrained, tmp_path, capsys):
    run = tmp_path / "qa"
    argv = ["finetune", "--task", "extractive_qa", "--init", str(tiny_pretrained), "--dataset", "wiki-qa"]
    assert (
        main(
            argv
            + [
                "--out",
                str(run),
                "--epochs",
                "1",
                "task.max_length=96",
                "task.doc_stride=32",
                "data.train_limit=64",
                *FAST,
            ]
        )
        == 0
    )
    test = json.loads((run / "test_metrics.json").read_text())
    assert test["sizes"]["test"] == 128 and 0 <= test["test"]["f1"] <= 100
    src = tmp_path / "q.jsonl"
    src.write_text(
        json.dumps({"question": "What is Paris?", "context": "Paris is the capital of France."}) + "\n"
    )
    capsys.readouterr()
    assert main(["predict", str(run), "--input", str(src)]) == 0
    (pred,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert pred["answer"] == "Paris is the capital of France."[pred["start"] : pred["end"]]
    # every wiki-qa question has an answer: the run saved that it never answers "", whatever predict reads
    card = RunCard.read(json.loads((run / "best" / "config.json").read_text()))
    assert saved_task(card.task).cfg.null_answers is False
    assert pred["start"] >= 0 and pred["answer"]
    question = {"question": "What is Paris?", "context": "Paris is the capital of France."}
    golds = [[{"text": "the capital", "answer_start": 9}], {"text": ["the capital"], "answer_start": [9]}, []]
    src.write_text("".join(json.dumps({**question, "answers": g}) + "\n" for g in golds))
    assert main(["predict", str(run), "--input", str(src)]) == 0
    again = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(p["answer"], p["start"]) for p in again] == [(pred["answer"], pred["start"])] * 3
    # plain text is refused for QA with one clear line
    src.write_text("What is Paris?\n")
    assert main(["predict", str(run), "--input", str(src)]) == 2
    assert "needs JSON objects" in capsys.readouterr().err


def test_multiple_choice_file(tiny_pretrained, wiki_extracts, tmp_path):
    path = tmp_path / "mc.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in choice_records(wiki_extracts, 40)))
    run = tmp_path / "mc"
    argv = ["finetune", "--task", "multiple_choice", "--init", str(tiny_pretrained), "--dataset", str(path)]
    assert main(argv + ["--out", str(run), "--epochs", "1", "task.max_length=48", *FAST]) == 0
    assert "accuracy" in json.loads((run / "test_metrics.json").read_text())["test"]


def test_wrong_kind_of_dataset_for_the_task(tiny_pretrained, tmp_path, capsys):
    argv = ["finetune", "--task", "tagging", "--init", str(tiny_pretrained), "--dataset", "rotten-tomatoes"]
    assert main(argv + ["--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "rotten-tomatoes is a labeled dataset but task tagging needs a tagging dataset" in err
    assert "(task.name=classification)" in err  # the task that fits, named
    argv = ["finetune", "--task", "classification", "--init", str(tiny_pretrained), "--dataset", "brown-pos"]
    assert main([*argv, "--out", str(tmp_path / "y")]) == 2
    assert "the task that fits (task.name=tagging)" in capsys.readouterr().err


def test_a_run_that_names_no_task_takes_the_one_its_dataset_fits(tiny_pretrained, tmp_path, capsys):
    """As `warmstart study` does: tagged words are a tagging run, said in one line (the name given wins)."""
    run = tmp_path / "pos"
    argv = ["finetune", "--init", str(tiny_pretrained), "--dataset", "brown-pos", "--out", str(run)]
    limits = ["data.train_limit=64", "data.validation_limit=32", "data.test_limit=32", "task.max_length=48"]
    assert main([*argv, "--epochs", "1", *limits, "task.unseen_tags=fallback", *FAST]) == 0
    assert "brown-pos is a tagging dataset: task.name=tagging" in capsys.readouterr().err
    assert yaml.safe_load((run / "config.yaml").read_text())["task"]["name"] == "tagging"
    assert "accuracy" in json.loads((run / "test_metrics.json").read_text())["test"]


def test_unseen_tags_kept_are_classes_scored_as_errors(tiny_pretrained, tmp_path, capsys):
    """task.unseen_tags=keep: a tag of the test split only is a class of the head (as run_ner's on a
    ClassLabel), its words in the breakdown with their support, wrong unless predicted; it was refused or
    mapped to a training tag (which can turn an error into a hit)."""

    def write(name, rows):
        path = tmp_path / f"{name}.conll"
        path.write_text("\n\n".join("\n".join(f"{w} {t}" for w, t in row) for row in rows) + "\n")
        return path

    words = [[("Ada", "B-PER"), ("met", "O"), ("Alan", "B-PER"), ("Turing", "I-PER")]] * 12
    test = [[("Ada", "B-PER"), ("visited", "O"), ("Paris", "B-LOC")]] * 4
    files = ["--train-file", write("train", words), "--validation-file", write("validation", words[:4]),
             "--test-file", write("test", test)]  # fmt: skip
    argv = ["finetune", "--init", str(tiny_pretrained), "--task", "tagging", *map(str, files), *FAST]
    assert main([*argv, "--out", str(tmp_path / "refused"), "train.steps=2"]) == 2
    assert "task.unseen_tags=keep" in capsys.readouterr().err  # the refusal names the new mode
    run = tmp_path / "kept"
    assert main([*argv, "--out", str(run), "train.steps=2", "task.unseen_tags=keep"]) == 0
    assert "4 words of the validation and test splits have 1 tags the training split lacks" in (
        capsys.readouterr().err
    )
    config = json.loads((run / "best" / "config.json").read_text())
    assert sorted(config["id2label"].values()) == ["B-LOC", "B-PER", "I-LOC", "I-PER", "O"]
    parts = json.loads((run / "test_metrics.json").read_text())["breakdown"]
    assert parts["per_class"]["B-LOC"]["support"] == 4 and parts["count"] == 12
    with pytest.raises(WarmstartError, match="refuse, fallback or keep"):
        TaskConfig(unseen_tags="drop")


def test_frozen_strategy_trains_only_the_head(tiny_pretrained, rt_small, tmp_path, capsys):
    argv = ["finetune", "--init", str(tiny_pretrained), "--dataset", str(rt_small), "--strategy", "frozen"]
    assert main(argv + ["--out", str(tmp_path / "f"), "--epochs", "1", "task.max_length=48", *FAST]) == 0
    assert "strategy frozen: 66 of " in capsys.readouterr().err  # Linear(32, 2): 64 weights + 2 biases
