"""Config: presets, YAML files, dotted overrides, type checks, unknown keys with close matches, help."""

import pytest

from warmstart import config as C
from warmstart import numbers as N
from warmstart.errors import WarmstartError
from warmstart.pretraining.config import PretrainConfig, resolve


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


def test_a_config_file_reads_numbers_as_people_write_them(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("train:\n  lr: 1e-4\n  weight_decay: 1E-2\n  eps: -1e+0\n  seed: 7\ntask:\n  name: 1e\n")
    data = C.load_yaml(f)
    assert data["train"] == {"lr": 1e-4, "weight_decay": 0.01, "eps": -1.0, "seed": 7}
    assert data["task"]["name"] == "1e"  # not a number: stays text


def test_help_lists_every_key_with_its_help():
    text = C.help_text(PretrainConfig)
    for key in C.all_keys(PretrainConfig):
        assert key in text
    assert "peak learning rate" in text
    assert all(h for _, _, _, h in C.field_help(PretrainConfig))  # no option without a description


def test_round_trip_through_dict():
    cfg = C.from_dict(PretrainConfig, {"train": {"steps": 5}, "data": {"corpus": ["news"]}})
    assert C.from_dict(PretrainConfig, C.to_dict(cfg)) == cfg


# ------------------------------------------------------------------ sizes, counts and seeds (issue 38)
@pytest.mark.parametrize(
    "override, needle",
    [
        ("model.hidden_size=-4", "model.hidden_size must be at least 1, got -4"),
        ("model.num_attention_heads=0", "model.num_attention_heads must be at least 1, got 0"),
        ("model.num_hidden_layers=100000", "model.num_hidden_layers must be at most 4096"),
        ("model.vocab_size=100000000", "model.vocab_size must be at most 16777216"),
        ("data.seq_len=0", "data.seq_len must be at least 1, got 0"),
        ("train.seed=-1", "train.seed must be 0 or more, got -1"),
        (f"train.seed={2**32}", "train.seed must be at most 4294967295"),
        (f"train.log_every={2**64}", "train.log_every must be at most 9223372036854775807"),
        ("model.hidden_dropout_prob=1.5", "'model.hidden_dropout_prob' is a fraction"),
    ],
)
def test_sizes_counts_and_seeds_are_checked_when_the_config_is_read(override, needle):
    with pytest.raises(WarmstartError) as caught:
        resolve(None, None, {}, [override])
    assert needle in str(caught.value)
    assert "fraction" in needle or caught.value.fix.startswith(f"use e.g. {override.split('=')[0]}=")


@pytest.mark.parametrize(
    "arch, override",
    [("gpt2", "model.n_layer=-1"), ("t5", "model.d_kv=0"), ("bart", "model.decoder_attention_heads=-3"),
     ("xlnet", "model.clamp_len=-2"), ("elmo", "model.cell_size=-5")],
)  # fmt: skip
def test_every_family_has_its_sizes_checked(arch, override):
    with pytest.raises(WarmstartError, match=override.split("=")[0] + " must be"):
        resolve(None, None, {"arch": arch}, [override])


def test_a_default_below_the_rule_stays_valid_and_nothing_below_it():
    """aux.batch_size 0 means train.batch_size, clamp_len -1 no clamping: those pass, one less does not."""
    from warmstart.commands.finetune import FinetuneConfig

    assert C.from_dict(FinetuneConfig, {"aux": {"batch_size": 0}}).aux.batch_size == 0
    with pytest.raises(WarmstartError, match="aux.batch_size must be 0 or more, got -1"):
        C.from_dict(FinetuneConfig, {"aux": {"batch_size": -1}})
    resolved, _ = resolve(None, None, {"arch": "xlnet"}, ["model.clamp_len=-1"])
    assert resolved["model"]["clamp_len"] == -1
    with pytest.raises(WarmstartError, match="each seed|seeds must be at most 4294967295"):
        C.from_dict(FinetuneConfig, {"seeds": [1, 2**40]})


def test_the_rule_of_a_key_comes_from_its_name():
    assert N.number_range("num_hidden_layers") == (1, 4096) and N.number_range("n_head") == (1, 4096)
    assert N.number_range("split_seed") == (0, 2**32 - 1) and N.number_range("seeds") == (0, 2**32 - 1)
    assert N.number_range("hidden_size") == (1, 2**24) and N.number_range("max_length") == (1, 2**24)
    assert N.number_range("batch_size", default=0) == (0, 2**24)
    assert N.number_range("max_tokens") == (0, 2**63 - 1) and N.number_range("clamp_len", -1)[0] == -1


def every_config_class():
    """The config classes the commands read with from_dict (every family's pretraining config)."""
    from warmstart.commands.finetune import FinetuneConfig
    from warmstart.commands.prompt import PromptConfig
    from warmstart.generation.decode import GenerationConfig
    from warmstart.pretraining.config import config_class
    from warmstart.registry import MODELS
    from warmstart.word2vec.run import Word2VecRunConfig

    pretrain = [config_class({"arch": arch}) for arch in MODELS]
    return [*pretrain, FinetuneConfig, GenerationConfig, PromptConfig, Word2VecRunConfig]


@pytest.mark.parametrize("cls", every_config_class(), ids=lambda c: c.__name__)
def test_every_default_passes_the_rules(cls):
    N.check_numbers(cls())


@pytest.mark.parametrize("name", C.preset_names())
def test_every_preset_passes_the_rules(name):
    resolve(name, None, {}, [])


def test_configs_built_directly_are_checked_too():
    """A server's request builds GenerationConfig without from_dict; an import builds a model config."""
    from warmstart.generation.decode import GenerationConfig
    from warmstart.models.bert import BertConfig

    with pytest.raises(WarmstartError, match="seed must be at most 4294967295"):
        GenerationConfig(strategy="sample", seed=2**70)
    with pytest.raises(WarmstartError, match="top_k must be at most"):
        GenerationConfig(strategy="sample", top_k=2**70)
    with pytest.raises(WarmstartError, match="num_hidden_layers must be a whole number, got 2.5"):
        N.check_numbers(BertConfig(num_hidden_layers=2.5))
    with pytest.raises(WarmstartError, match="model.intermediate_size must be at least 1"):
        N.check_numbers(BertConfig(intermediate_size=-1), "model.")
