"""``hf:NAME[:CONFIG]``: a dataset from the Hugging Face hub through the `datasets` library (offline:
its cache); and a folder `datasets` wrote with ``save_to_disk`` (a DatasetDict, or a Dataset: one train
split), read by ``load_from_disk``.

A corpus (read with no label column: `prepare`, `pretrain --corpus`, `tokenizer train`) is streamed
(``streaming=True``): its rows come as they download, nothing is written to the `datasets` cache, and a
corpus larger than the disk prepares. Offline (HF_HUB_OFFLINE), the cached copy is read whole. A labeled set
is loaded whole: finetuning reads it again every epoch.

A machine whose resolver does not know the hub's host (no network, a sandbox) is taken as offline, as if
HF_HUB_OFFLINE were set: `datasets` would otherwise retry the hub for about 25 s before reading its cache or
failing. The probe is one name lookup, skipped when a proxy is set (the proxy resolves names)."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import urlparse

from warmstart.data import splits
from warmstart.data.dataset import DataOptions, Dataset
from warmstart.data.labels import MultiLabel, canonical_label
from warmstart.data.readers import column_fix
from warmstart.errors import WarmstartError

OFFLINE = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
PROXIES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy")
PROBE_SECONDS = 3.0  # a resolver slower than this is left to `datasets`
UNREACHABLE = {
    "OfflineModeIsEnabled",
    "LocalEntryNotFoundError",
    "ConnectionError",
    "Timeout",
    "ConnectTimeout",
}


def _named(value, to_name):
    """A ClassLabel's name for its integer (``to_name``: the feature's int2str, or None)."""
    return to_name(value) if to_name and isinstance(value, int) else value


def _label(value, name: str) -> str:
    """The class text of a label (``data/labels.py``: 1 and 1.0 are one class "1")."""
    if not isinstance(value, str | int | float):
        return str(value)
    try:
        return canonical_label(value)
    except ValueError as exc:
        raise WarmstartError(f"hf:{name}: {exc}", "pick a split or config whose labels are set") from None


def saved_folder(path: str) -> bool:
    """Whether ``path`` is a folder `datasets` wrote with ``save_to_disk`` (a DatasetDict or a Dataset)."""
    folder = Path(path)
    return folder.is_dir() and any((folder / f).is_file() for f in ("dataset_dict.json", "state.json"))


def _from_disk(datasets, path: str):
    try:
        loaded = datasets.load_from_disk(path)
    except Exception as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise WarmstartError(
            f"could not read {path}, a folder of `datasets`' save_to_disk: {reason}",
            "save it again with save_to_disk, or pass a file (CSV, JSONL, Parquet)",
        ) from None
    return loaded if isinstance(loaded, dict) else {"train": loaded}  # a Dataset: one split, the rest carved


def _load(datasets, name: str, config: str, stream: bool):
    """The DatasetDict (``stream``: an IterableDatasetDict), or one clear line. Offline (HF_HUB_OFFLINE or
    HF_DATASETS_OFFLINE set) a corpus is read from the cache, whole, as a stream cannot be; an unreachable
    hub is said at once, not asked twice."""
    offline = hf_offline(*OFFLINE) or no_hub(f"hf:{name}", name)
    with offline_flags(datasets, offline):
        return _load_now(datasets, name, config, stream, offline)


_PROBED: dict[str, bool] = {}  # host -> unresolvable, once a process


def no_hub(what: str, name: str) -> bool:
    """Whether the hub's host cannot be resolved here (said once on stderr); False for ``name`` a local
    folder or file (`datasets` reads it without the hub), with a proxy set, or when the lookup takes longer
    than PROBE_SECONDS."""
    if os.path.exists(name) or any(os.environ.get(v) for v in PROXIES):
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"
    if host in _PROBED:
        return _PROBED[host]
    failed: list[bool] = []

    def look() -> None:
        try:
            socket.getaddrinfo(host, 443)
        except socket.gaierror:
            failed.append(True)
        except OSError:
            pass

    probe = threading.Thread(target=look, daemon=True)
    probe.start()
    probe.join(PROBE_SECONDS)
    if failed:
        said = f"{what}: {host} cannot be resolved here: reading the Hugging Face cache (as HF_HUB_OFFLINE=1)"
        print(said, file=sys.stderr)
    _PROBED[host] = bool(failed)
    return _PROBED[host]


@contextlib.contextmanager
def offline_flags(datasets, offline: bool | None = None):
    """Offline variables set after `datasets` was imported (a notebook's os.environ, a test's) count too:
    `datasets` and `huggingface_hub` read them once, at import, and would otherwise ask the hub through
    about 25 s of retries before the cached copy or the error. Their flags follow the environment (or
    ``offline``) for the call, then are put back."""
    if not (hf_offline(*OFFLINE) if offline is None else offline):
        yield
        return
    from huggingface_hub import constants

    flags = [m for m in (getattr(datasets, "config", None), constants) if hasattr(m, "HF_HUB_OFFLINE")]
    saved = [m.HF_HUB_OFFLINE for m in flags]
    for m in flags:
        m.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        for m, value in zip(flags, saved):
            m.HF_HUB_OFFLINE = value


def _load_now(datasets, name: str, config: str, stream: bool, offline: bool):
    if stream and not offline:
        try:
            return datasets.load_dataset(name, config or None, streaming=True)
        except Exception as exc:
            if _unreachable(exc):
                raise _cannot_load(name, exc) from None
            # else a dataset that cannot stream: loaded whole below
    try:
        return datasets.load_dataset(name, config or None)
    except Exception as exc:  # offline, unknown name, bad config: all one clear line
        raise _cannot_load(name, exc) from None


def hf_offline(*variables: str) -> bool:
    """Whether one of Hugging Face's offline variables is set (hub/convert.py asks HF_HUB_OFFLINE)."""
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on") for v in variables)


def _unreachable(exc: Exception) -> bool:
    names = {type(e).__name__ for e in (exc, exc.__cause__, exc.__context__) if e is not None}
    return bool(names & UNREACHABLE) or isinstance(exc, ConnectionError) or "Couldn't reach" in str(exc)


def _cannot_load(name: str, exc: Exception) -> WarmstartError:
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
    return WarmstartError(
        f"could not load hf:{name}: {reason}",
        "check the name and your network, or download it and pass a local file",
    )


def hf_dataset(spec: str, options: DataOptions) -> Dataset:
    """``hf:NAME[:CONFIG]``, or the path of a ``save_to_disk`` folder (``saved_folder``)."""
    local = saved_folder(spec)
    name, _, config = (spec, "", "") if local else spec.removeprefix("hf:").partition(":")
    label = name if local else f"hf:{name}" + (f":{config}" if config else "")
    try:
        import datasets
    except ImportError:
        raise WarmstartError(
            f"hf:{name} needs the 'datasets' package, which is not installed",
            "pip install datasets  (or pip install 'warmstart[hf]')",
        ) from None
    stream = options.label_column is None
    loaded = _from_disk(datasets, name) if local else _load(datasets, name, config, stream=stream)
    parts = {key: loaded[key] for key in loaded.keys()}
    first = next(iter(parts.values()))
    columns = list(first.column_names or next(iter(first), {}))  # a stream may not know them before a row
    features = first.features or {}
    wanted = [c for c in (options.text_column, options.text_pair_column) if c is not None]
    for column in wanted:
        if column not in columns:
            raise WarmstartError(
                f"{label} has no column '{column}' (columns: {', '.join(columns)})",
                column_fix(
                    {"text": options.text_column, "text_pair": options.text_pair_column}, column, columns
                ),
            )
    labeled = options.label_column in columns
    kind = "labeled" if labeled else "corpus"
    feature = features.get(options.label_column) if labeled else None
    to_name = getattr(feature, "int2str", None) or getattr(getattr(feature, "feature", None), "int2str", None)

    def convert(rows: Iterable[dict]) -> Iterator[dict]:
        for row in rows:
            text = row[options.text_column]
            if not text or not str(text).strip():
                continue
            record = {"text": str(text)}
            if options.text_pair_column:
                record["text_pair"] = str(row[options.text_pair_column])
            if labeled:
                label = row[options.label_column]
                if isinstance(label, list):  # a Sequence feature: a multi-label row
                    record["label"] = MultiLabel([_label(_named(x, to_name), name) for x in label])
                else:
                    record["label"] = _label(_named(label, to_name), name)
            yield record

    validation, test = splits.resolve_fractions(kind, options.validation_fraction, options.test_fraction)
    carve = splits.carving(parts, options.split_seed, validation, test)  # official kept, the rest carved
    readers = {key: (lambda key=key: convert(parts[key])) for key in parts}

    def read_split(split: str) -> Iterator[dict]:
        return carve.read(readers, split)

    note = f"official splits: {', '.join(carve.kept) or 'none'}"
    if carve.carved:
        note += f"; {', '.join(carve.carved)} carved from {'train' if 'train' in parts else 'all rows'} by "
        note += splits.describe(carve.seed, carve.validation, carve.test)
    hub = f"Hugging Face dataset {name}" + (f" ({config})" if config else "")
    return Dataset(
        label,
        kind,
        f"a `datasets` folder (save_to_disk) at {name}" if local else hub,
        "as its source says" if local else "see the dataset card on the Hugging Face hub",
        name if local else f"https://huggingface.co/datasets/{name}",
        lambda: (r for s in splits.SPLITS for r in read_split(s)),
        options,
        read_split=read_split,
        read_routed=lambda wanted: carve.routed(readers, wanted),
        split_note=note,
    )
