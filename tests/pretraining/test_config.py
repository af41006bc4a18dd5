"""The written-out pretraining config keeps up with the registry: every family has its class, every
objective's sections are fields, and a run's config is resolved once with its objective."""

import dataclasses
import typing

import pytest

import warmstart
from warmstart.errors import WarmstartError
from warmstart.models.gpt2 import GPT2Config
from warmstart.pretraining.config import (
    CONFIGS,
    GPT2PretrainConfig,
    PretrainConfig,
    config_class,
    resolve_pretrain_config,
)
from warmstart.registry import MODELS, OBJECTIVES


@pytest.mark.parametrize("arch", list(MODELS))
def test_every_family_has_its_config_class(arch):
    cls = config_class({"arch": arch})
    assert issubclass(cls, PretrainConfig) and cls().arch == arch
    assert typing.get_type_hints(cls)["model"] is MODELS[arch][0]
    assert [f.name for f in dataclasses.fields(cls)] == [f.name for f in dataclasses.fields(PretrainConfig)]
    assert set(CONFIGS) == set(MODELS)


@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_every_objective_section_is_a_field(name):
    hints = typing.get_type_hints(PretrainConfig)
    for section, section_cls in OBJECTIVES[name].sections.items():
        assert hints.get(section) is section_cls, f"PretrainConfig.{section} should be {section_cls.__name__}"


def test_a_run_is_resolved_once_with_its_objective():
    cfg, explicit, objective = resolve_pretrain_config(None, None, {"arch": "gpt2"}, ["model.n_layer=2"])
    assert type(cfg).__name__ == "GPT2PretrainConfig" and cfg.model.n_layer == 2
    assert cfg.objective == "clm" and objective is OBJECTIVES["clm"]
    assert explicit == {"arch": "gpt2", "model": {"n_layer": 2}}
    with pytest.raises(WarmstartError, match="objective clm does not train a bert model"):
        resolve_pretrain_config(flags={"objective": "clm"})


def test_a_family_class_given_to_the_api_keeps_its_arch(tmp_path):
    """GPT2PretrainConfig's arch is its default, which given() leaves out: the API still reads it as gpt2
    (its model keys are known) and stops at the first missing input."""
    with pytest.raises(WarmstartError, match="no tokenizer given"):
        warmstart.pretrain(config=GPT2PretrainConfig(model=GPT2Config(n_layer=2)), out=tmp_path / "run")
