"""What the encoder families (bert, roberta, albert, electra: configs of warmstart's one encoder, arch bert)
share: BERT's layout, its masked-LM head, the config fields transformers has, and the export refusals."""

from __future__ import annotations

import dataclasses

from warmstart.hub.families.base import pairs, refuse
from warmstart.models import bert

BERT_HF_FIELDS = {
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "max_position_embeddings", "type_vocab_size", "hidden_act", "hidden_dropout_prob",
    "attention_probs_dropout_prob", "layer_norm_eps", "initializer_range",
}  # fmt: skip
ONLY_BERT = frozenset(f.name for f in dataclasses.fields(bert.BertConfig)) - BERT_HF_FIELDS
ENCODER_FLAGS = {"position_embedding_type": "absolute", "is_decoder": False, "add_cross_attention": False}


def bert_groups(c):
    keys = bert.HF_KEYS + (bert.HF_POOLER_KEYS if c.pooler else [])
    return [(keys, bert.HF_FUSED, c.num_hidden_layers)]


def factorized(c) -> bool:
    return c.embedding_size not in (None, c.hidden_size)


def mlm_head(dense: str, norm: str, bias: str) -> tuple:
    return (*pairs("head.dense", dense), *pairs("head.norm", norm), ("head.bias", bias))


def tied_head(decoder: str, bias: str, prefix: str) -> tuple:
    return (f"{decoder}.weight", f"{prefix}embeddings.word_embeddings.weight"), (f"{decoder}.bias", bias)


def encoder_out(cfg, name: str, allow=()) -> None:
    """Refuse what transformers' encoder ``name`` has no equivalent of (save the options in ``allow``)."""
    found = [
        k for k in ("pre_ln", "share_layers", "relative_attention") if getattr(cfg, k) and k not in allow
    ]
    found += ["embedding_size"] if factorized(cfg) and "embedding_size" not in allow else []
    found += [] if cfg.position_biased_input else ["position_biased_input=false"]
    refuse(bool(found), f"transformers' {name} has no equivalent of model.{', model.'.join(found)}",
           "export a plain BERT (post-LN, absolute positions, unshared layers)")  # fmt: skip
