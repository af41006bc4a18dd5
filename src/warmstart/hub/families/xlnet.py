"""XLNet: XLNetLMHeadModel (plm); its classification and multiple-choice heads a summary (dense + tanh) on
the last token, then ``logits_proj``; its question answering the simple class (its ForQuestionAnswering
runs beams)."""

from __future__ import annotations

from warmstart.hub.families.base import SUMMARY, Family, refuse
from warmstart.models import xlnet

LAST_SUMMARY = {**SUMMARY, "summary_type": "last"}  # its summary stays d_model wide


def _import_fix(hf: dict, kw: dict, state: dict) -> None:
    refuse(hf.get("attn_type", "bi") not in ("bi", "uni"), f"an XLNet with attn_type={hf.get('attn_type')} "
           "cannot be imported", "warmstart's XLNet runs attn_type bi or uni")  # fmt: skip


def _has_head(task_name: str, hf: dict) -> bool:
    """Whether warmstart has XLNet's head for the task ``task_name``: its summary as a pooler
    (tanh(dense(last token))), transformers' default; a summary of another type or activation it has not."""
    if task_name not in ("classification", "multiple_choice"):
        return True
    defaults = {"summary_type": "last", "summary_use_proj": True, "summary_activation": "tanh"}
    summary = all(hf.get(k, v) == LAST_SUMMARY[k] for k, v in defaults.items())
    return summary and not hf.get("summary_proj_to_labels")


FAMILY = Family(
    "plm", "transformer.", "encoder.", "XLNetLMHeadModel", lambda c: [(xlnet.HF_KEYS, [], c.n_layer)],
    "ff_activation", heads=(("encoder.lm_bias", "lm_loss.bias"),),
    tied=(("lm_loss.weight", "transformer.word_embedding.weight"),),
    only_ours=frozenset({"max_length", "pooler"}), arch="xlnet", import_fix=_import_fix,
    task_heads={
        "classification": (("encoder.pooler", "sequence_summary.summary"), ("classifier", "logits_proj")),
        "multiple_choice": (("encoder.pooler", "sequence_summary.summary"), ("scorer", "logits_proj")),
    },
    head_config={"classification": LAST_SUMMARY, "multiple_choice": LAST_SUMMARY},
    task_classes={"extractive_qa": "ForQuestionAnsweringSimple"}, has_head=_has_head,
)  # fmt: skip
VARIANTS: dict = {}
