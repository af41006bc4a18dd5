"""GPT-2: GPT2LMHeadModel (clm), Conv1D weights transposed; its task classes: tasks/readers.py ``HEADS``."""

from __future__ import annotations

from warmstart.hub.families.base import Family, odd
from warmstart.models import gpt2


def _import_fix(hf: dict, kw: dict, state: dict) -> None:
    flags = {
        "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False,
        "add_cross_attention": False,
    }
    odd(hf, flags, "a GPT-2")


FAMILY = Family(
    "clm", "transformer.", "model.", "GPT2LMHeadModel", lambda c: [(gpt2.HF_KEYS, [], c.n_layer)],
    "activation_function", tied=(("lm_head.weight", "transformer.wte.weight"),),
    transposed=gpt2.HF_TRANSPOSED, arch="gpt2", import_fix=_import_fix,
)  # fmt: skip
VARIANTS: dict = {}
