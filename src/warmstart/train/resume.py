"""A resume is the same run: the settings of a resumed run are its saved ones, and its data is the data it
started on.

- ``resumed_settings``: the saved config.yaml with the resume command's flags and overrides on top. A
  setting that would change what the run computes (its data, model, schedule, seeds...) is refused with a
  line naming it. Operational ones (``OPERATIONAL``: the progress bar, the device, checkpoints kept) apply
  with a line saying so; recovery ones (``RECOVERY``: what the NaN guard's stop message tells a user to
  change, e.g. a lower ``train.lr`` after a divergence) apply from the checkpoint on, are said, and are
  written to config.yaml so that a later resume keeps them.
- ``write_fingerprint`` / ``check_fingerprint``: the run's data (each split's record count and a SHA-256 of
  its records, or of the token shards) stored in ``RUN/data.json`` when the run starts and checked on
  resume. A run written before this file existed resumes unchecked.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable
from pathlib import Path

from warmstart import config as C
from warmstart.atomic import write_atomic
from warmstart.data.shards import read_meta
from warmstart.errors import WarmstartError
from warmstart.train import distributed as ddp
from warmstart.train.rundir import hold, save_config, saved_config

FINGERPRINT_FILE = "data.json"
OPERATIONAL = {
    "train.progress",
    "train.device",
    "train.dist_timeout",
    "train.keep_last",
    "train.log_every",
    "eval_batch_size",
    "train.batch_size",  # per process: resuming on other processes, the global batch must stay (check_batch)
    "train.fsdp",
    "train.compile",
    "train.reuse_memory",
    "train.report_to",  # where the records also go; metrics.jsonl is the same
    "train.gradient_checkpointing",  # recomputes activations; the gradients are the same
}
RECOVERY = {"train.lr", "train.max_bad_steps", "train.clip_norm", "train.spike_factor"}


def flat(tree: dict, prefix: str = "") -> dict:
    """{"train": {"lr": 1}} -> {"train.lr": 1}."""
    out = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        out.update(flat(value, f"{name}.") if isinstance(value, dict) and value else {name: value})
    return out


def resumed_settings(run_dir: str | Path, flags: dict | None, overrides: Iterable[str], check=None) -> dict:
    """The resumed run's settings (see the module's docstring); WarmstartError for a setting that changes
    the run. ``check(settings)`` validates them (the command's config class) before any is saved."""
    saved = saved_config(Path(run_dir))
    with hold(run_dir):  # a run another process is training is refused before anything is read or said
        pass
    explicit = C.layered(saved=saved, flags=flags, overrides=list(overrides))
    explicit["out"] = str(run_dir)
    before, after = flat(saved), flat(explicit)
    changed = sorted(k for k in after if k != "out" and k in before and after[k] != before[k])
    changed += sorted(k for k in after if k not in before and after[k] is not None)
    refused = [k for k in changed if k not in OPERATIONAL | RECOVERY]
    if refused:
        what = ", ".join(f"{k} (was {_quote(before.get(k))}, now {_quote(after[k])})" for k in refused)
        raise WarmstartError(
            f"cannot resume {run_dir} with changed settings: {what}; a resume continues the same run",
            "drop these flags, or start a new run with --out (and --init to start from its weights)",
        )
    if check is not None:
        check(explicit)  # a bad value (train.lr=nan) is refused before config.yaml is touched
    main = ddp.rank() == 0
    for key in changed if main else ():
        effect = (
            "recovery setting, from the last checkpoint on" if key in RECOVERY else "does not change the run"
        )
        print(f"resume: {key}={C.short(after[key], 40)} ({effect})", file=sys.stderr)
    if main and any(k in RECOVERY for k in changed):
        save_config(Path(run_dir), C.merge(saved, _unflat({k: after[k] for k in changed if k in RECOVERY})))
    return explicit


def _quote(value) -> str:
    """A setting's value, short: a long text (a path) keeps its end, where the names differ."""
    if isinstance(value, str) and len(value) > 48:
        return repr("..." + value[-45:])
    return C.short(value, 48)


def _unflat(items: dict) -> dict:
    out: dict = {}
    for key, value in items.items():
        node = out
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return out


def records_fingerprint(splits: dict[str, list]) -> dict:
    """{split: {"records": n, "sha256": ...}} over each split's records (texts and labels), in order."""
    out = {}
    for split, rows in splits.items():
        digest = hashlib.sha256()
        for row in rows:
            digest.update(json.dumps(row, sort_keys=True, default=str, ensure_ascii=False).encode("utf-8"))
            digest.update(b"\n")
        out[split] = {"records": len(rows), "sha256": digest.hexdigest()}
    return out


def files_fingerprint(directory: Path, names: Iterable[str]) -> dict:
    """{name: {"bytes": size, "sha256": ...}} of the named files under ``directory`` (token shards)."""
    out = {}
    for name in sorted(names):
        path = directory / name
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 22):
                digest.update(chunk)
        out[name] = {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}
    return out


def shards_fingerprint(directory: Path) -> dict:
    """The token shards of every split under ``directory``: their files' sizes and hashes."""
    names = []
    for split, info in read_meta(directory)["splits"].items():
        names += [shard["file"] for shard in info["shards"]] + [info.get("docs_file", f"{split}.docs.bin")]
    return files_fingerprint(Path(directory), names)


def write_fingerprint(run_dir: Path, fingerprint: dict) -> None:
    write_atomic(
        Path(run_dir) / FINGERPRINT_FILE, lambda f: f.write(json.dumps(fingerprint, indent=1)), text=True
    )


def check_fingerprint(run_dir: Path, fingerprint: dict) -> None:
    """Refuse to resume ``run_dir`` on data other than the data it started on."""
    path = Path(run_dir) / FINGERPRINT_FILE
    if not path.is_file():
        return  # a run from before data.json: nothing to compare with
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise WarmstartError(f"{path} is damaged (not JSON)", "restore it, or start a new run") from None
    if saved == fingerprint:
        return
    diffs = [
        name for name in sorted(set(saved) | set(fingerprint)) if saved.get(name) != fingerprint.get(name)
    ]
    name = diffs[0]
    source = "split" if "records" in (saved.get(name) or fingerprint.get(name) or {}) else "file"
    raise WarmstartError(
        f"cannot resume {run_dir}: its data changed since the run started ({source} {name}: "
        f"{_said(saved.get(name))} then, {_said(fingerprint.get(name))} now)",
        "restore the data the run started on, or start a new run with --out",
    )


def _said(entry: dict | None) -> str:
    if entry is None:
        return "absent"
    size = f"{entry['records']:,} records" if "records" in entry else f"{entry.get('bytes', 0):,} bytes"
    return f"{size}, sha256 {entry.get('sha256', '')[:12]}"
