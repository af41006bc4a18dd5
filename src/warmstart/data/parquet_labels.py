"""The class names a Parquet file written by `datasets` keeps for its label column (``Dataset.to_parquet``
stores the features, a ``ClassLabel`` among them, in the schema's ``huggingface`` metadata): its ints read
back as those names, as `datasets` reads them."""

from __future__ import annotations

import json


def class_names(file, column: str | None) -> list[str] | None:
    """The class names of a Parquet file's ``column`` when ``datasets`` wrote it (``Dataset.to_parquet``: a
    ``ClassLabel``, or a sequence of one, in the schema's ``huggingface`` metadata), else None."""
    meta = (file.schema_arrow.metadata or {}).get(b"huggingface")
    try:
        feature = json.loads(meta)["info"]["features"][column] if meta and column else None
    except (ValueError, KeyError, TypeError):
        return None
    while isinstance(feature, dict) and feature.get("_type") in ("Sequence", "List", "LargeList"):
        feature = feature.get("feature")
    if isinstance(feature, dict) and feature.get("_type") == "ClassLabel":
        names = feature.get("names")
        return [str(n) for n in names] if isinstance(names, list) else None
    return None


def named(value, names: list[str]):
    """A ClassLabel int (or a list of them) as its name; anything else as it is."""
    if isinstance(value, list):
        return [named(v, names) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    return value
