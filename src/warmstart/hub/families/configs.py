"""config.json between transformers and warmstart: the same field names (options without an equivalent are
refused), then each family's own fixes (``Family.import_fix``, ``Family.export_fix``)."""

from __future__ import annotations

import dataclasses

from warmstart.hub.config_checks import located
from warmstart.hub.families import FAMILIES
from warmstart.hub.families.base import ACT_ALIASES, TOKEN_IDS, refuse
from warmstart.nn.mlp import ACTIVATIONS
from warmstart.numbers import check_numbers
from warmstart.registry import MODELS


def _activation(name: str) -> str:
    name = ACT_ALIASES.get(name, name)
    refuse(name not in ACTIVATIONS, f"activation '{name}' has no warmstart equivalent",
           f"warmstart's models run {', '.join(sorted(ACTIVATIONS))}")  # fmt: skip
    return name


def given_fields(arch: str, hf: dict) -> tuple[type, dict]:
    """(warmstart config class, the fields of it that config.json ``hf`` sets)."""
    fam = FAMILIES[arch]
    config_cls, _ = MODELS[fam.arch]
    names = {f.name for f in dataclasses.fields(config_cls)} - fam.only_ours
    return config_cls, {k: hf[k] for k in names if k in hf}


def config_from_hf(arch: str, hf: dict, state: dict, where: str = "config.json"):
    """The warmstart model config of an HF config.json (``where``). ``state`` (canonical HF names) says what
    the config does not: whether BERT has a pooler, T5 v1.1's head (it may be added to ``state``)."""
    fam = FAMILIES[arch]
    config_cls, kw = given_fields(arch, hf)
    if fam.act in kw:
        kw[fam.act] = _activation(kw[fam.act])
    fam.import_fix(hf, kw, state)
    with located(where):
        cfg = config_cls(**kw)
        check_numbers(cfg)  # what the fixes computed too (RoBERTa's positions less its offset)
    return cfg


def config_to_hf(arch: str, cfg, run_config: dict, hf_class: str) -> dict:
    """transformers' config.json of a warmstart model config (token ids from the run's config.json)."""
    out = {"model_type": arch, "architectures": [hf_class], "tie_word_embeddings": True}
    out.update({k: v for k, v in dataclasses.asdict(cfg).items() if k not in FAMILIES[arch].only_ours})
    out.update({k: run_config[k] for k in TOKEN_IDS if k in run_config})
    FAMILIES[arch].export_fix(cfg, out)
    return out
