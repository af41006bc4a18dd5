"""The transformers families `warmstart import` / `warmstart export` convert, one module each (its layout,
its config fixes, its task heads where they differ from BERT's), found through ``FAMILIES``.

roberta, albert and electra are configs of warmstart's one encoder (arch bert). ``VARIANTS`` are a family's
other pretraining classes: BertForPreTraining (mlm+nsp), AlbertForPreTraining (mlm+sop) and ELECTRA's
generator, ElectraForMaskedLM (mlm).
"""

from __future__ import annotations

from warmstart.errors import WarmstartError
from warmstart.hub.families import albert, bart, bert, electra, gpt2, roberta, t5, xlnet
from warmstart.hub.families.base import Family
from warmstart.registry import MODELS

MODULES = {"bert": bert, "roberta": roberta, "albert": albert, "electra": electra, "gpt2": gpt2, "t5": t5,
           "bart": bart, "xlnet": xlnet}  # fmt: skip
FAMILIES = {name: module.FAMILY for name, module in MODULES.items()}
SUPPORTED = tuple(FAMILIES)
# the other pretraining classes of a family, by the warmstart objective they hold: import picks one by the
# class config.json names (or, naming none, by its heads), export by the run's objective
VARIANTS = {(name, obj): fam for name, module in MODULES.items() for obj, fam in module.VARIANTS.items()}


def pretraining_class(name: str, objective: str | None = None, hf: dict | None = None, state=()) -> Family:
    """The family of model type ``name`` for a warmstart ``objective`` (export), or for the transformers
    class of config.json ``hf`` and its tensors ``state`` (import)."""
    names = (hf or {}).get("architectures") or []
    for (n, obj), fam in VARIANTS.items():
        heads = all(theirs in state for _, theirs in fam.heads)
        if n == name and (obj == objective or fam.hf_class in names or hf and not names and heads):
            return fam
    return FAMILIES[name]


def family(arch, where) -> Family:
    arch = arch if isinstance(arch, str) else repr(arch)  # a list or a number in config.json: said as such
    if arch in MODELS and arch not in FAMILIES:  # a warmstart family transformers lacks (ELMo)
        raise WarmstartError(
            f"{where} holds a warmstart {arch} model, and transformers has no {arch} class to export to",
            f"use its features instead: `warmstart embed {where} --data TEXTS --out FEATURES.npy`",
        )
    if arch not in FAMILIES:
        raise WarmstartError(
            f"{where} holds a model_type '{arch}' model, which warmstart cannot convert",
            f"supported model types: {', '.join(SUPPORTED)}",
        )
    return FAMILIES[arch]
