"""Records of every dataset kind as text-to-text pairs ``{"text", "target"}``, as T5 and UnifiedQA cast them.

    labeled, one text   text                                  -> the label word
    labeled, a pair     text \\n text_pair                      -> the label word
    labeled, yes/no     (labels yes/no, true/false, booleans)  -> "yes" / "no"
    qa (extractive)     question \\n context                    -> the first answer ("no answer" if none)
    choice              context \\n (A) c1 (B) c2 ...           -> the right choice's text
    choice + passage    question \\\\n (A) c1 ... \\\\n passage    -> the right choice's text (UnifiedQA)
    seq2seq             text                                  -> target (as it is)

The label word is the label itself unless ``label_words`` maps it (``"fresh: positive, rotten: negative"``,
``{"fresh": "positive"}`` or ``["fresh=positive", ...]``). Multi-label labels become their words joined by
", " ("none" for no label), regression values their shortest decimal form. The separator is a newline with
a space either side (``SEPARATOR``), so words stay apart even where a tokenizer drops the newline. QA pairs
also keep ``"answers"``: every accepted output (each gold answer text, or "no answer"), for exact match
and F1.

Multiple choice with a passage (MCTest, RACE) is written as UnifiedQA writes it (``encode_datasets.py``,
``f"{question} \\\\n {candidates} \\\\n {paragraph}"``): question first, the choices as ``(A) ... (B) ...``,
the passage last, parted by ``UNIFIEDQA_SEPARATOR``, the two characters backslash and n with a space either
side (UnifiedQA's README: "this separator isn't the newline character"), so that a released UnifiedQA model
reads its own format. Case is kept: UnifiedQA lowercases input and output later, in its training
preprocessor, and scores answers case-blind, as exact match does here.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping

from warmstart.errors import WarmstartError

SEPARATOR = " \n "
UNIFIEDQA_SEPARATOR = " \\n "  # backslash, n: UnifiedQA's separator of question, choices and passage
NO_ANSWER = "no answer"
KINDS = ("labeled", "qa", "choice", "seq2seq")
_YES, _NO = frozenset({"yes", "true"}), frozenset({"no", "false"})


def parse_label_words(spec: str | Mapping | Iterable[str] | None) -> dict[str, str]:
    """``"fresh: positive, rotten: negative"`` / ``"fresh=positive,rotten=negative"`` / a mapping / a list
    of ``"LABEL=WORD"`` items -> ``{label: word}``."""
    if not spec:
        return {}
    if isinstance(spec, Mapping):
        items = [(str(k), str(v)) for k, v in spec.items()]
    else:
        parts = spec.split(",") if isinstance(spec, str) else [str(p) for p in spec]
        items = []
        for part in (p.strip() for p in parts):
            if not part:
                continue
            cut = min((i for i in (part.find("="), part.find(":")) if i > 0), default=-1)
            if cut < 0:
                raise WarmstartError(
                    f"cannot read the label word '{part}'",
                    "write LABEL=WORD or LABEL: WORD, e.g. fresh=positive",
                )
            items.append((part[:cut].strip(), part[cut + 1 :].strip()))
    out = {}
    for label, word in items:
        if not label or not word:
            raise WarmstartError(
                f"empty label or word in '{label}={word}'", "write LABEL=WORD, e.g. fresh=positive"
            )
        out[label] = word
    return out


def _is_yes_no(labels: list) -> bool:
    """Every label is a boolean or one of yes/no/true/false (any case)."""
    return bool(labels) and all(
        isinstance(x, bool) or (isinstance(x, str) and x.strip().lower() in _YES | _NO) for x in labels
    )


def _yes_no(label) -> str:
    if isinstance(label, bool):
        return "yes" if label else "no"
    return "yes" if label.strip().lower() in _YES else "no"


def _label_word(label, words: dict[str, str], yes_no: bool, where: str) -> str:
    if isinstance(label, list):  # multi-label
        return ", ".join(_label_word(x, words, False, where) for x in label) or "none"
    if isinstance(label, bool) or str(label) not in words:
        if yes_no:
            return _yes_no(label)
        if isinstance(label, float):
            return f"{label:g}"
    word = words.get(str(label), str(label)).strip()
    if not word:
        raise WarmstartError(f"{where} has an example with an empty label", "fill in or drop empty labels")
    return word


def _choice(record: dict, where: str) -> dict:
    choices = [str(c) for c in record["choices"]]
    if len(choices) > len(string.ascii_uppercase):
        raise WarmstartError(
            f"{where} has an example with {len(choices)} choices",
            "at most 26 choices (A to Z) can be written",
        )
    label = str(record["label"]).strip()
    if not label.isdigit() or int(label) >= len(choices):
        raise WarmstartError(
            f"{where} has an example whose label {label!r} is not the index of one of its choices",
            "labels of choice data are 0-based indices",
        )
    return {"text": choice_input(record), "target": choices[int(label)]}


def choice_input(record: dict) -> str:
    """The input text of a choice record: ``context \\n (A) c1 (B) c2``, or with a passage UnifiedQA's
    ``question \\\\n (A) c1 (B) c2 \\\\n passage``."""
    options = " ".join(
        f"({string.ascii_uppercase[i]}) {c}" for i, c in enumerate(map(str, record["choices"]))
    )
    if record.get("passage") is not None:
        cut = UNIFIEDQA_SEPARATOR
        return f"{record['text']}{cut}{options}{cut}{record['passage']}"
    return f"{record['text']}{SEPARATOR}{options}"


def to_text(
    records: list[dict],
    kind: str,
    label_words: str | Mapping | Iterable[str] | None = None,
    where: str = "data",
) -> list[dict]:
    """``records`` of one dataset ``kind`` (see ``warmstart.tasks.base``) as ``{"text", "target"}`` pairs
    (QA pairs also ``"answers"``). ``where`` names the data in errors."""
    words = parse_label_words(label_words)
    if kind == "seq2seq":
        return [{"text": r["text"], "target": r["target"]} for r in records]
    if kind == "labeled":
        yes_no = _is_yes_no([r["label"] for r in records if str(r["label"]) not in words])
        out = []
        for r in records:
            text = r["text"] + (SEPARATOR + r["text_pair"] if r.get("text_pair") is not None else "")
            out.append({"text": text, "target": _label_word(r["label"], words, yes_no, where)})
        return out
    if kind == "qa":
        out = []
        for r in records:
            golds = [a["text"] for a in r.get("answers") or [] if str(a["text"]).strip()]
            text = f"{r['question']}{SEPARATOR}{r['context']}"
            golds = golds or [NO_ANSWER]
            out.append({"text": text, "target": golds[0], "answers": golds})
        return out
    if kind == "choice":
        return [_choice(r, where) for r in records]
    raise WarmstartError(
        f"{where} is a {kind} dataset, which has no text-to-text form",
        f"use {', '.join(KINDS)} data",
    )
