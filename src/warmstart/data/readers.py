"""Streaming readers for local files: .txt, .jsonl, .csv, .tsv, .parquet, a .json list of rows
(data/json_records.py, read whole); the text kinds also compressed,
as .gz or .zst (``data.jsonl.gz``: data/compressed.py), decompressed as they are read.

Every reader yields dict records ``{"text": str}`` plus ``"text_pair"`` and ``"label"`` (always a str) when
those columns are asked for. Records with empty text are skipped. Memory stays flat: text files are read
line by line, Parquet in record batches.

Encoding and size (``data/lines.py``): files are read as bytes, a line at a time and never more than
``MAX_LINE_BYTES`` (1 MiB) of one, and each line is decoded as UTF-8 (a leading BOM is dropped). A longer
line, or a CSV field or .txt paragraph (txt_mode=blank) longer than that, is an error naming the file, the
line and the limit. A line that is not valid UTF-8 is decoded again with ``errors="replace"`` (bad bytes
become U+FFFD) rather than failing a long run on one stray byte; the affected lines are counted and one
``UnicodeWarning`` at the end of the file names the count and the first line number, so the damage is
visible without stopping the job. JSON text with an unpaired surrogate (``"\\ud800"``: not Unicode) is
refused with its line.

Labels are class names in one spelling per class (``data/labels.py``): JSON ``1``, ``1.0`` and the text
``"1"`` are all the class ``"1"``; ``true`` is ``"true"``; a file mixing booleans and numbers is refused.

TSV follows the GLUE convention: tab-separated, no quoting (fields cannot hold tabs or newlines). A .csv whose
header has semicolons and no comma is read with ``;`` (Excel's CSV where the decimal mark is a comma). CSV is
read strictly: an unclosed quote or text after a closing quote is an error naming the line, and so is a row
with more (non-empty) fields than the header. A text file with NUL bytes in its first 8 KB is refused as
binary (UTF-16 files look like that too). Values must be strings or numbers, and a label may be a list of them
(a multi-label row, ``data/labels.py``'s MultiLabel); any other list or object is refused.
"""

import csv
import itertools
import json
from collections.abc import Iterator
from pathlib import Path

from warmstart.data import column_guess, compressed
from warmstart.data import lines as line_io
from warmstart.data.json_records import json_records
from warmstart.data.labels import LabelCheck, MultiLabel
from warmstart.data.lines import Lines, limit_text, refuse_surrogates, too_long
from warmstart.data.parquet_labels import class_names, named
from warmstart.errors import WarmstartError

TABLE_EXTENSIONS = (".txt", ".jsonl", ".csv", ".tsv", ".parquet")
# read by their own modules: CoNLL tagging files (data/conll.py), SQuAD JSON (data/squad.py)
SUPPORTED_EXTENSIONS = (*TABLE_EXTENSIONS, ".conll", ".json")
COMPRESSED_EXTENSIONS = (".txt", ".jsonl", ".csv", ".tsv")  # read as .gz or .zst too
TXT_MODES = ("line", "blank")


def check_path(path: str | Path) -> Path:
    """The path, if it exists and has a supported extension; a WarmstartError otherwise. A text or table
    file may be compressed (``.jsonl.gz``, ``.csv.zst``: data/compressed.py)."""
    path = Path(path)
    if not path.is_file():
        raise WarmstartError(
            f"no such file: {path}", "check the path (or the dataset name: warmstart data list)"
        )
    compressed.refuse_unknown(path, SUPPORTED_EXTENSIONS)
    suffix = compressed.kind(path)
    if suffix not in SUPPORTED_EXTENSIONS:
        raise WarmstartError(
            f"unsupported file type '{compressed.shown_suffix(path)}': {path}",
            f"use one of {', '.join(SUPPORTED_EXTENSIONS)} (text and tables also as .gz or .zst)",
        )
    if compressed.compression(path) and suffix not in COMPRESSED_EXTENSIONS:
        raise WarmstartError(
            f"a compressed {suffix} file is not read: {path}",
            f"decompress it, or compress only {', '.join(COMPRESSED_EXTENSIONS)} files",
        )
    if suffix != ".parquet":
        check_text(path)
    return path


def check_text(path: Path) -> None:
    """Refuse a file whose first 8 KB hold a NUL byte: binary, or UTF-16/32, not UTF-8 text (a compressed
    file is looked at decompressed, and refused if it does not decompress)."""
    try:
        with compressed.open_binary(path) as fh:
            start = fh.read(8192)
    except compressed.read_errors() as exc:
        if not compressed.compression(path):
            raise
        raise compressed.damaged(path, 0, exc) from None
    if b"\0" in start:
        raise WarmstartError(
            f"{path} looks like a binary file (it has NUL bytes), not UTF-8 text",
            "pass a UTF-8 text file (save UTF-16 text as UTF-8)",
        )


def parquet_file(path: Path):
    """``path`` opened as a pyarrow ParquetFile; a file that is not Parquet is a WarmstartError."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise WarmstartError(f"{path} is not a readable Parquet file ({exc})", "write it again") from None


def csv_delimiter(header: str) -> str:
    """``;`` for a .csv whose header line has semicolons and no comma (what Excel writes where the decimal
    mark is a comma), else ``,``."""
    return ";" if ";" in header and "," not in header else ","


def csv_rows(lines: Iterator[str], suffix: str, path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each row; a quoting error is a WarmstartError naming the line."""
    limit = line_io.MAX_LINE_BYTES
    csv.field_size_limit(limit)  # a field (even one quoted over many lines) is at most a line
    if suffix == ".tsv":
        rows = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        first = next(lines, None)
        lines = itertools.chain([] if first is None else [first], lines)
        rows = csv.reader(lines, strict=True, delimiter=csv_delimiter(first or ""))
    last = 0  # the line the previous row ended on
    try:
        for values in rows:
            yield rows.line_num, values
            last = rows.line_num
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise WarmstartError(
                f"line {last + 1} of {path} starts a field longer than the limit of {limit_text(limit)} "
                f"(it runs past line {rows.line_num})",
                'shorten that text, or close the quote (") opened there if the field should end sooner',
            ) from None
        raise WarmstartError(
            f"bad CSV quoting on line {rows.line_num} of {path} ({exc})",
            'wrap a field holding a comma, quote or newline in double quotes and double its quotes ("")',
        ) from None


def file_columns(path: str | Path) -> list[str]:
    """The column names of a file: the header row, the first JSON object's keys, or ['text'] for .txt."""
    path = check_path(path)
    suffix = compressed.kind(path)
    if suffix == ".json" and (rows := json_records(path)):
        return list(rows[0])
    if suffix in (".txt", ".conll", ".json"):
        return ["text"]
    if suffix == ".parquet":
        return list(parquet_file(path).schema_arrow.names)
    if suffix == ".jsonl":
        for number, line in enumerate(Lines(path), 1):
            if line.strip():
                return list(json_object(line, path, number))
        return []
    return next((values for _, values in csv_rows(iter(Lines(path)), suffix, path)), [])


def json_object(line: str, path: Path | str, number: int) -> dict:
    """Line ``number`` of a JSON Lines file as an object; bad JSON, a non-object or a lone surrogate is a
    WarmstartError naming the line."""
    try:
        obj = json.loads(line)
    except ValueError as exc:  # JSONDecodeError, or an integer of more than 4,300 digits
        raise WarmstartError(
            f"bad JSON on line {number} of {path}: {getattr(exc, 'msg', str(exc)[:80])}",
            "make every line one JSON object",
        ) from None
    if not isinstance(obj, dict):
        raise WarmstartError(
            f"line {number} of {path} is not a JSON object", 'make every line an object like {"text": ...}'
        )
    refuse_surrogates(obj, line, f"line {number} of {path}")
    return obj


def column_fix(columns: dict, missing: str, available: list, rows: list[dict] | None = None) -> str:
    """The fix line for a missing column: the flag (and the option) of its role, the columns there are,
    and which of them look like the text or the label in ``rows`` (the file's first rows:
    data/column_guess.py)."""
    role = next((r for r, c in columns.items() if c == missing), "text")
    there = ", ".join(map(str, available[:12])) or "none"
    fix = f"pass --{role.replace('_', '-')}-column NAME (from Python: {role}_column=NAME), one of: {there}"
    return fix + (column_guess.hint(rows, role) if rows else "")


def first_rows(path: Path, n: int = column_guess.SAMPLE) -> list[dict]:
    """Up to ``n`` rows of a CSV, TSV or Parquet file as dicts (none when it cannot be read)."""
    suffix = compressed.kind(path)
    try:
        if suffix == ".parquet":
            batch = next(parquet_file(path).iter_batches(batch_size=n), None)
            return batch.to_pylist() if batch is not None else []
        if suffix in (".csv", ".tsv"):
            rows = csv_rows(iter(Lines(path)), suffix, path)
            header = next(rows, (0, []))[1]
            return [dict(zip(header, values, strict=False)) for _, values in itertools.islice(rows, n)]
    except WarmstartError:
        return []
    return []


def _check_columns(path: Path, available: list[str], columns: dict) -> None:
    if not available:
        raise WarmstartError(
            f"{path} is empty: it has no header row",
            "write a header row (e.g. text,label), then one row a line",
        )
    for column in (c for c in columns.values() if c is not None):
        if column not in available:
            raise WarmstartError(
                f"{path} has no column '{column}' (columns: {', '.join(map(str, available)) or 'none'})",
                column_fix(columns, column, available, first_rows(path)),
            )


def _scalars(value) -> bool:
    """A list of labels: strings, numbers or booleans (a JSON list, a Parquet list column)."""
    return isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value)


def _record(row: dict, columns: dict, path: Path, where: str, labels: LabelCheck | None) -> dict | None:
    """A record from a row (dict column -> value); None if its text is empty. ``labels``: canonical labels."""
    label = columns.get("label")
    if label is not None and labels is not None and _scalars(row.get(label)):  # ["a", "b"]: multi-label
        row = {**row, label: MultiLabel([labels.label(v, where) for v in row[label]])}
    for column in columns.values():
        if column is not None and isinstance(row.get(column), list | dict):
            type_name = type(row[column]).__name__
            raise WarmstartError(
                f"{where} of {path}: column '{column}' holds a {type_name}, not a string or number",
                "write one text per field; several labels as one string joined by '|' (task.label_separator)",
            )
    text = row.get(columns["text"])
    if text is None or not str(text).strip():
        if columns.get("label") is not None and str(row.get(columns["label"]) or "").strip():
            raise WarmstartError(
                f"{where} of {path} has a label but an empty '{columns['text']}'",
                "fill in the text or remove that row",
            )
        return None
    record = {"text": str(text)}
    for field in ("text_pair", "label"):
        column = columns.get(field)
        if column is None:
            continue
        value = row.get(column)
        if isinstance(value, MultiLabel):
            record[field] = value
            continue
        if field == "label" and labels is not None and labels.empty and isinstance(value, str):
            if not value.strip():  # multi-label: a row none of the labels apply to
                record[field] = ""
                continue
        if value is None or not str(value).strip():
            several = " (multi-label rows that no label applies to: task.problem=multi_label)"
            raise WarmstartError(
                f"{where} of {path} has no value for column '{column}'",
                "fill it in or remove that row" + (several if field == "label" else ""),
            )
        if field == "text_pair":
            record[field] = str(value)
        else:
            record[field] = labels.label(value, where) if labels is not None else str(value).strip()
    return record


def read_file(
    path: str | Path,
    *,
    text_column: str = "text",
    text_pair_column: str | None = None,
    label_column: str | None = None,
    txt_mode: str = "line",
    canonical_labels: bool = True,
    empty_labels: bool = False,
) -> Iterator[dict]:
    """Stream the records of a local file. Path, extension and columns are checked before this returns.

    Labels are class names in one spelling (``data/labels.py``) unless ``canonical_labels`` is False (the
    label column then holds free text, e.g. text-to-text targets, kept as written but stripped).
    ``empty_labels`` (multi-label): an empty label is kept as ``""``, a row none of the labels apply to."""
    path = check_path(path)
    suffix = compressed.kind(path)
    rows = json_records(path) if suffix == ".json" else None
    if suffix not in TABLE_EXTENSIONS and rows is None:
        raise WarmstartError(
            f"{path} is not a text or table file", f"use one of {', '.join(TABLE_EXTENSIONS)}"
        )
    if suffix == ".txt":
        if txt_mode not in TXT_MODES:
            raise WarmstartError(f"unknown txt_mode '{txt_mode}'", f"use one of {', '.join(TXT_MODES)}")
        return _read_txt(path, txt_mode)
    columns = {"text": text_column, "text_pair": text_pair_column, "label": label_column}
    labels = LabelCheck(path, empty_labels) if label_column and canonical_labels else None
    if rows is not None:  # a .json list of rows: the first row's keys now, then row by row as JSON lines
        _check_columns(path, list(rows[0]), columns)
        return _objects(((row, f"row {n}") for n, row in enumerate(rows, 1)), path, columns, labels)
    if suffix != ".jsonl":  # JSONL columns are checked line by line
        _check_columns(path, file_columns(path), columns)
    reader = {".jsonl": _read_jsonl, ".parquet": _read_parquet}.get(suffix, _read_csv)
    return reader(path, columns, labels)


def _read_txt(path: Path, mode: str) -> Iterator[dict]:
    lines = Lines(path)
    paragraph: list[str] = []
    size, first = 0, 0
    for line in lines:
        line = line.strip()
        if mode == "line":
            if line:
                yield {"text": line}
        elif line:
            size, first = size + len(line) + 1, first or lines.number
            if size > lines.limit:  # a paragraph is one document: bounded like a line
                fix = "put blank lines between its paragraphs, or split it into shorter documents"
                raise too_long(path, first, lines.limit, "the paragraph starting on line", fix)
            paragraph.append(line)
        elif paragraph:
            yield {"text": "\n".join(paragraph)}
            paragraph, size, first = [], 0, 0
    if paragraph:
        yield {"text": "\n".join(paragraph)}
    lines.warn()


def _read_jsonl(path: Path, columns: dict, labels: LabelCheck | None) -> Iterator[dict]:
    lines = Lines(path)
    numbered = ((n, line) for n, line in enumerate(lines, 1) if line.strip())
    yield from _objects(
        ((json_object(line, path, n), f"line {n}") for n, line in numbered), path, columns, labels
    )
    lines.warn()


def _objects(rows, path: Path, columns: dict, labels: LabelCheck | None) -> Iterator[dict]:
    """Records of (object, where) rows: JSON lines, or the rows of a .json list."""
    wanted = [c for c in columns.values() if c is not None]
    for obj, where in rows:
        missing = [c for c in wanted if c not in obj]
        if missing:
            raise WarmstartError(
                f"{where} of {path} has no key '{missing[0]}' (keys: {', '.join(obj) or 'none'})",
                column_fix(columns, missing[0], list(obj)),
            )
        record = _record(obj, columns, path, where, labels)
        if record is not None:
            yield record


def _read_csv(path: Path, columns: dict, labels: LabelCheck | None) -> Iterator[dict]:
    lines = Lines(path)
    rows = csv_rows(iter(lines), compressed.kind(path), path)
    _, header = next(rows, (0, []))
    for number, values in rows:
        if not values:
            continue
        if any(v.strip() for v in values[len(header) :]):
            raise WarmstartError(
                f"line {number} of {path} has {len(values)} fields but the header has {len(header)}",
                "quote fields that hold the delimiter (TSV: no tabs inside fields), or add the column",
            )
        short = len(values) < len(header) and any(v.startswith('"') for v in values)
        if short and compressed.kind(path) == ".tsv":  # a quoted field with a newline, read the GLUE way
            raise WarmstartError(
                f"line {number} of {path} has {len(values)} of {len(header)} fields and a field that opens a "
                "quote: TSV is read without quoting (the GLUE convention), so no field can hold a newline",
                "save it as CSV (quoted fields may hold newlines), or take the newlines out of that field",
            )
        record = _record(dict(zip(header, values)), columns, path, f"line {number}", labels)
        if record is not None:
            yield record
    lines.warn()


def _read_parquet(path: Path, columns: dict, labels: LabelCheck | None) -> Iterator[dict]:
    wanted = list(dict.fromkeys(c for c in columns.values() if c is not None))
    offset = 0
    file = parquet_file(path)
    label_column = columns.get("label")
    names = class_names(file, label_column)
    for batch in file.iter_batches(batch_size=4096, columns=wanted):
        for i, row in enumerate(batch.to_pylist()):
            if names is not None:
                row[label_column] = named(row[label_column], names)
            record = _record(row, columns, path, f"row {offset + i + 1}", labels)
            if record is not None:
                yield record
        offset += batch.num_rows
