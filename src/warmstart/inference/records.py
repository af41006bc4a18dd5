"""Inputs of a finetuned model as records of its task.

An input is a JSON object in the task's record shape, or plain text where the task allows it
(classification: the text; tagging: whitespace-separated words). Extractive QA needs ``{"question",
"context"}`` and multiple choice ``{"context", "choices"}`` objects, or ``{"question", "passage",
"choices"}``; a text-to-text model takes these too, and answers with the likeliest choice.
"""

from __future__ import annotations

import dataclasses
import json

from warmstart.data import readers
from warmstart.data.choice import CHOICE_KEYS, choice_record
from warmstart.data.dataset import DataOptions
from warmstart.data.to_text import choice_input
from warmstart.errors import WarmstartError

TEXT_KEYS = ("text", "text_pair", "question", "context", "passage", "article")
LIST_KEYS = ("tokens", "choices", "options")


def parse_record(
    line: str, number: int, kind: str, where: str | None = None, columns: dict | None = None
) -> dict:
    """One input line (a JSON object or plain text) as a record of the task's ``kind``; errors name
    ``where`` (the Python API's ``inputs[3]``), else the input line ``number``; ``columns``: the run's own
    column names (its card), read as the task's keys."""
    line = line.strip()
    if line.startswith("{"):
        obj = readers.json_object(line, "the input", number)  # one clear line for bad JSON or a non-object
    elif kind in ("labeled", "tagging", "seq2seq"):
        obj = {"text": line}
    else:
        raise WarmstartError(
            f"{where or f'input line {number}'} is plain text, but this model needs JSON objects",
            'write lines like {"question": ..., "context": ...} (QA) or {"context": ..., "choices": [...]}',
        )
    return check_record(obj, number, kind, where, columns)


def own_names(obj: dict, columns: dict | None) -> dict:
    """``obj`` with the columns a run was finetuned on (its card's ``{"text": "review", "text_pair": ...}``)
    read as the task's keys, where the object has the run's name and not the key."""
    for key in ("text", "text_pair"):
        name = (columns or {}).get(key)
        if name and name != key and name in obj and key not in obj:
            obj = {**{k: v for k, v in obj.items() if k != name}, key: obj[name]}
    return obj


def run_columns(options: DataOptions, columns: dict | None, task) -> DataOptions:
    """``options`` with each column not given (None) the one the run was finetuned with (its card's
    ``columns``; runs written before the card kept them: the defaults, text and label)."""
    saved = columns or {}
    given = options.text_pair_column
    return dataclasses.replace(
        options,
        text_column=options.text_column or saved.get("text", "text"),
        text_pair_column=saved.get("text_pair") if given is None else given or None,
        label_column=options.label_column or saved.get("label", "label"),
        target_column=options.target_column or saved.get("target", "target")
        if task.kind == "seq2seq"
        else None,
        empty_labels=task.empty_labels,
    )


def check_record(
    obj: dict, number: int, kind: str, where: str | None = None, columns: dict | None = None
) -> dict:
    """An input given as a dict (its values as JSON has them) as a record of the task's ``kind``;
    ``columns``: the run's own column names (``own_names``)."""
    at = where or f"input line {number}"
    obj = own_names(obj, columns)
    for key, value in obj.items():
        texts = isinstance(value, list) and all(isinstance(x, str) for x in value)
        if (key in TEXT_KEYS and not isinstance(value, str)) or (key in LIST_KEYS and not texts):
            must = "a string" if key in TEXT_KEYS else "a list of strings"
            raise WarmstartError(
                f"{at}: '{key}' must be {must}, got {json.dumps(value)[:60]}",
                'e.g. {"text": "a review"}, {"tokens": ["New", "York"]}, {"choices": ["yes", "no"]}',
            )
    if kind == "tagging":
        tokens = obj.get("tokens") or str(obj.get("text", "")).split()
        obj = {**obj, "tokens": tokens, "text": " ".join(tokens), "tags": None}  # None: no gold tags
    elif kind == "qa":
        if "question" not in obj or "context" not in obj:
            raise WarmstartError(f"{at} lacks question or context", "give both keys")
        obj = {"id": str(number), "answers": [], **obj, "text": obj["context"]}
    elif kind == "choice" or (kind == "seq2seq" and any(k in obj for k in CHOICE_KEYS)):
        if not any(k in obj for k in CHOICE_KEYS):
            raise WarmstartError(f"{at} has no choices", 'add "choices": [...]')
        unlabeled = {k: v for k, v in obj.items() if k not in ("label", "answer")}
        record = choice_record(unlabeled, at, need_label=False)
        if kind == "seq2seq":  # text-to-text: the input as to_text writes it, the choices to score
            obj = {**obj, "text": choice_input(record), "choices": record["choices"]}
        else:
            obj = {**obj, **record, "label": 0}
    if "text" not in obj and obj:
        expected = (
            f"'text' or '{columns['text']}'" if (columns or {}).get("text", "text") != "text" else "'text'"
        )
        raise WarmstartError(
            f"{at} has no key {expected} (its keys: {', '.join(map(str, list(obj)[:10]))})",
            'name the text "text" (a pair\'s second text "text_pair"), or give plain text lines',
        )
    if not str(obj.get("text", "")).strip():
        raise WarmstartError(f"{at} has no text", "remove empty lines or fill them in")
    return obj
