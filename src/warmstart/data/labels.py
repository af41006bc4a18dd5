"""Class labels as text, one spelling per class, whatever the file format wrote.

The rule (the same for JSONL, CSV/TSV, Parquet and ``hf:`` data):

- A number is one class per value: JSON ``1``, ``1.0``, ``1e0`` and the strings ``"1"``, ``"1.0"`` (a CSV
  field is always a string) are all the class ``"1"``; ``0.50`` and ``"0.5"`` are ``"0.5"``. A string
  counts as a number when it is spelled as a JSON number (``-?digits[.digits][e±digits]``, no leading
  zeros), so codes like ``"007"`` or ``"+1"`` stay text. Integral values are written without a fraction,
  others in their shortest decimal form. So a JSONL file that mixes the string ``"1"`` with the number
  ``1`` gets one class ``"1"``, as the same file saved as CSV does.
- JSON ``true``/``false`` and the strings ``"true"``/``"false"`` in any case (pandas writes ``True``) are the
  classes ``"true"``/``"false"``. A file whose labels mix booleans with numbers is refused, naming the lines
  of both: whether ``true`` means ``1`` is a guess no reader should make silently.
- ``NaN`` and ``Infinity`` (JSON extensions Python accepts) are refused as labels, with the line.
- Any other string is its own class, stripped of surrounding whitespace (``"Pos"`` and ``"pos"`` differ).

Regression reads these texts back with ``float``: ``"0.5"`` is 0.5, so scores are unchanged. Text-to-text
targets are not labels and keep their text as written.
"""

from __future__ import annotations

import math
import re
from decimal import Context, Decimal

from warmstart.errors import WarmstartError

_NUMERAL = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_BOOLEAN = ("true", "false")
_PLAIN = 400  # numbers with at most this many digits before/after the point are written out in full


def _number_text(value: Decimal) -> str:
    n = value.normalize(Context(prec=len(value.as_tuple().digits) + 2))  # exact: no digit is rounded off
    if n.is_zero():
        return "0"
    if abs(n.adjusted()) > _PLAIN:
        return str(n)  # 1E+100: still one spelling per value
    if n == n.to_integral_value():
        return str(int(n))
    return format(n, "f")


def label_type(value) -> str:
    """'boolean', 'number' or 'text': what a raw label value is, for the mixing rule."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    text = str(value).strip()
    if text.lower() in _BOOLEAN:
        return "boolean"
    return "number" if _NUMERAL.fullmatch(text) else "text"


def canonical_label(value) -> str:
    """The class text of a label value (see the module docstring); ValueError for NaN or an infinity."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return _number_text(Decimal(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"the label {value} is not a finite number")
        return _number_text(Decimal(repr(value)))
    text = str(value).strip()
    if text.lower() in _BOOLEAN:
        return text.lower()
    if len(text) <= 400 and _NUMERAL.fullmatch(text):
        return _number_text(Decimal(text))
    return text


class LabelCheck:
    """Canonical labels of one file, refusing a file that mixes booleans with numbers. ``empty``: an empty
    label (the text ``""``) is a row that none of the labels apply to (multi-label), not a missing value."""

    def __init__(self, path, empty: bool = False):
        self.path, self.empty = path, empty
        self.first: dict[str, tuple[str, object]] = {}  # label type -> (where, value) of its first label

    def label(self, value, where: str) -> str:
        """The class text of ``value`` read at ``where`` ("line 3"); a WarmstartError for a bad one."""
        try:
            text = canonical_label(value)
        except ValueError as exc:
            raise WarmstartError(
                f"{where} of {self.path}: {exc}", "give every row a class name or a finite number"
            ) from None
        value_type = label_type(value)
        if value_type != "text":
            self.first.setdefault(value_type, (where, value))
            other = next((k for k in self.first if k != value_type), None)
            if other is not None:
                before, shown = self.first[other]
                raise WarmstartError(
                    f"{where} of {self.path}: the label {_show(value)} is a {value_type} but {before} has "
                    f"the {other} {_show(shown)}; the labels mix booleans (true/false) and numbers",
                    "write the labels one way: all true/false, or all numbers (1/0)",
                )
        return text


def _show(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, str) else str(value)


class MultiLabel(str):
    """A row's labels given as a list (JSON ``["a", "b"]``, a Parquet or ``hf:`` sequence): the text
    ``"a|b"`` wherever a label is counted or shown, and ``parts``, the labels themselves, for the task
    (whatever task.label_separator is). An empty list is a row none of the labels apply to."""

    parts: tuple[str, ...]

    def __new__(cls, parts):
        parts = tuple(dict.fromkeys(parts))  # each label once, in the text as in parts
        self = super().__new__(cls, "|".join(parts))
        self.parts = parts
        return self
