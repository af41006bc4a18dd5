"""Word vector files: the word2vec text and binary formats (as gensim and the C tool write them) and .npy.

- text (``.txt``, ``.vec``): a header line ``N D``, then ``word v1 ... vD`` per line. Values are written as
  the shortest decimal that reads back to the same float32, byte for byte what gensim's
  ``save_word2vec_format(binary=False)`` writes.
- binary (``.bin``): the header line, then per word ``word`` + ``b" "`` + D little-endian float32s. gensim
  writes no newline after a vector and neither do we; the C tool writes one, and the reader skips it
  (gensim's reader does the same), so files go both ways.
- npy (``.npy``): ``PATH.npy`` holds the matrix, ``PATH.vocab.txt`` one ``word count`` line per row (just
  ``word`` when there are no counts). The only format that keeps counts; text and binary load with
  ``counts=None``.

Rows are written in the order of ``wv.words`` and read back in file order. Words must be non-empty and
contain no whitespace (the formats separate fields with spaces). Files are written atomically.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from warmstart.atomic import write_atomic
from warmstart.errors import WarmstartError
from warmstart.nn.sizing import available_memory
from warmstart.word2vec import glove
from warmstart.word2vec.vectors import WordVectors

SUFFIXES = {".txt": "text", ".vec": "text", ".bin": "binary", ".npy": "npy"}
FLOAT = np.dtype("<f4")


def detect(path: str | Path, fmt: str | None = None) -> str:
    """The format name: ``fmt`` when given, else from the file suffix."""
    if fmt is not None:
        if fmt not in WRITERS:
            raise WarmstartError(f"unknown word vector format '{fmt}'", f"use one of {', '.join(WRITERS)}")
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise WarmstartError(
            f"cannot tell the word vector format of {path} from its suffix",
            f"name it {', '.join(SUFFIXES)} or pass the format ({', '.join(WRITERS)})",
        )
    return SUFFIXES[suffix]


def save(wv: WordVectors, path: str | Path, fmt: str | None = None) -> Path:
    """Write ``wv`` to ``path`` in ``fmt`` (text, binary or npy; None: from the suffix). Returns the path
    of the (main) file written."""
    fmt = detect(path, fmt)
    for n, word in enumerate(wv.words, start=1):
        if not word or any(ch.isspace() for ch in word):
            raise WarmstartError(
                f"word {n} ({word!r}) is empty or contains whitespace, which word vector files cannot hold",
                "replace the whitespace (e.g. by '_') before saving",
            )
    return WRITERS[fmt](wv, Path(path))


def load(path: str | Path, fmt: str | None = None) -> WordVectors:
    """Read a word vector file (format from ``fmt`` or the suffix)."""
    fmt = detect(path, fmt)
    path = Path(path)
    main = _npy_paths(path)[0] if fmt == "npy" else path
    if not main.is_file():
        raise WarmstartError(f"the word vector file {main} does not exist", "check the path")
    return READERS[fmt](path)


RUN_VECTORS = "vectors.npy"


def load_vectors(spec: str | Path) -> WordVectors:
    """Word vectors from a `warmstart word2vec train` run directory or a .txt/.vec/.bin/.npy file, or
    ``glove`` (no such file or directory there): GloVe 6B 50d from its PyPI package (word2vec/glove.py)."""
    path = Path(spec)
    if str(spec) == glove.NAME and not path.exists():
        return glove.load_glove()
    if path.is_dir():
        if not (path / RUN_VECTORS).is_file():
            raise WarmstartError(
                f"{path} is a directory without {RUN_VECTORS}",
                "pass a `warmstart word2vec train` run directory or a vectors file",
            )
        path = path / RUN_VECTORS
    return load(path)


def _header(wv: WordVectors) -> bytes:
    return f"{len(wv)} {wv.dim}\n".encode()


def _save_text(wv: WordVectors, path: Path) -> Path:
    def write(fh):
        fh.write(_header(wv))
        for word, row in zip(wv.words, wv.vectors):
            fh.write(f"{word} {' '.join(map(str, row))}\n".encode())

    return write_atomic(path, write)


def _save_binary(wv: WordVectors, path: Path) -> Path:
    def write(fh):
        fh.write(_header(wv))
        for word, row in zip(wv.words, wv.vectors.astype(FLOAT, copy=False)):
            fh.write(word.encode() + b" " + row.tobytes())

    return write_atomic(path, write)


def _npy_paths(path: Path) -> tuple[Path, Path]:
    base = path.with_suffix("") if path.suffix.lower() == ".npy" else path
    return base.with_name(base.name + ".npy"), base.with_name(base.name + ".vocab.txt")


def _save_npy(wv: WordVectors, path: Path) -> Path:
    matrix, vocab = _npy_paths(path)
    if wv.counts is None:
        lines = [f"{w}\n" for w in wv.words]
    else:
        lines = [f"{w} {int(c)}\n" for w, c in zip(wv.words, wv.counts)]
    write_atomic(vocab, lambda fh: fh.write("".join(lines).encode()))
    return write_atomic(matrix, lambda fh: np.save(fh, wv.vectors.astype(np.float32, copy=False)))


def _bad(path: Path, where: str, problem: str, fix: str = "") -> WarmstartError:
    at = f"{path} {where}" if where else str(path)
    return WarmstartError(
        f"{at}: {problem}", fix or "the file is damaged or not in this format; write it again"
    )


def _bad_binary(path: Path, where: str, problem: str) -> WarmstartError:
    fix = (
        "check that the header 'N D' matches the vectors (or that it is a binary file at all); write it again"
    )
    return _bad(path, where, problem, fix)


def _read_header(path: Path, line: bytes) -> tuple[int, int]:
    parts = line.split()
    try:
        n, d = (int(x) for x in parts)
    except ValueError:
        n = d = -1
    if len(parts) != 2 or n < 0 or d < 1:
        shown = line[:60].decode("utf-8", "replace").rstrip()
        raise _bad(path, "line 1", f"expected the header 'N D' (vector count, dimension), got {shown!r}")
    return n, d


def _check_size(path: Path, n: int, d: int, row_bytes: int) -> None:
    """The header's N x D against the file (each row takes at least ``row_bytes``) and free memory, before
    the N x D array is allocated: a header claiming 10^9 rows is one line, not an allocator failure."""
    size = path.stat().st_size
    if n * d * 4 > 1 << 26 and n * row_bytes > size:  # small arrays: the reader names the short line
        raise _bad(
            path,
            "line 1",
            f"the header announces {n:,} vectors of {d:,} values, more than its {size:,} bytes hold",
        )
    free = available_memory()
    if free is not None and n * d * 4 > free:
        raise _bad(path, "line 1", f"{n:,} x {d:,} vectors need {n * d * 4 / 1e9:,.1f} GB, more than is free")


def _decode(path: Path, where: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _bad(path, where, f"not UTF-8 ({e.reason} at byte {e.start})") from None


def _decode_binary(path: Path, where: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _bad_binary(path, where, f"the word is not UTF-8 ({e.reason})") from None


def _make(path: Path, words: list[str], vectors: np.ndarray, counts=None, where=lambda i: f"row {i + 1}"):
    first: dict[str, int] = {}
    for i, w in enumerate(words):
        if w in first:
            raise _bad(path, where(i), f"the word {w!r} appears again (first at {where(first[w])})")
        first[w] = i
    return WordVectors(words, vectors, counts)


def _load_text(path: Path) -> WordVectors:
    with open(path, "rb") as fh:
        n, d = _read_header(path, fh.readline())
        _check_size(path, n, d, 2 + 2 * d)  # "w 0 0\n": a word, then a space and a digit per value
        words: list[str] = []
        vectors = np.empty((n, d), dtype=np.float32)
        for line_no, raw in enumerate(fh, start=2):
            if len(words) == n:
                if raw.strip():
                    raise _bad(path, f"line {line_no}", f"more rows than the {n} the header announces")
                continue
            parts = _decode(path, f"line {line_no}", raw).rstrip("\r\n").rstrip(" ").split(" ")
            if len(parts) - 1 != d:
                raise _bad(path, f"line {line_no}", f"{len(parts) - 1} values where the header says {d}")
            try:
                vectors[len(words)] = [float(x) for x in parts[1:]]
            except ValueError:
                raise _bad(path, f"line {line_no}", "a value is not a number") from None
            words.append(parts[0])
    if len(words) < n:
        raise _bad(path, f"line {len(words) + 2}", f"the file ends after {len(words)} of {n} rows")
    return _make(path, words, vectors, where=lambda i: f"line {i + 2}")


def _load_binary(path: Path) -> WordVectors:
    data = path.read_bytes()
    end = data.find(b"\n")
    n, d = _read_header(path, data[: end if end >= 0 else len(data)])
    pos, size = (end + 1 if end >= 0 else len(data)), 4 * d
    _check_size(path, n, d, 2 + size)  # a word, a space and D float32s
    words: list[str] = []
    vectors = np.empty((n, d), dtype=np.float32)
    for i in range(n):
        while data[pos : pos + 1] == b"\n":  # the C tool ends each vector with a newline; gensim does not
            pos += 1
        space = data.find(b" ", pos)
        if space < 0 or len(data) - (space + 1) < size:
            raise _bad_binary(path, f"vector {i + 1} (byte {pos})", f"the file ends after {i} of {n} vectors")
        word = _decode_binary(path, f"vector {i + 1} (byte {pos})", data[pos:space])
        if not word or "\n" in word:
            raise _bad_binary(path, f"vector {i + 1} (byte {pos})", "an empty word or one with a newline")
        words.append(word)
        vectors[i] = np.frombuffer(data, dtype=FLOAT, count=d, offset=space + 1)
        pos = space + 1 + size
    if data[pos:].strip():
        raise _bad_binary(path, f"byte {pos}", f"more data after the {n} vectors the header announces")
    return _make(path, words, vectors, where=lambda i: f"vector {i + 1}")


def _load_npy(path: Path) -> WordVectors:
    matrix_path, vocab_path = _npy_paths(path)
    if not vocab_path.is_file():
        raise WarmstartError(f"{matrix_path} has no word list {vocab_path}", "save the vectors again")
    try:
        matrix = np.load(matrix_path, allow_pickle=False)
    except (ValueError, EOFError, OSError) as e:  # EOFError: an empty file
        raise _bad(matrix_path, "", f"not a readable .npy matrix ({e})") from None
    if not isinstance(matrix, np.ndarray):  # an .npz archive
        raise _bad(matrix_path, "", "a .npz archive, not one .npy matrix")
    if matrix.ndim != 2 or matrix.dtype.kind != "f":
        raise _bad(matrix_path, "", f"expected a 2-D float matrix, got {matrix.dtype} {matrix.shape}")
    words, counts = [], []
    lines = _decode(vocab_path, "", vocab_path.read_bytes()).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line_no, line in enumerate(lines, start=1):
        parts = line.rstrip("\r").split(" ")
        if len(parts) not in (1, 2) or not parts[0] or (line_no > 1 and len(parts) != 1 + bool(counts)):
            raise _bad(vocab_path, f"line {line_no}", "expected 'word count' (or just 'word') like line 1")
        if len(parts) == 2:
            if not parts[1].isdigit():
                raise _bad(vocab_path, f"line {line_no}", f"the count {parts[1]!r} is not a whole number")
            counts.append(int(parts[1]))
        words.append(parts[0])
    if len(words) != matrix.shape[0]:
        raise _bad(vocab_path, f"line {len(words)}", f"{len(words)} words for {matrix.shape[0]} matrix rows")
    counts_array = np.asarray(counts, dtype=np.int64) if counts else None
    return _make(vocab_path, words, matrix, counts_array, where=lambda i: f"line {i + 1}")


WRITERS = {"text": _save_text, "binary": _save_binary, "npy": _save_npy}
READERS = {"text": _load_text, "binary": _load_binary, "npy": _load_npy}
