"""``hf:NAME[:CONFIG]``: a dataset from the Hugging Face hub through the `datasets` library (offline:
its cache).

A corpus (read with no label column: `prepare`, `pretrain --corpus`, `tokenizer train`) is streamed
(``streaming=True``): its rows come as they download, nothing is written to the `datasets` cache, and a
corpus larger than the disk prepares. Offline (HF_HUB_OFFLINE), the cached copy is read whole. A labeled set
is loaded whole: finetuning reads it again every epoch."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator

from warmstart.data import splits
from warmstart.data.dataset import DataOptions, Dataset
from warmstart.data.labels import canonical_label
from warmstart.errors import WarmstartError

OFFLINE = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
UNREACHABLE = {
    "OfflineModeIsEnabled",
    "LocalEntryNotFoundError",
    "ConnectionError",
    "Timeout",
    "ConnectTimeout",
}


def _label(value, name: str) -> str:
    """The class text of a label (``data/labels.py``: 1 and 1.0 are one class "1")."""
    if not isinstance(value, str | int | float):
        return str(value)
    try:
        return canonical_label(value)
    except ValueError as exc:
        raise WarmstartError(f"hf:{name}: {exc}", "pick a split or config whose labels are set") from None


def _load(datasets, name: str, config: str, stream: bool):
    """The DatasetDict (``stream``: an IterableDatasetDict), or one clear line. Offline (HF_HUB_OFFLINE or
    HF_DATASETS_OFFLINE set) a corpus is read from the cache, whole, as a stream cannot be; an unreachable
    hub is said at once, not asked twice."""
    with offline_flags(datasets):
        return _load_now(datasets, name, config, stream)


@contextlib.contextmanager
def offline_flags(datasets):
    """Offline variables set after `datasets` was imported (a notebook's os.environ, a test's) count too:
    `datasets` and `huggingface_hub` read them once, at import, and would otherwise ask the hub through
    about 25 s of retries before the cached copy or the error. Their flags follow the environment for the
    call, then are put back."""
    if not hf_offline(*OFFLINE):
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


def _load_now(datasets, name: str, config: str, stream: bool):
    if stream and not hf_offline(*OFFLINE):
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
    name, _, config = spec.removeprefix("hf:").partition(":")
    try:
        import datasets
    except ImportError:
        raise WarmstartError(
            f"hf:{name} needs the 'datasets' package, which is not installed",
            "pip install datasets  (or pip install 'warmstart[hf]')",
        ) from None
    loaded = _load(datasets, name, config, stream=options.label_column is None)
    parts = {key: loaded[key] for key in loaded.keys()}
    first = next(iter(parts.values()))
    columns = list(first.column_names or next(iter(first), {}))  # a stream may not know them before a row
    features = first.features or {}
    wanted = [c for c in (options.text_column, options.text_pair_column) if c is not None]
    for column in wanted:
        if column not in columns:
            raise WarmstartError(
                f"hf:{name} has no column '{column}' (columns: {', '.join(columns)})",
                "name the right column in the data options (text_column / text_pair_column)",
            )
    labeled = options.label_column in columns
    kind = "labeled" if labeled else "corpus"
    to_name = getattr(features.get(options.label_column), "int2str", None) if labeled else None

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
                record["label"] = _label(
                    to_name(label) if to_name and isinstance(label, int) else label, name
                )
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
    return Dataset(
        f"hf:{name}" + (f":{config}" if config else ""),
        kind,
        f"Hugging Face dataset {name}" + (f" ({config})" if config else ""),
        "see the dataset card on the Hugging Face hub",
        f"https://huggingface.co/datasets/{name}",
        lambda: (r for s in splits.SPLITS for r in read_split(s)),
        options,
        read_split=read_split,
        read_routed=lambda wanted: carve.routed(readers, wanted),
        split_note=note,
    )
