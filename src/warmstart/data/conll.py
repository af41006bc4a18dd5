"""CoNLL-2003 style files: one token per line, whitespace-separated columns, blank lines between sentences.

The first column is the word and the LAST column its tag (the middle columns, POS and chunk tags in
CoNLL-2003, are ignored). A ``-DOCSTART-`` line starts a new document and is dropped; records read after
one carry ``"doc"``, the document's index (0, 1, ...), so splits can keep a document together.

Lines are read as ``data/lines.py`` reads them: a leading UTF-8 BOM is dropped (so a first ``-DOCSTART-`` line
still starts document 0), no line longer than ``MAX_LINE_BYTES`` is read whole (it is an error naming the
line), and a line that is not UTF-8 is an error naming the line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from warmstart.atomic import write_atomic
from warmstart.data.lines import Lines
from warmstart.errors import WarmstartError

DOCSTART = "-DOCSTART-"


def _record(tokens: list[str], tags: list[str], doc: int | None) -> dict:
    record = {"text": " ".join(tokens), "tokens": tokens, "tags": tags}
    if doc is not None:
        record["doc"] = doc
    return record


def read_conll(path: str | os.PathLike) -> Iterator[dict]:
    """Tagging records ``{"text", "tokens", "tags", "doc"?}``, streaming, one per sentence.

    Every token line must have the same number of columns (at least two: word and tag) as the first one;
    a line that does not is an error naming the file and the line number. A missing file fails at once.
    """
    path = Path(path)
    if not path.is_file():
        raise WarmstartError(f"no CoNLL file at {path}", "check the path")
    return _read(path)


def _read(path: Path) -> Iterator[dict]:
    columns, doc = None, None
    tokens: list[str] = []
    tags: list[str] = []
    for number, line in enumerate(Lines(path, strict=True), start=1):
        fields = line.split()
        if not fields or fields[0] == DOCSTART:
            if tokens:
                yield _record(tokens, tags, doc)
                tokens, tags = [], []
            if fields:
                doc = 0 if doc is None else doc + 1
            continue
        if columns is None:
            columns = len(fields)
        if len(fields) != columns or columns < 2:
            raise WarmstartError(
                f"{path}, line {number}: expected {max(columns, 2)} whitespace-separated columns "
                f"(word ... tag) but found {len(fields)}: {line.strip()[:80]!r}",
                "put one token per line with its tag in the last column, and a blank line between sentences",
            )
        tokens.append(fields[0])
        tags.append(fields[-1])
    if tokens:
        yield _record(tokens, tags, doc)


def write_conll(records: Iterable[dict], path: str | os.PathLike) -> Path:
    """Write ``records`` as a two-column (word tag) CoNLL file, atomically (temp file, then rename).

    When records carry ``"doc"``, a ``-DOCSTART-`` line (and a blank line) opens every new document, so
    :func:`read_conll` gives the documents back. Tokens and tags must be non-empty and free of whitespace.
    """

    def write(fh) -> None:
        last_doc = object()
        for n, record in enumerate(records):
            tokens, tags = record["tokens"], record["tags"]
            if len(tokens) != len(tags) or not tokens:
                raise WarmstartError(
                    f"record {n} has {len(tokens)} tokens and {len(tags)} tags",
                    "give every sentence at least one token and exactly one tag per token",
                )
            if "doc" in record and record["doc"] != last_doc:
                fh.write(f"{DOCSTART} O\n\n")
                last_doc = record["doc"]
            for token, tag in zip(tokens, tags):
                if len(token.split()) != 1 or len(tag.split()) != 1 or token == DOCSTART:
                    raise WarmstartError(
                        f"record {n}: token {token!r} / tag {tag!r} is empty, contains whitespace "
                        f"or is {DOCSTART}",
                        "remove whitespace from tokens and tags before writing CoNLL",
                    )
                fh.write(f"{token} {tag}\n")
            fh.write("\n")

    return write_atomic(path, write, text=True)
