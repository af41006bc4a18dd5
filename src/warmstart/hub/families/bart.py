"""BART: BartForConditionalGeneration (denoising), its final_logits_bias a head; its task classes:
tasks/readers.py ``HEADS``."""

from __future__ import annotations

from warmstart.hub.families.base import Family, odd, refuse
from warmstart.models import bart


def _import_fix(hf: dict, kw: dict, state: dict) -> None:
    flags = {"normalize_before": False, "add_final_layer_norm": False, "static_position_embeddings": False,
             "add_bias_logits": False, "normalize_embedding": True, "tie_word_embeddings": True}  # fmt: skip
    odd(hf, flags, "a BART")


def _export_fix(cfg, out: dict) -> None:
    refuse(cfg.layer_norm_eps != 1e-5, f"transformers' BART has LayerNorm eps 1e-5, not {cfg.layer_norm_eps}")
    out.update(is_encoder_decoder=True, forced_eos_token_id=None, forced_bos_token_id=None)


FAMILY = Family(
    "denoising", "model.", "model.", "BartForConditionalGeneration", bart.hf_key_map,
    "activation_function", heads=(("model.final_logits_bias", "final_logits_bias"),),
    tied=(("model.encoder.embed_tokens.weight", "model.shared.weight"),
          ("model.decoder.embed_tokens.weight", "model.shared.weight"),
          ("lm_head.weight", "model.shared.weight")),
    only_ours=frozenset({"layer_norm_eps"}), arch="bart", import_fix=_import_fix, export_fix=_export_fix,
)  # fmt: skip
VARIANTS: dict = {}
