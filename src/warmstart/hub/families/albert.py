"""ALBERT: the encoder with ``embedding_size`` and ``share_layers`` (num_hidden_groups 1; unshared: one
group per layer), its blocks under ALBERT's names; AlbertForMaskedLM (mlm) and AlbertForPreTraining
(mlm+sop). Without factorized embeddings transformers still projects them: export writes the identity."""

from __future__ import annotations

import dataclasses

import torch

from warmstart.hub.families.base import Family, odd, pairs, refuse
from warmstart.hub.families.encoder import ONLY_BERT, encoder_out, factorized, mlm_head, tied_head
from warmstart.models import bert

LAYER = {"attention.self.": "attention.", "attention.output.dense": "attention.dense",
         "attention.output.LayerNorm": "attention.LayerNorm", "intermediate.dense": "ffn",
         "output.dense": "ffn_output", "output.LayerNorm": "full_layer_layer_norm"}  # fmt: skip


def _albert(theirs: str) -> str:
    """BERT's name of a block weight -> ALBERT's (block i = layer group i, of one layer)."""
    rest = theirs.removeprefix("encoder.layer.{i}.")
    if rest == theirs:
        return theirs
    old = next(k for k in LAYER if rest.startswith(k))
    return "encoder.albert_layer_groups.{i}.albert_layers.0." + LAYER[old] + rest[len(old) :]


def _groups(c):
    keys = [(o, _albert(t)) for o, t in bert.HF_KEYS]
    keys += pairs("embed_project", "encoder.embedding_hidden_mapping_in") if factorized(c) else []
    keys += pairs("pooler", "pooler") if c.pooler else []
    fused = [(o, [_albert(p) for p in parts]) for o, parts in bert.HF_FUSED]
    return [(keys, fused, 1 if c.share_layers else c.num_hidden_layers)]


def _import_fix(hf: dict, kw: dict, state: dict) -> None:
    odd(hf, {"position_embedding_type": "absolute", "inner_group_num": 1}, "an ALBERT")
    layers, groups = hf.get("num_hidden_layers", 12), hf.get("num_hidden_groups", 1)
    refuse(groups not in (1, layers), f"an ALBERT with num_hidden_groups={groups} of {layers} layers "
           "cannot be imported", "warmstart shares one block by all layers (1 group) or none")  # fmt: skip
    kw.update(share_layers=groups == 1 and layers > 1, pooler="albert.pooler.weight" in state)
    if kw.get("embedding_size", 128) == kw.get("hidden_size", 4096):
        w, b = (state.get(f"albert.encoder.embedding_hidden_mapping_in.{p}") for p in ("weight", "bias"))
        same = w is not None and b is not None and torch.equal(w, torch.eye(len(w))) and not b.any()
        refuse(not same, "an ALBERT whose embedding_size equals hidden_size still projects its "
               "embeddings, which warmstart's encoder does not")  # fmt: skip
        kw["embedding_size"] = None


def _export_fix(cfg, out: dict) -> None:
    encoder_out(cfg, "ALBERT", ("share_layers", "embedding_size"))
    out.update(embedding_size=cfg.embedding_size or cfg.hidden_size, inner_group_num=1)
    out["num_hidden_groups"] = 1 if cfg.share_layers else cfg.num_hidden_layers


FAMILY = Family(
    "mlm", "albert.", "encoder.", "AlbertForMaskedLM", _groups, "hidden_act",
    heads=mlm_head("predictions.dense", "predictions.LayerNorm", "predictions.bias"),
    tied=tied_head("predictions.decoder", "predictions.bias", "albert."),
    only_ours=ONLY_BERT - {"embedding_size"}, identity="encoder.embedding_hidden_mapping_in",
    import_fix=_import_fix, export_fix=_export_fix,
)  # fmt: skip
VARIANTS = {
    "mlm+sop": dataclasses.replace(
        FAMILY, objective="mlm+sop", hf_class="AlbertForPreTraining",
        heads=(*FAMILY.heads, *pairs("sentence_head", "sop_classifier.classifier")),
    ),
}  # fmt: skip
