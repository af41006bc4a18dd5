"""RoBERTa: an encoder of ``type_vocab_size`` 1 whose position table transformers offsets by
``pad_token_id + 1`` (2) rows (import drops them, export puts zero rows in front); its classification head
is the pooler (``classifier.dense``) and ``classifier.out_proj``."""

from __future__ import annotations

from warmstart.hub.families.base import Family, odd, refuse
from warmstart.hub.families.encoder import (
    ENCODER_FLAGS,
    ONLY_BERT,
    bert_groups,
    encoder_out,
    mlm_head,
    tied_head,
)


def _import_fix(hf: dict, kw: dict, state: dict) -> None:
    odd(hf, {**ENCODER_FLAGS, "hidden_act": "gelu"}, "a RoBERTa")  # its LM head runs gelu in any case
    kw["max_position_embeddings"] = hf.get("max_position_embeddings", 514) - (hf["pad_token_id"] + 1)
    kw["pooler"] = "roberta.pooler.dense.weight" in state


def _export_fix(cfg, out: dict) -> None:
    encoder_out(cfg, "RoBERTa")
    refuse(cfg.hidden_act != "gelu", f"transformers' RoBERTa LM head runs gelu, the model {cfg.hidden_act}")
    out["max_position_embeddings"] = cfg.max_position_embeddings + out["pad_token_id"] + 1


FAMILY = Family(
    "mlm", "roberta.", "encoder.", "RobertaForMaskedLM", bert_groups, "hidden_act",
    heads=mlm_head("lm_head.dense", "lm_head.layer_norm", "lm_head.bias"),
    tied=tied_head("lm_head.decoder", "lm_head.bias", "roberta."), only_ours=ONLY_BERT, position_offset=2,
    import_fix=_import_fix, export_fix=_export_fix,
    task_heads={
        "classification": (("encoder.pooler", "classifier.dense"), ("classifier", "classifier.out_proj")),
    },
    pooler_in_base=True,  # its classifier.dense is the base model's pooler
)  # fmt: skip
VARIANTS: dict = {}
