"""Compressed text files: ``.gz`` (gzip) and ``.zst`` (Zstandard) around a .txt, .jsonl, .csv or .tsv file.

A file is decompressed as it is read, never whole into memory: ``data.jsonl.gz`` is read line by line like
``data.jsonl``. Its kind is the suffix inside the compression (``kind(Path("a.csv.gz")) == ".csv"``).
Zstandard needs the ``zstandard`` package (``pip install zstandard``, or the ``zst`` extra); without it a
``.zst`` file is refused with that line. A damaged file (not gzip, cut short, a bad checksum) is refused with
its name and the line reached, when the damage is read.
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path
from typing import BinaryIO

from warmstart.errors import WarmstartError

COMPRESSIONS = {".gz": "gzip", ".zst": "Zstandard"}
# suffixes that look like a compression this reader does not know
OTHER_COMPRESSIONS = (".bz2", ".xz", ".lzma", ".lz4", ".zip", ".7z", ".br", ".z", ".tgz", ".zstd")


def compression(path: str | Path) -> str | None:
    """The compression suffix of ``path`` (``.gz`` or ``.zst``), or None for a plain file."""
    suffix = Path(path).suffix.lower()
    return suffix if suffix in COMPRESSIONS else None


def kind(path: str | Path) -> str:
    """The file's kind as its suffix: the one inside a known compression (``a.jsonl.gz`` -> ``.jsonl``)."""
    path = Path(path)
    if compression(path):
        return Path(path.stem).suffix.lower()
    return path.suffix.lower()


def stem(path: str | Path) -> str:
    """The name without its kind and compression suffixes (``train.jsonl.gz`` -> ``train``)."""
    path = Path(path)
    return Path(path.stem).stem if compression(path) else path.stem


class _ZstdStream(io.RawIOBase):
    """Zstandard frames decompressed as they are read; input that ends inside a frame is an error (the
    library's stream reader would end quietly there, handing a cut last line on as if it were whole)."""

    def __init__(self, raw: BinaryIO, zstandard):
        self._raw, self._zstd = raw, zstandard
        self._frame = zstandard.ZstdDecompressor().decompressobj()
        self._pending, self._started = b"", False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            chunk = self._raw.read(1 << 16)
            if not chunk:
                if self._started and not self._frame.eof:
                    raise EOFError("the file ends inside a Zstandard frame (cut short)")
                return 0
            while chunk:
                if self._frame.eof:  # the next of several concatenated frames
                    self._frame = self._zstd.ZstdDecompressor().decompressobj()
                self._started = True
                self._pending += self._frame.decompress(chunk)
                chunk = self._frame.unused_data if self._frame.eof else b""
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def _zstd_reader(raw: BinaryIO, path: Path) -> BinaryIO:
    try:
        import zstandard
    except ImportError:
        raw.close()
        raise WarmstartError(
            f"{path} is Zstandard-compressed and the zstandard package is not installed",
            "pip install zstandard (or pip install 'warmstart[zst]'), or decompress it: zstd -d FILE",
        ) from None
    return io.BufferedReader(_ZstdStream(raw, zstandard), buffer_size=1 << 16)


def open_binary(path: str | Path) -> BinaryIO:
    """``path`` opened for reading bytes, decompressed as it is read (.gz, .zst) or as it is."""
    path = Path(path)
    which = compression(path)
    raw = open(path, "rb")
    if which == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if which == ".zst":
        return _zstd_reader(raw, path)
    return raw


def read_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a damaged compressed stream raises while it is read."""
    errors: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error)
    try:
        import zstandard

        errors += (zstandard.ZstdError,)
    except ImportError:
        pass
    return errors


def damaged(path: Path, line: int, exc: BaseException) -> WarmstartError:
    """The error for a compressed file that could not be read past ``line`` (0: not even the start)."""
    name = COMPRESSIONS.get(compression(path) or "", "compressed")
    where = f" after line {line}" if line else ""
    tool = "gzip -t" if name == "gzip" else "zstd -t"
    return WarmstartError(
        f"{path} is not a readable {name} file{where} ({exc or type(exc).__name__})",
        f"check it with {tool} {path.name}, or compress the file again",
    )


def refuse_unknown(path: Path, kinds: tuple[str, ...]) -> None:
    """Refuse ``a.jsonl.bz2`` and the like with one line naming the compressions that are read."""
    suffix = path.suffix.lower()
    if suffix in OTHER_COMPRESSIONS:
        raise WarmstartError(
            f"unknown compression '{suffix}': {path}",
            f"compress it with gzip (.gz) or zstd (.zst), or decompress it (files read: "
            f"{', '.join(kinds)}; text and tables also as .gz or .zst)",
        )


def shown_suffix(path: Path) -> str:
    """The suffix as the user wrote it, with the kind inside a compression (``.jsonl.gz``)."""
    return "".join(path.suffixes[-2:]) if compression(path) else path.suffix
