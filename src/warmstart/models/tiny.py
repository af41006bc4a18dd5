"""A tiny config of any model family, derived from its config class's defaults by field name, so that the
shared family tests (tests/models/test_families.py) check a family the moment it is registered.

Each integer field whose name says what it is shrinks to a tiny value (never grows): widths (hidden_size,
n_embd, d_model) to 32, attention heads to 4 and the width of one head (d_kv, *head_dim) to 32 / 4,
layers to 2, feed-forward widths (intermediate_size, *ffn*, d_ff, n_inner) to 64, positions and lengths
(*position*, max_length) to 64, and the vocabulary to ``vocab_size``. Fields that default to None (derived
from others, such as GPT-2's n_inner or T5's num_decoder_layers) and every other field keep their defaults.
A family whose field names these rules miss can name its own tiny values in a class attribute ``TINY``
(a dict of field -> value), applied last.
"""

from __future__ import annotations

import dataclasses
import re

WIDTH, HEADS, LAYERS, FFN, POSITIONS = 32, 4, 2, 64, 64
RULES = [  # (field name pattern, tiny value), the first that matches wins
    (r"d_kv|.*head_dim", WIDTH // HEADS),
    (r"hidden_size|n_embd|d_model|embed_dim|dim", WIDTH),
    (r".*heads?", HEADS),
    (r".*layers?", LAYERS),
    (r"intermediate_size|.*ffn.*|d_ff|n_inner", FFN),
    (r".*positions?.*|max_length", POSITIONS),
]


def tiny_value(name: str, default, vocab_size: int):
    """The tiny value of field ``name`` whose default is ``default`` (unchanged when no rule applies)."""
    if isinstance(default, bool) or not isinstance(default, int):
        return default
    if name == "vocab_size":
        return vocab_size
    for pattern, value in RULES:
        if re.fullmatch(pattern, name):
            return min(default, value)
    return default


def tiny(config_cls: type, vocab_size: int = 256, **overrides):
    """A tiny instance of the dataclass ``config_cls`` (see the module docstring), then ``overrides``."""
    values = {}
    for f in dataclasses.fields(config_cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            continue
        value = tiny_value(f.name, default, vocab_size)
        if value != default:
            values[f.name] = value
    return config_cls(**{**values, **getattr(config_cls, "TINY", {}), **overrides})
