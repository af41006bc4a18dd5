"""`warmstart pretrain`'s config, written out: ``PretrainConfig`` (BERT's model section) and one subclass
per family with that family's model section; ``resolve_pretrain_config`` turns a run's settings into one of
them, once, with its objective."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import NamedTuple

from warmstart import config as C
from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import resolve_checkpoint
from warmstart.checkpoints.workdir import resumed_paths
from warmstart.config import opt
from warmstart.data.corpus import DataConfig
from warmstart.errors import WarmstartError
from warmstart.models.bart import BartConfig
from warmstart.models.bert import BertConfig
from warmstart.models.elmo import ElmoConfig
from warmstart.models.gpt2 import GPT2Config
from warmstart.models.t5 import T5Config
from warmstart.models.xlnet import XLNetConfig
from warmstart.objectives.base import Objective
from warmstart.objectives.denoising import DenoisingConfig
from warmstart.objectives.mlm import MLMConfig
from warmstart.objectives.nsp_sop import NSPConfig
from warmstart.objectives.plm import PLMConfig
from warmstart.objectives.replaced_token import ElectraConfig
from warmstart.objectives.sift import SiftConfig
from warmstart.objectives.span_corruption import SpanCorruptionConfig
from warmstart.registry import DEFAULT_OBJECTIVE, MODELS, OBJECTIVES, lookup
from warmstart.train.loop import TrainConfig
from warmstart.train.resume import resumed_settings
from warmstart.word2vec.warm_start import EmbeddingInitConfig


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
ARCH_HELP = f"model family: {', '.join(MODELS)} (model.* keys are the family's)"
OBJECTIVE_HELP = _objective_help()
INIT_HELP = "continue from this run or checkpoint (DAPT/TAPT): its model shape, tokenizer and weights"


@dataclass
class PretrainConfig:
    """`warmstart pretrain`'s settings: the run's own keys, the model section (BERT's; each other family's
    class below has its own), every objective's sections (an objective reads those it declares in
    ``sections``), SiFT's regulariser, the word2vec warm start, the data and the training loop."""

    out: str = opt("runs/pretrain", OUT_HELP)
    arch: str = opt("bert", ARCH_HELP)
    objective: str | None = opt(None, OBJECTIVE_HELP)
    init: str | None = opt(None, INIT_HELP)
    model: BertConfig = field(default_factory=BertConfig)
    mlm: MLMConfig = field(default_factory=MLMConfig)  # mlm, mlm+nsp, mlm+sop, electra
    nsp: NSPConfig = field(default_factory=NSPConfig)  # mlm+nsp, mlm+sop
    electra: ElectraConfig = field(default_factory=ElectraConfig)
    span_corruption: SpanCorruptionConfig = field(default_factory=SpanCorruptionConfig)
    denoising: DenoisingConfig = field(default_factory=DenoisingConfig)
    plm: PLMConfig = field(default_factory=PLMConfig)
    sift: SiftConfig = field(default_factory=SiftConfig)  # objectives/sift.py: with mlm
    embeddings: EmbeddingInitConfig = field(default_factory=EmbeddingInitConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)


@dataclass
class GPT2PretrainConfig(PretrainConfig):
    """PretrainConfig of a GPT-2 model (``arch=gpt2``)."""

    arch: str = opt("gpt2", ARCH_HELP)
    model: GPT2Config = field(default_factory=GPT2Config)


@dataclass
class T5PretrainConfig(PretrainConfig):
    """PretrainConfig of a T5 model (``arch=t5``)."""

    arch: str = opt("t5", ARCH_HELP)
    model: T5Config = field(default_factory=T5Config)


@dataclass
class BartPretrainConfig(PretrainConfig):
    """PretrainConfig of a BART model (``arch=bart``)."""

    arch: str = opt("bart", ARCH_HELP)
    model: BartConfig = field(default_factory=BartConfig)


@dataclass
class ElmoPretrainConfig(PretrainConfig):
    """PretrainConfig of an ELMo biLSTM (``arch=elmo``)."""

    arch: str = opt("elmo", ARCH_HELP)
    model: ElmoConfig = field(default_factory=ElmoConfig)


@dataclass
class XLNetPretrainConfig(PretrainConfig):
    """PretrainConfig of an XLNet model (``arch=xlnet``)."""

    arch: str = opt("xlnet", ARCH_HELP)
    model: XLNetConfig = field(default_factory=XLNetConfig)


CONFIGS: dict[str, type[PretrainConfig]] = {  # one per registry.MODELS family
    "bert": PretrainConfig,
    "gpt2": GPT2PretrainConfig,
    "t5": T5PretrainConfig,
    "bart": BartPretrainConfig,
    "elmo": ElmoPretrainConfig,
    "xlnet": XLNetPretrainConfig,
}


class Resolved(NamedTuple):
    """A run's pretraining config, resolved once."""

    config: PretrainConfig  # its objective named (the family's default when none was given)
    explicit: dict  # the keys the user gave (a resumed run: its saved config with the new flags)
    objective: type[Objective]  # the objective's class (registry.OBJECTIVES)


def resolve_pretrain_config(
    preset: str | None = None,
    config_file: str | None = None,
    flags: dict | None = None,
    overrides=(),
    resume: str | None = None,
) -> Resolved:
    """defaults < preset < config file < flags < overrides, or a resumed run's saved config < flags <
    overrides (flags that would change the run refused: train/resume.py), read into the family's class."""
    if resume:
        explicit = resumed_settings(resume, flags, overrides, lambda e: C.from_dict(config_class(e), e))
        explicit = resumed_paths(resume, explicit)  # relative paths: from where the run started
    else:
        explicit = C.layered(preset=preset, config_file=config_file, flags=flags, overrides=list(overrides))
        explicit["arch"] = family(explicit)
    cfg = C.from_dict(config_class(explicit), explicit)  # validates keys and types
    name, objective = objective_of(cfg)
    return Resolved(dataclasses.replace(cfg, objective=name), explicit, objective)


def resolve(
    preset: str | None, config_file: str | None, flags: dict, overrides: list[str]
) -> tuple[dict, dict]:
    """``resolve_pretrain_config``'s config as a dict (config.yaml's form), and the keys given."""
    cfg, explicit, _ = resolve_pretrain_config(preset, config_file, flags, overrides)
    return C.to_dict(cfg), explicit


def family(explicit: dict) -> str:
    """The model family: ``arch`` as given, else the family of the ``init`` checkpoint, else bert."""
    arch = explicit.get("arch")
    if not arch and explicit.get("init"):
        config_json = json.loads((resolve_checkpoint(explicit["init"]) / "config.json").read_text())
        arch = RunCard.read(config_json).arch
    return str(arch or "bert")


def config_class(explicit: dict) -> type[PretrainConfig]:
    """The config class of the family ``explicit["arch"]`` (PretrainConfig, BERT's, by default)."""
    return lookup(CONFIGS, "model", str(explicit.get("arch") or "bert"))


def objective_of(cfg: PretrainConfig) -> tuple[str, type[Objective]]:
    """(name, class) of the objective asked for, or of the family's default; one that cannot train
    ``cfg.arch`` is an error."""
    name = cfg.objective or DEFAULT_OBJECTIVE.get(cfg.arch, "mlm")
    unit_cls = lookup(OBJECTIVES, "objective", name)
    archs = unit_cls.families
    if cfg.arch not in archs:
        fits = sorted(k for k, v in OBJECTIVES.items() if cfg.arch in v.families)
        raise WarmstartError(
            f"objective {name} does not train a {cfg.arch} model (it trains {', '.join(archs)})",
            f"for arch {cfg.arch} use --objective {' or '.join(fits)}",
        )
    return name, unit_cls


def family_help() -> str:
    """The model.* keys of the other families, for `--help` (the list above shows BERT's)."""
    lines = []
    for arch, (config_cls, _) in MODELS.items():
        if config_cls is not BertConfig:
            keys = ", ".join(f.name for f in dataclasses.fields(config_cls))
            lines.append(f"  arch={arch}: model.{{{keys}}}")
    return "\n\nmodel keys of the other families (model.* above are bert's):\n" + "\n".join(lines)
