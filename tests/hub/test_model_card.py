"""Issue 37, part 5: the README.md `warmstart export` writes is a Hugging Face hub card. Its front matter
reads back through huggingface_hub (ModelCard, model_index_to_eval_results) with the run's test metrics; the
card names no path of the machine that wrote it; it is short, with the config collapsed; and its code runs as
written beside the export. Runs: a tiny finetune of the session's tiny pretrained BERT on real text."""

import json
import os
import re

import pytest
import yaml

from tests.helpers.hub import finetune_run
from warmstart.hub.card_names import public
from warmstart.hub.convert import export_hf

pytestmark = pytest.mark.integration

hub = pytest.importorskip("huggingface_hub")
from huggingface_hub import ModelCard  # noqa: E402
from huggingface_hub.repocard_data import model_index_to_eval_results  # noqa: E402


@pytest.fixture(scope="module")
def run(tiny_pretrained, rt_small, tmp_path_factory):
    """One epoch on 64 real rotten-tomatoes snippets (a local CSV) from the tiny pretrained BERT."""
    return finetune_run(tiny_pretrained, rt_small, tmp_path_factory.mktemp("card") / "rt-run")


@pytest.fixture(scope="module")
def exported(run, tmp_path_factory):
    return export_hf(run, tmp_path_factory.mktemp("card-out") / "rt-hf")


def front(card_text: str) -> dict:
    return yaml.safe_load(card_text.split("---\n", 2)[1])


def test_the_front_matter_reads_back_as_a_hub_card_with_the_test_metrics(run, exported):
    card = ModelCard.load(exported / "README.md")  # a local file: parsed, no network
    data = card.data.to_dict()
    test = json.loads((run / "test_metrics.json").read_text())["test"]
    assert data["library_name"] == "transformers" and data["pipeline_tag"] == "text-classification"
    assert {"warmstart", "bert", "classification"} <= set(data["tags"])
    assert data["datasets"] == ["rt.csv"]  # a local file: by its name only
    assert data["metrics"] == list(test)
    assert "base_model" not in data and "license" not in data  # pretrained from scratch: neither is known
    assert "language" not in data  # the run does not record one
    name, results = model_index_to_eval_results(data["model-index"])
    assert name == "rt-hf" and len(results) == len(test)
    for r in results:
        assert r.task_type == "text-classification" and r.dataset_type == r.dataset_name == "rt.csv"
        assert r.dataset_split == "test" and r.metric_value == test[r.metric_type]
    assert card.data.eval_results is not None  # ModelCardData accepted the model-index as well


def test_the_card_names_no_path_of_this_machine(run, exported, rt_small, tmp_path_factory):
    text = (exported / "README.md").read_text()
    for place in (tmp_path_factory.getbasetemp(), os.environ["HOME"], os.environ["WARMSTART_CACHE"],
                  rt_small.parent, run.parent):  # fmt: skip
        assert str(place) not in text
    assert not re.search(r"(^|[\s`'\"(])/(tmp|home|root|work|usr|var)/", text, re.M)
    assert "`rt-run/best`" in text and "| init | `run` |" in text  # runs by name


def test_the_card_is_short_and_holds_the_whole_config_collapsed(run, exported):
    text = (exported / "README.md").read_text()
    body, details = text.split("<details>")
    human = body.split("---\n", 2)[2]  # after the front matter
    assert len(human.splitlines()) <= 65 and details.rstrip().endswith("</details>")
    shown = yaml.safe_load(details.split("```yaml\n")[1].split("```")[0])
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert shown == public(config) and shown != config
    assert shown["out"] == "rt-run" and shown["init"] == "run" and shown["data"]["dataset"] == "rt.csv"
    assert shown["train"] == config["train"]  # every setting is there, only paths are renamed


def test_the_card_says_how_it_was_trained_and_what_it_scored(run, exported):
    text = (exported / "README.md").read_text()
    metrics = json.loads((run / "test_metrics.json").read_text())
    sizes = metrics["sizes"]
    counts = f"{sizes['train']} train, {sizes['validation']} validation, {sizes['test']} test"
    rows = [f"| data | `rt.csv` ({counts} examples) |",
            "| learning rate | 0.003 |", "| batch size | 16 |", "| seeds | 0 |",
            f"| epochs, steps | 1.0, {metrics['steps']} |", "| strategy | full |",
            f"| accuracy | {metrics['test']['accuracy']:.4f} |", "0 = `fresh`, 1 = `rotten`",
            "task.pooling=cls"]  # fmt: skip
    for row in rows:
        assert row in text


def test_the_cards_code_runs_as_written_beside_the_export(exported, monkeypatch):
    """Both snippets (transformers' pipeline, warmstart.load) name the export by its directory name."""
    blocks = re.findall(r"```python\n(.*?)```", (exported / "README.md").read_text(), re.S)
    assert len(blocks) == 2 and "pipeline('text-classification'" in blocks[0]
    assert "warmstart.load('rt-hf')" in blocks[1]
    monkeypatch.chdir(exported.parent)
    for block in blocks:
        scope: dict = {}
        exec(compile(block, "README.md", "exec"), scope)
        assert scope["model"] is not None
    assert json.loads((exported / "config.json").read_text())["id2label"]  # the export itself, untouched


def test_a_pretrained_models_card(tiny_pretrained, tmp_path):
    out = export_hf(tiny_pretrained, tmp_path / "mlm-hf")
    text = (out / "README.md").read_text()
    data = front(text)
    assert data["pipeline_tag"] == "fill-mask" and data["tags"] == ["warmstart", "bert", "mlm"]
    assert "model-index" not in data and "metrics" not in data  # no test split: nothing to index
    assert "token shards `wiki`" in text and "| objective | mlm |" in text
    assert str(tiny_pretrained.parent) not in text and str(tmp_path) not in text
    assert "model.fill_mask(" in text and "pipeline('fill-mask'" in text
