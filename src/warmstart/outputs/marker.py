"""The ``.warmstart`` marker: a directory warmstart made says so, and what it is.

``--overwrite`` replaces only a directory with a marker (or one an earlier version of warmstart made,
recognised by its files: ``made_by_warmstart``); anything else is described and left alone. The marker
also lists the files later commands wrote into the directory as their outputs (``evaluate RUN --out
RUN/metrics.json``), which those commands may write again."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from warmstart.atomic import write_atomic
from warmstart.errors import WarmstartError

MARKER = ".warmstart"
TOKENIZER_FILES = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"}


def mark(directory: str | Path, what: str) -> Path:
    """Write the marker of a directory warmstart made (``what`` it is: run, export, import, tokenizer, shards,
    word2vec, probe, study, demo)."""
    path = Path(directory) / MARKER
    data = {"made_by": "warmstart", "kind": what, "outputs": _read(Path(directory)).get("outputs", [])}
    write_atomic(path, lambda fh: fh.write(json.dumps(data, indent=1) + "\n"), text=True)
    return path


def _read(directory: Path) -> dict:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((directory / MARKER).read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("made_by") == "warmstart":
            return data
    return {}


def _json(path: Path) -> dict:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    return {}


def _head(path: Path) -> str:
    with contextlib.suppress(OSError):
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(4096)
    return ""


def made_by_warmstart(directory: str | Path) -> str | None:
    """What a directory warmstart made is (run, study, ...), else None. Directories from before the marker
    are known by their files: a run's config.yaml, a study's study.json, shards' meta.json, a model's
    config.json with its warmstart block, a tokenizer's files alone, a probe's probe.json."""
    d = Path(directory)
    if not d.is_dir():
        return None
    marked = _read(d).get("kind")
    if marked:
        return str(marked)
    names = {p.name for p in d.iterdir()}
    if "config.yaml" in names:
        return "run"
    if "study.json" in names:
        return "study"
    if "probe.json" in names or "prompting.json" in names:
        return "probe"
    if "meta.json" in names and "splits" in _json(d / "meta.json"):
        return "shards"
    if "config.json" in names and "warmstart" in _json(d / "config.json"):
        return "model"
    if {"config.json", "README.md"} <= names and "warmstart" in _head(d / "README.md"):
        return "export"  # an export's hub card names the library that wrote it
    if "tokenizer.json" in names and names <= TOKENIZER_FILES | {"README.md"}:
        return "tokenizer"
    return None


def refuse_foreign(path: str | Path, flag: str = "--out") -> None:
    """``--overwrite`` of ``path``: refused, with nothing changed, unless it is empty, absent or a directory
    warmstart made. The error says what is there."""
    d = Path(path)
    if not d.is_dir() or made_by_warmstart(d):
        return
    entries = sorted(p.name + ("/" if p.is_dir() else "") for p in d.iterdir())
    if not entries:
        return
    count = f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}"
    shown = ", ".join(entries[:4]) + (f" and {len(entries) - 4} more" if len(entries) > 4 else "")
    raise WarmstartError(
        f"{flag} {path} is a directory warmstart did not make ({count}: {shown}); "
        "--overwrite replaces only a run, export, tokenizer, shards or study directory that warmstart made",
        f"choose another {flag}, or move those files away yourself (nothing was changed)",
    )


def record_output(directory: Path, output: Path) -> None:
    """Note in ``directory``'s marker that a command wrote ``output`` inside it (it may write it again)."""
    what = made_by_warmstart(directory)
    if not what:
        return
    data = _read(directory) or {"made_by": "warmstart", "kind": what, "outputs": []}
    rel = str(output.relative_to(directory))
    if rel not in data.setdefault("outputs", []):
        data["outputs"].append(rel)
        text = json.dumps(data, indent=1) + "\n"
        with contextlib.suppress(OSError):
            write_atomic(directory / MARKER, lambda fh: fh.write(text), text=True)


def recorded_outputs(directory: Path) -> set[Path]:
    return {directory / rel for rel in _read(directory).get("outputs", []) if isinstance(rel, str)}
