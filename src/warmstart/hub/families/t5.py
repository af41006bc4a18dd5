"""T5: T5ForConditionalGeneration (span_corruption), v1.0 (tied, scaled) and v1.1 (gated, untied head);
its task classes: tasks/readers.py ``HEADS``."""

from __future__ import annotations

from warmstart.hub.families.base import ACT_ALIASES, Family, refuse
from warmstart.models import t5


def _import_fix(hf: dict, kw: dict, state: dict) -> None:
    ff = hf.get("feed_forward_proj", "relu")
    act = "gelu_new" if ff == "gated-gelu" else ACT_ALIASES.get(ff.split("-")[-1], ff.split("-")[-1])
    name = {v: k for k, v in t5.FEED_FORWARD.items()}.get((act, ff.startswith("gated-")))
    refuse(name is None, f"T5 feed_forward_proj '{ff}' has no warmstart equivalent",
           "warmstart's T5 runs relu, gelu_new, gated-gelu or gated-silu")  # fmt: skip
    kw["feed_forward_proj"] = name
    # transformers 5 writes scale_decoder_outputs (v1.0: scaled and tied); 4.x only tie_word_embeddings
    kw["tie_word_embeddings"] = bool(hf.get("scale_decoder_outputs", hf.get("tie_word_embeddings", True)))
    if not kw["tie_word_embeddings"] and "shared.weight" in state:
        state.setdefault("lm_head.weight", state["shared.weight"])  # an unscaled head tied to the embedding


def _export_fix(cfg, out: dict) -> None:
    act, gated = t5.FEED_FORWARD[cfg.feed_forward_proj]
    out["feed_forward_proj"] = ("gated-gelu" if act == "gelu_new" else f"gated-{act}") if gated else act
    out.update(tie_word_embeddings=cfg.tie_word_embeddings, scale_decoder_outputs=cfg.tie_word_embeddings)
    out["is_encoder_decoder"] = True


FAMILY = Family(
    "span_corruption", "", "model.", "T5ForConditionalGeneration", t5.hf_key_map,
    tied=tuple((f"{name}.weight", "shared.weight")
               for name in ("encoder.embed_tokens", "decoder.embed_tokens", "lm_head")),
    only_ours=frozenset({"max_length"}), arch="t5", import_fix=_import_fix, export_fix=_export_fix,
)  # fmt: skip
VARIANTS: dict = {}
