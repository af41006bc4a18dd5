"""ELECTRA: the discriminator (``embedding_size``, no pooler) with its replaced-token head,
ElectraForPreTraining; its generator, ElectraForMaskedLM (mlm; beside a discriminator:
hub/electra_generator.py). Its task heads differ from BERT's: a classifier of dense + gelu + out_proj, and a
configurable sequence summary for multiple choice."""

from __future__ import annotations

import dataclasses

import torch

from warmstart.hub.families.base import SUMMARY, Family, odd, pairs, refuse
from warmstart.hub.families.encoder import ENCODER_FLAGS, ONLY_BERT, encoder_out, factorized, mlm_head
from warmstart.hub.pooling import NOTE
from warmstart.models import bert


def _groups(c):
    keys = bert.HF_KEYS + (pairs("embed_project", "embeddings_project") if factorized(c) else [])
    return [(keys, bert.HF_FUSED, c.num_hidden_layers)]


def _import_fix(hf: dict, kw: dict, state: dict) -> None:
    odd(hf, ENCODER_FLAGS, "an ELECTRA")
    if "generator_predictions.dense.weight" in state:  # transformers' generator head runs gelu in any case
        odd(hf, {"hidden_act": "gelu"}, "an ELECTRA generator")
    kw["pooler"] = False  # ELECTRA has none
    if kw.get("embedding_size") == kw.get("hidden_size"):
        kw["embedding_size"] = None


def _export_fix(cfg, out: dict) -> None:
    encoder_out(cfg, "ELECTRA", ("embedding_size",))
    refuse(out["architectures"] == ["ElectraForMaskedLM"] and cfg.hidden_act != "gelu",
           f"transformers' ELECTRA generator head runs gelu, the model {cfg.hidden_act}")  # fmt: skip
    out["embedding_size"] = cfg.embedding_size or cfg.hidden_size


def _classifier(task_name: str, state: dict, heads: list, cfg) -> tuple:
    """ELECTRA's dense + gelu + out_proj as ``W h + b`` exactly: gelu(x) - gelu(-x) = x."""
    weight, bias = state["classifier.weight"], state["classifier.bias"]
    labels, size = weight.shape
    refuse(
        2 * labels > size,
        f"an ELECTRA classifier of {labels} outputs has no exact transformers head at hidden_size {size}: "
        "ElectraForSequenceClassification's dense layer is hidden_size wide, the export needs 2 per output",
        "finetune it from a bert, roberta or albert model (their heads take any number of labels)",
    )
    dense, dense_bias = weight.new_zeros(size, size), bias.new_zeros(size)
    dense[:labels], dense[labels : 2 * labels] = weight, -weight
    dense_bias[:labels], dense_bias[labels : 2 * labels] = bias, -bias
    eye = torch.eye(labels, dtype=weight.dtype)
    out = weight.new_zeros(labels, size)
    out[:, :labels], out[:, labels : 2 * labels] = eye, -eye
    tensors = {
        "classifier.dense.weight": dense,
        "classifier.dense.bias": dense_bias,
        "classifier.out_proj.weight": out,
        "classifier.out_proj.bias": bias.new_zeros(labels),
    }
    how = (
        "classifier.dense is [W; -W; 0] with bias [b; -b; 0] and classifier.out_proj is [I, -I, 0] with "
        "bias 0, so out_proj(gelu(dense(h))) = gelu(W h + b) - gelu(-(W h + b)) = W h + b"
    )
    return state, [], tensors, {"warmstart_head": NOTE.format(how=how)}


def _summary(task_name: str, state: dict, heads: list, cfg) -> tuple:
    """ELECTRA's sequence summary without projection or activation: the first token itself."""
    config = {"summary_type": "first", "summary_use_proj": False, "summary_activation": "linear"}
    how = (
        "sequence_summary takes the first token with no projection and a linear (identity) activation: exact"
    )
    scorer = [(ours, theirs) for ours, theirs in heads if not ours.startswith("encoder.pooler.")]
    return state, scorer, {}, {**config, "warmstart_head": NOTE.format(how=how)}


def _has_head(task_name: str, hf: dict) -> bool:
    """Whether warmstart has ELECTRA's head for the task ``task_name``: its classifier (dense + gelu +
    out_proj) it has not; its multiple-choice summary only as a tanh on a dense layer
    (summary_activation=tanh), i.e. a pooler."""
    if task_name != "multiple_choice":
        return task_name != "classification"
    summary = {k: hf.get(k, v) for k, v in {**SUMMARY, "summary_activation": "gelu"}.items()}  # defaults
    return summary == SUMMARY and not hf.get("summary_proj_to_labels")


NO_POOLER = (
    "a finetuned classification model with task.pooling=pooler has no ELECTRA head: transformers' "
    "ElectraForSequenceClassification runs dense + gelu + out_proj on the first token, which cannot "
    "compute the pooler's dense + tanh",
    "finetune with task.pooling=cls (the default), which exports exactly",
)
DISCRIMINATOR = (
    *pairs("discriminator_head.dense", "discriminator_predictions.dense"),
    *pairs("discriminator_head.prediction", "discriminator_predictions.dense_prediction"),
)
FAMILY = Family(
    "electra", "electra.", "encoder.", "ElectraForPreTraining", _groups, "hidden_act", heads=DISCRIMINATOR,
    only_ours=ONLY_BERT - {"embedding_size"}, fresh=("generator.", "generator_head."),
    import_fix=_import_fix, export_fix=_export_fix,
    # its multiple-choice head: a summary (dense + summary_activation) on the first token, then the classifier
    task_heads={
        "multiple_choice": (("encoder.pooler", "sequence_summary.summary"), ("scorer", "classifier")),
    },
    head_config={"multiple_choice": {**SUMMARY, "summary_proj_to_labels": False}},
    no_export={("classification", "pooler"): NO_POOLER},
    cls_heads={"classification": _classifier, "multiple_choice": _summary}, has_head=_has_head,
)  # fmt: skip
VARIANTS = {
    "mlm": dataclasses.replace(  # the generator: a masked LM with ELECTRA's embeddings
        FAMILY, objective="mlm", hf_class="ElectraForMaskedLM", fresh=(),
        heads=mlm_head("generator_predictions.dense", "generator_predictions.LayerNorm",
                       "generator_lm_head.bias"),
        tied=(("generator_lm_head.weight", "electra.embeddings.word_embeddings.weight"),),
    ),
}  # fmt: skip
