"""What a pretraining unit is built from: the resolved config (preset, file, flags), the family's model
config, the objective, and config.json's model block."""

from __future__ import annotations

import dataclasses
import functools

from warmstart import config as C
from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import backbone, resolve_checkpoint
from warmstart.config import opt
from warmstart.data.corpus import DataConfig
from warmstart.errors import WarmstartError
from warmstart.models.bert import BertConfig
from warmstart.nn.sizing import build_within_memory
from warmstart.objectives.sift import SiftConfig, attach
from warmstart.registry import DEFAULT_OBJECTIVE, MODELS, OBJECTIVES, lookup
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.loop import TrainConfig
from warmstart.word2vec.warm_start import EmbeddingInitConfig

MAX_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_length")


def _objective_sections() -> list[tuple[str, type, dataclasses.Field]]:
    """Every objective's config sections (objectives/base.py), in registry order, each once."""
    found: dict[str, type] = {}
    for unit_cls in OBJECTIVES.values():
        for name, section in unit_cls.sections.items():
            if found.setdefault(name, section) is not section:
                raise TypeError(f"two objectives declare section {name} with different types")
    return [(n, t, dataclasses.field(default_factory=t)) for n, t in found.items()]


def _objective_help() -> str:
    """Each family's objectives, from the registry (its own objective first), so the help cannot go stale."""
    by_family = {
        f: [
            DEFAULT_OBJECTIVE[f],
            *(n for n, u in OBJECTIVES.items() if f in u.families and n != DEFAULT_OBJECTIVE[f]),
        ]
        for f in MODELS
    }
    listed = "; ".join(f"{f}: {', '.join(names)}" for f, names in by_family.items())
    return f"pretraining objective (default: the family's first): {listed}"


OUT_HELP = "run directory (refused if it exists, unless --resume or --overwrite)"
INIT_HELP = "continue from this run or checkpoint (DAPT/TAPT): its model shape, tokenizer and weights"

# The pretraining config: the run's own keys, the family's model section (BERT's here; see _family_config),
# each registered objective's sections (so a new objective adds its keys by being registered), SiFT's
# perturbation regulariser (objectives/sift.py: mlm), the word2vec warm start, the data and the training loop.
PretrainConfig = dataclasses.make_dataclass(
    "PretrainConfig",
    [
        (
            "out",
            str,
            opt("runs/pretrain", "run directory (refused if it exists, unless --resume or --overwrite)"),
        ),
        ("arch", str, opt("bert", f"model family: {', '.join(MODELS)} (model.* keys are the family's)")),
        ("objective", str | None, opt(None, _objective_help())),
        (
            "init",
            str | None,
            opt(
                None,
                "continue from this run or checkpoint (DAPT/TAPT): its model shape, tokenizer and weights",
            ),
        ),
        ("model", BertConfig, dataclasses.field(default_factory=BertConfig)),
        *_objective_sections(),
        ("sift", SiftConfig, dataclasses.field(default_factory=SiftConfig)),
        ("embeddings", EmbeddingInitConfig, dataclasses.field(default_factory=EmbeddingInitConfig)),
        ("data", DataConfig, dataclasses.field(default_factory=DataConfig)),
        ("train", TrainConfig, dataclasses.field(default_factory=TrainConfig)),
    ],
)
PretrainConfig.__module__ = __name__


def resolve(
    preset: str | None, config_file: str | None, flags: dict, overrides: list[str]
) -> tuple[dict, dict]:
    """Merge defaults < preset < config file < flags < overrides; returns (resolved dict, explicit dict)."""
    explicit = C.layered(preset=preset, config_file=config_file, flags=flags, overrides=overrides)
    explicit["arch"] = family(explicit)
    cfg = C.from_dict(config_class(explicit), explicit)  # validates keys and types
    return C.to_dict(cfg), explicit


@functools.cache
def _family_config(arch: str) -> type:
    config_cls, _ = lookup(MODELS, "model", arch)
    if config_cls is BertConfig:
        return PretrainConfig
    field = dataclasses.field(default_factory=config_cls)
    return dataclasses.make_dataclass(
        f"PretrainConfig_{arch}", [("model", config_cls, field)], bases=(PretrainConfig,)
    )


def family_help() -> str:
    """The model.* keys of the other families, for `--help` (the list above shows BERT's)."""
    lines = []
    for arch, (config_cls, _) in MODELS.items():
        if config_cls is not BertConfig:
            keys = ", ".join(f.name for f in dataclasses.fields(config_cls))
            lines.append(f"  arch={arch}: model.{{{keys}}}")
    return "\n\nmodel keys of the other families (model.* above are bert's):\n" + "\n".join(lines)


def family(explicit: dict) -> str:
    """The model family: ``arch`` as given, else the family of the ``init`` checkpoint, else bert."""
    arch = explicit.get("arch")
    if not arch and explicit.get("init"):
        import json

        config_json = json.loads((resolve_checkpoint(explicit["init"]) / "config.json").read_text())
        arch = RunCard.read(config_json).arch
    return str(arch or "bert")


def config_class(explicit: dict) -> type:
    """PretrainConfig with the ``model`` section of the family ``explicit["arch"]`` (BERT's by default)."""
    return _family_config(str(explicit.get("arch") or "bert"))


def objective_name(cfg: PretrainConfig) -> str:
    """The objective asked for, or the family's default; one that cannot train ``arch`` is an error."""
    name = cfg.objective or DEFAULT_OBJECTIVE.get(cfg.arch, "mlm")
    unit_cls = lookup(OBJECTIVES, "objective", name)
    archs = unit_cls.families
    if cfg.arch not in archs:
        fits = sorted(k for k, v in OBJECTIVES.items() if cfg.arch in v.families)
        raise WarmstartError(
            f"objective {name} does not train a {cfg.arch} model (it trains {', '.join(archs)})",
            f"for arch {cfg.arch} use --objective {' or '.join(fits)}",
        )
    return name


def model_config_json(cfg: PretrainConfig, tokenizer: Tokenizer) -> dict:
    """config.json: Hugging Face field names plus a warmstart block that says how to rebuild the unit."""
    unit_cls = lookup(OBJECTIVES, "objective", cfg.objective)
    start = unit_cls.decoder_start_id
    extra = {"decoder_start_token_id": start(tokenizer)} if start else {}
    shapes = unit_cls.recorded(cfg)
    card = RunCard(arch=cfg.arch, objective=cfg.objective, tokenizer=tokenizer.fingerprint(), sections=shapes)
    return card.write(
        {
            "model_type": cfg.arch,
            "architectures": [unit_cls.hf_architecture],
            **dataclasses.asdict(cfg.model),
            "pad_token_id": tokenizer.pad_id,
            "bos_token_id": tokenizer.bos_id,
            "eos_token_id": tokenizer.eos_id,
            **extra,
        }
    )


def build_unit(cfg: PretrainConfig, tokenizer: Tokenizer):
    _, model_cls = lookup(MODELS, "model", cfg.arch)
    unit_cls = lookup(OBJECTIVES, "objective", cfg.objective)
    import torch

    def build():  # seeded here: the real build draws the same weights whatever the sizing check did
        torch.manual_seed(cfg.train.seed)
        return unit_cls(model_cls(cfg.model), *sections(cfg, unit_cls))

    fix = (
        "lower the model's sizes (model.hidden_size, model.num_hidden_layers, ...; vocab_size: the tokenizer)"
    )
    unit = build_within_memory(build, "the run's model settings", fix)
    attach(unit, cfg.sift)  # sift.weight > 0: the unit adds SiFT's penalty while training
    bind = getattr(backbone(unit), "bind", None)
    if bind is not None:  # a model that reads its tokenizer's words (ELMo's characters)
        bind(tokenizer)
    return unit


def sections(cfg: PretrainConfig, unit_cls) -> list:
    """The config sections an objective reads (e.g. mlm, or mlm and electra)."""
    return [getattr(cfg, name) for name in unit_cls.sections]


def init_std(model_cfg) -> float:
    """The std of a family's normal initialisation (T5 scales embeddings by its factor instead)."""
    for key in ("initializer_range", "init_std"):
        if hasattr(model_cfg, key):
            return getattr(model_cfg, key)
    return model_cfg.initializer_factor
