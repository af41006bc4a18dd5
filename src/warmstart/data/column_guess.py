"""Which columns of a table look like its text and its label, said beside a missing column's error: the
text is the column of the longest values (on average), the label one of few distinct values. Read from the
first rows only, so a guess costs nothing on a large file; it is a hint in the fix, never acted on."""

from __future__ import annotations

from collections.abc import Iterable

SAMPLE = 200  # rows read for the guess
LONG = 20  # characters: a shorter average is not text
FEW = 20  # distinct values in the sample: more is not a label


def guess(rows: Iterable[dict]) -> tuple[str | None, str | None]:
    """(text column, label column) of ``rows`` (dicts of column -> value), each None when none fits."""
    values: dict[str, list[str]] = {}
    for i, row in enumerate(rows):
        if i == SAMPLE:
            break
        for column, value in row.items():
            if value is not None and str(value).strip():
                values.setdefault(str(column), []).append(str(value))
    mean = {c: sum(map(len, v)) / len(v) for c, v in values.items() if v}
    text = max(mean, key=mean.get, default=None)
    text = text if text is not None and mean[text] >= LONG else None
    distinct = {c: len(set(v)) for c, v in values.items() if c != text and 2 <= len(set(v)) <= FEW}
    label = min(distinct, key=distinct.get, default=None)
    return text, label


def hint(rows: Iterable[dict], role: str) -> str:
    """The words added to the fix for a missing ``role`` column ("text" or "label"), or ""."""
    text, label = guess(rows)
    if role == "text" and text:
        also = f"; '{label}' looks like the label" if label else ""
        return f" (the longest texts are in '{text}'{also})"
    if role == "label" and label:
        return f" ('{label}' has few distinct values: the label?)"
    return ""
