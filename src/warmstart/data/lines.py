"""Lines of a user's text file, read in bounded pieces: how data/ reads CSV, TSV, JSONL, .txt and CoNLL.

- A leading UTF-8 byte-order mark (``EF BB BF``, what Windows editors write) is dropped, as ``utf-8-sig``
  does, so it never glues itself to the first header, key or ``-DOCSTART-``.
- No line is read whole before its length is known: each is read with ``readline(MAX_LINE_BYTES + 1)``, and
  a line longer than ``MAX_LINE_BYTES`` is refused with its file, line number and the limit. A 50 MB
  single-line corpus costs at most one limit's worth of memory before the error, not gigabytes.
- A .gz or .zst file is decompressed as it is read (``data/compressed.py``); damage is one clear error.
- A line that is not valid UTF-8 is either decoded with ``errors="replace"`` (bad bytes become U+FFFD),
  counted and reported once by :meth:`Lines.warn`, or (``strict=True``) refused with its line number.

JSON text can spell characters that UTF-8 cannot hold: ``"\\ud800"`` parses to a Python string with an
unpaired surrogate, which crashes a tokenizer much later. :func:`refuse_surrogates` finds those in parsed
values so the reader can refuse them with the file and line.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path

from warmstart.data import compressed
from warmstart.errors import WarmstartError

MAX_LINE_BYTES = 1 << 20  # 1 MiB: the longest line (one document, one CSV row, one JSON object) read
BOM = b"\xef\xbb\xbf"
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def limit_text(limit: int) -> str:
    return f"{limit / (1 << 20):g} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"


def too_long(path, number: int, limit: int, what: str = "line", fix: str | None = None) -> WarmstartError:
    """The error for a line (or paragraph: ``what``) of ``path`` longer than ``limit`` bytes."""
    return WarmstartError(
        f"{what} {number} of {path} is longer than the limit of {limit_text(limit)}",
        fix
        or "check that the file has newlines (\\n) between its lines (old Mac files end them with \\r only), "
        "or split that text into shorter lines (one document per line)",
    )


class Lines:
    """The lines of a file decoded as UTF-8, each at most ``limit`` bytes (see the module docstring).

    Iterating yields ``str`` lines with their line endings; ``number`` is the last line's number (1-based).
    """

    def __init__(self, path: str | Path, strict: bool = False, limit: int | None = None):
        self.path = Path(path)
        self._compressed = compressed.compression(self.path) is not None  # once, not per line
        self.strict = strict
        self.limit = MAX_LINE_BYTES if limit is None else limit
        self.bad = 0
        self.first_bad = 0
        self.number = 0

    def __iter__(self) -> Iterator[str]:
        limit = self.limit
        with compressed.open_binary(self.path) as fh:
            number = 0
            while raw := self._readline(fh, limit + 1, number):
                number += 1
                self.number = number
                if len(raw) > limit and not (len(raw) == limit + 1 and raw.endswith(b"\n")):
                    raise too_long(self.path, number, limit)
                if number == 1 and raw.startswith(BOM):
                    raw = raw[len(BOM) :]
                yield self._decode(raw, number)

    def _readline(self, fh, size: int, number: int) -> bytes:
        if not self._compressed:
            return fh.readline(size)
        try:
            return fh.readline(size)
        except compressed.read_errors() as exc:  # a damaged .gz / .zst: one line, not a traceback
            raise compressed.damaged(self.path, number, exc) from None

    def __enter__(self) -> Lines:  # ``with Lines(path) as lines:`` reads like ``with open(path) as fh:``
        return self

    def __exit__(self, *exc) -> None:
        self.warn()

    def _decode(self, raw: bytes, number: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if self.strict:
                raise WarmstartError(
                    f"line {number} of {self.path} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                    "save the file as UTF-8",
                ) from None
            self.bad += 1
            self.first_bad = self.first_bad or number
            return raw.decode("utf-8", errors="replace")

    def warn(self) -> None:
        if self.bad:
            warnings.warn(
                f"{self.path}: {self.bad} line(s) were not valid UTF-8 (first: line {self.first_bad}); "
                "the bad bytes were replaced with U+FFFD (a file saved as Windows-1252 or Latin-1, as Excel "
                "does, keeps its accents when saved as UTF-8)",
                UnicodeWarning,
                stacklevel=3,
            )


def surrogate_in(value, path: str = "") -> tuple[str, str] | None:
    """(where in the value, e.g. ``answers[0].text``; the surrogate spelled ``\\uXXXX``) of the first unpaired
    surrogate in a parsed JSON value (strings, keys, lists and objects, nested), or None."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        return (path, f"\\u{ord(found.group()):04x}") if found else None
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{path}.{key}" if path else str(key)
            hit = surrogate_in(key, path or "a key") or surrogate_in(item, inner)
            if hit:
                return hit
    elif isinstance(value, list):
        for i, item in enumerate(value):
            hit = surrogate_in(item, f"{path}[{i}]")
            if hit:
                return hit
    return None


def refuse_surrogates(value, line: str | None, where: str) -> None:
    """Refuse a parsed JSON value holding an unpaired surrogate (``where``: "line 3 of f.jsonl"). ``line``,
    the raw JSON text when there is one, is a quick pre-check: surrogates come from ``\\uD8xx`` escapes."""
    if line is not None and not _ESCAPED_SURROGATE.search(line):
        return
    hit = surrogate_in(value)
    if hit:
        key = f" in '{hit[0]}'" if hit[0] else ""
        raise WarmstartError(
            f"{where}: the text{key} holds an unpaired surrogate ({hit[1]}) and is not valid Unicode",
            "remove that escape or write the character it stands for (a surrogate pair such as "
            "\\ud83d\\ude00 is fine)",
        )
