"""BERT: BertForMaskedLM (mlm) and BertForPreTraining (mlm+nsp); the task heads are the Tasks' own."""

from __future__ import annotations

import dataclasses

from warmstart.hub.families.base import Family, odd, pairs
from warmstart.hub.families.encoder import (
    ENCODER_FLAGS,
    ONLY_BERT,
    bert_groups,
    encoder_out,
    mlm_head,
    tied_head,
)


def _import_fix(hf: dict, kw: dict, state: dict) -> None:
    odd(hf, ENCODER_FLAGS, "a BERT")
    kw["pooler"] = "bert.pooler.dense.weight" in state


def _export_fix(cfg, out: dict) -> None:
    encoder_out(cfg, "BERT")


MLM_HEAD = mlm_head("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                    "cls.predictions.bias")  # fmt: skip
FAMILY = Family(
    "mlm", "bert.", "encoder.", "BertForMaskedLM", bert_groups, "hidden_act", heads=MLM_HEAD,
    tied=tied_head("cls.predictions.decoder", "cls.predictions.bias", "bert."), only_ours=ONLY_BERT,
    import_fix=_import_fix, export_fix=_export_fix,
)  # fmt: skip
# the family's other pretraining classes, by the warmstart objective they hold
VARIANTS = {
    "mlm+nsp": dataclasses.replace(
        FAMILY, objective="mlm+nsp", hf_class="BertForPreTraining",
        heads=(*MLM_HEAD, *pairs("sentence_head", "cls.seq_relationship")),
    ),
}  # fmt: skip
