"""Config: presets, YAML files, dotted overrides, type checks, unknown keys with close matches, help."""

import pytest

from warmstart import config as C
from warmstart.checkpoints.build import PretrainConfig, resolve
from warmstart.errors import WarmstartError


def test_precedence_preset_file_flags_overrides(tmp_path):
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("train: {lr: 0.01, steps: 7}\nmodel: {num_hidden_layers: 3}\n")
    resolved, explicit = resolve("bert-mini", str(cfg_file), {"train": {"steps": 9}}, ["train.lr=2e-4"])
    assert resolved["model"]["hidden_size"] == 256  # preset
    assert resolved["model"]["num_hidden_layers"] == 3  # file beats preset
    assert resolved["train"]["steps"] == 9  # flag beats file
    assert resolved["train"]["lr"] == pytest.approx(2e-4)  # override beats all ("2e-4" is read as a number)
    assert resolved["train"]["schedule"] == "linear"  # dataclass default
    assert "schedule" not in explicit["train"]


def test_unknown_key_names_close_valid_keys():
    with pytest.raises(WarmstartError) as e:
        resolve(None, None, {}, ["train.learning_rate=1e-3"])
    assert "unknown config key 'train.learning_rate'" in str(e.value)
    with pytest.raises(WarmstartError) as e:
        resolve(None, None, {}, ["train.stpes=3"])
    assert "train.steps" in str(e.value)
    with pytest.raises(WarmstartError) as e:
        resolve(None, None, {}, ["seq_len=3"])
    assert "data.seq_len" in str(e.value)


def test_types_are_checked_and_coerced():
    with pytest.raises(WarmstartError, match="train.steps.*expects int"):
        resolve(None, None, {}, ["train.steps=abc"])
    resolved, _ = resolve(None, None, {}, ["train.lr=1", "data.corpus=wiki-leads,news", "train.bf16=true"])
    assert resolved["train"]["lr"] == 1.0 and isinstance(resolved["train"]["lr"], float)
    assert resolved["data"]["corpus"] == ["wiki-leads", "news"]
    assert resolved["train"]["bf16"] is True


def test_unknown_preset_suggests_close_names():
    with pytest.raises(WarmstartError, match="did you mean bert-mini"):
        C.load_preset("bert-mni")


def test_bad_yaml_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("train: {lr: [1, 2\n")
    with pytest.raises(WarmstartError, match="not valid YAML at line"):
        C.load_yaml(bad)
    with pytest.raises(WarmstartError, match="no such config file"):
        C.load_yaml(tmp_path / "missing.yaml")


def test_help_lists_every_key_with_its_help():
    text = C.help_text(PretrainConfig)
    for key in C.all_keys(PretrainConfig):
        assert key in text
    assert "peak learning rate" in text
    assert all(h for _, _, _, h in C.field_help(PretrainConfig))  # no option without a description


def test_round_trip_through_dict():
    cfg = C.from_dict(PretrainConfig, {"train": {"steps": 5}, "data": {"corpus": ["news"]}})
    assert C.from_dict(PretrainConfig, C.to_dict(cfg)) == cfg
