"""The ranges of a config's numbers: fractions by name in [0, 1], whole numbers (sizes, layer and head counts,
steps, limits, seeds) in the range their name gives them (``NUMBER_RULES``). ``from_dict`` applies them to
every config it reads (config.py); ``check_numbers`` to a config built otherwise (a transformers
config.json, a server's request)."""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from typing import Any

from warmstart.errors import WarmstartError

FRACTION = re.compile(r"dropout|pdrop|_prob$|_fraction$|_ratio$")
SEED_MAX = 2**32 - 1  # numpy's legacy seeding takes no more; torch takes it, and seed * 1000 + i fits int64
INT_MAX = 2**63 - 1  # torch's int64
SIZES = (
    r"_size$|_dim$|^dim$|^d_|^n_embd$|^n_inner$|_positions$|_embeddings$|_buckets$|_distance$|_length$"
    r"|^seq_len$|_rank$|^max_new_tokens$|^num_beams$|^num_return_sequences$|^n_best$"
)
# (key name pattern, least, most): the range of every int config key (and each item of a list[int] key)
# whose last part matches; the first matching row decides. A key whose default lies below the least (0:
# "off" or "the default", -1: "none") may also take its default. Layer and head counts are bounded so that
# a typo cannot build a million-block model for minutes before the memory check; widths and lengths so
# that a product of two stays far inside int64.
NUMBER_RULES = [
    (re.compile(r"seeds?$"), 0, SEED_MAX),
    (re.compile(r"layers$|^n_layer$|^n_highway$|heads$|^n_head$"), 1, 4096),
    (re.compile(SIZES), 1, 2**24),
    (re.compile(r""), 0, INT_MAX),  # counts of steps, examples, tokens, threads...: none is negative
]


def short(value: Any, limit: int = 80) -> str:
    """A value as an error line quotes it: its repr, cut after ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def number_range(name: str, default: Any = None) -> tuple[int, int]:
    """(least, most) of the int config key whose last part is ``name`` (``NUMBER_RULES``)."""
    least, most = next((lo, hi) for pattern, lo, hi in NUMBER_RULES if pattern.search(name))
    return (default if _is_int(default) and default < least else least), most


def check_number(key: str, value: Any, default: Any = None, floor: int | None = None) -> None:
    """Refuse ``value`` of the int config key ``key`` (dotted) unless it is a whole number in its range
    (``floor``: a lower least the key's config class declares for it, ``number_least``)."""
    least, most = number_range(key.rpartition(".")[2], default)
    least = least if floor is None else min(least, floor)
    example = default if _is_int(default) and least <= default <= most else max(least, 1)
    if _is_int(value) and least <= value <= most:
        return
    if not _is_int(value):
        must = "a whole number"
    elif value > most:
        must = f"at most {most}"
    else:
        must = "0 or more" if least == 0 else f"at least {least}"
    raise WarmstartError(f"{key} must be {must}, got {short(value)}", f"use e.g. {key}={example}")


@functools.cache
def _checked_fields(cls: type) -> list[tuple[str, str, Any]]:
    """(name, check, default) of the fields of dataclass ``cls`` that ``check_values`` checks; check is int,
    int? (None allowed), list (of ints), fraction or section (a nested dataclass)."""
    out = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = typing.get_origin(tp) in (typing.Union, types.UnionType) and len(args) == 1
        inner = args[0] if optional else tp
        default = f.default if f.default is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(inner):
            out.append((f.name, "section", None))
        elif inner is int:
            out.append((f.name, "int?" if optional else "int", default))
        elif typing.get_origin(inner) is list and typing.get_args(inner) == (int,):
            out.append((f.name, "list", None))
        elif inner is float and FRACTION.search(f.name):
            out.append((f.name, "fraction", default))
    return out


def check_values(cls: type, values: dict, prefix: str = "", nested: bool = True) -> None:
    """Refuse a value in ``values`` (field name -> value, for dataclass ``cls``) outside its rule: an int
    key outside its ``NUMBER_RULES`` range (or not a whole number), a fraction outside [0, 1]. Keys are
    named ``prefix`` + field; ``nested``: sections (nested dataclasses, or dicts of their values) too. A class
    may lower a key's least by a class attribute ``number_least`` ({name: least})."""
    floors = getattr(cls, "number_least", {})
    for name, check, default in _checked_fields(cls):
        if name not in values:
            continue
        value, key = values[name], prefix + name
        if check == "section" and nested and value is not None:
            tp = typing.get_type_hints(cls)[name]
            tp = next((a for a in typing.get_args(tp) if dataclasses.is_dataclass(a)), tp)
            inner = value if isinstance(value, dict) else {n: getattr(value, n) for n in _field_names(tp)}
            check_values(tp, inner, f"{key}.")
        elif check == "int" or (check == "int?" and value is not None):
            check_number(key, value, default, floors.get(name))
        elif check == "list" and isinstance(value, list):
            for item in value:
                check_number(key, item)
        elif check == "fraction" and _is_number(value) and not 0 <= value <= 1:
            raise WarmstartError(
                f"config key '{key}' is a fraction, got {short(value)}", "use a value from 0 to 1"
            )


def check_numbers(cfg: Any, prefix: str = "") -> None:
    """``check_values`` of a config object (its nested sections included): for configs built without
    ``from_dict`` (a transformers config.json, a server's request)."""
    check_values(type(cfg), {n: getattr(cfg, n) for n in _field_names(type(cfg))}, prefix)


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
