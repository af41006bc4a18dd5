"""What a transformers family is to `warmstart import` / `warmstart export` (``Family``), and the names every
family shares: the token ids config.json carries, the heads of other classes an import drops, the buffers
transformers may save."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from warmstart.errors import WarmstartError

TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
# heads of other transformers classes: never part of the base model, dropped on import with a warning
DROPPED = ("cls.seq_relationship.", "classifier.", "qa_outputs.", "score.", "classification_head.",
           "sop_classifier.", "generator_predictions.", "generator_lm_head.",
           "sequence_summary.")  # fmt: skip
TOP_LEVEL = ("cls.", "lm_head.", "final_logits_bias", "predictions.", "discriminator_predictions.", *DROPPED)
BUFFERS = re.compile(  # saved by some transformers versions, recomputed by every model
    r"(\w+\.)?embeddings\.(position_ids|token_type_ids)|transformer\.h\.\d+\.attn\.(masked_)?bias"
    r"|model\.(en|de)coder\.version|decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight"
)
ACT_ALIASES = {"swish": "silu", "gelu_pytorch_tanh": "gelu_new"}
POSITIONS = "embeddings.position_embeddings.weight"
SUMMARY = {"summary_type": "first", "summary_use_proj": True, "summary_activation": "tanh"}  # = the pooler


def _no_fix(*_) -> None:
    """A family whose config.json needs no fix beyond the shared field names."""


@dataclass(frozen=True)
class Family:
    objective: str  # the warmstart pretraining unit an import builds
    prefix: str  # the base model's prefix inside the transformers LM class
    unit: str  # the model's prefix inside the warmstart unit
    hf_class: str
    groups: Callable  # model config -> [(keys, fused, layers)], see warmstart.models.keymap
    act: str | None = None  # the activation field
    heads: tuple = ()  # (unit name, full HF name) outside the base model
    tied: tuple = ()  # (HF duplicate, the HF tensor it equals): dropped on import
    transposed: tuple = ()
    only_ours: frozenset = frozenset()  # config fields transformers does not have
    arch: str = "bert"  # the warmstart model
    position_offset: int = 0  # rows in front of transformers' position table (RoBERTa: pad_token_id + 1)
    fresh: tuple = ()  # unit names no transformers checkpoint of this class holds (ELECTRA's generator)
    identity: str = ""  # a projection transformers always has, written as the identity when ours has none
    import_fix: Callable = _no_fix  # (config.json, warmstart fields, HF tensors): what the names do not say
    export_fix: Callable = _no_fix  # (warmstart model config, config.json fields): the other way
    # task heads (hub/heads.py), where the family's differ from BERT's (the Task's own hf_head):
    task_heads: dict = field(default_factory=dict)  # task -> (unit prefix, HF prefix) pairs
    head_config: dict = field(default_factory=dict)  # task -> config.json fields of its head
    task_classes: dict = field(default_factory=dict)  # task -> its class suffix (ForQuestionAnsweringSimple)
    no_export: dict = field(default_factory=dict)  # (task, task.pooling) -> (why, what to do)
    cls_heads: dict = field(default_factory=dict)  # task -> its head on [CLS] (hub/pooling.py: the default)
    has_head: Callable | None = None  # (task, config.json) -> whether warmstart has that head (None: all)
    pooler_in_base: bool = False  # its task head's dense layer is the base model's pooler (RoBERTa)


def refuse(bad: bool, what: str, fix: str = "warmstart's model has no such option") -> None:
    """Raise WarmstartError(what, fix) when ``bad``."""
    if bad:
        raise WarmstartError(what, fix)


def pairs(ours: str, theirs: str) -> list:
    """The (weight, bias) name pairs of one linear or norm layer."""
    return [(f"{ours}.{p}", f"{theirs}.{p}") for p in ("weight", "bias")]


def odd(hf: dict, flags, what: str) -> None:
    """Refuse a config that sets any of ``flags`` (name -> the value warmstart's model needs)."""
    found = [f"{k}={hf[k]}" for k, want in flags.items() if k in hf and hf[k] is not None and hf[k] != want]
    refuse(bool(found), f"{what} with {', '.join(found)} cannot be imported")
