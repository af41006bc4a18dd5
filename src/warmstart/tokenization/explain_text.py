"""The text form of an explanation (tokenization/explain.py): a short header on the model, then each word's
steps, aligned, and the ids at the end."""

from __future__ import annotations

import textwrap

from warmstart.tokenization.byte_level import legend, readable

WIDTH = 110
ORDINALS = {1: "2nd", 2: "3rd"}


def _q(s: str) -> str:
    return '"' + s.replace("\n", "\\n").replace("\t", "\\t") + '"'


def _header(result: dict) -> list[str]:
    info = result["tokenizer"]
    model_type = info["type"]
    size = f"{info['vocab_size']:,} tokens"
    if model_type == "BPE":
        unit = "bytes" if info["byte_level"] else "characters"
        name = "byte-level BPE" if info["byte_level"] else "BPE"
        lines = [
            f"{name}, {size}, {info['merges']:,} merges. A word starts as "
            f"its {unit}; the adjacent pair ranked first in the merge list (merge #0 was learned first) is "
            "joined, again and again, until no pair is in the list."
        ]
    elif model_type == "WordPiece":
        lines = [
            f"WordPiece, {size}. Greedy longest match first: at each position the longest piece in the "
            "vocabulary is taken."
        ]
    else:
        lines = [f"Unigram, {size}. Viterbi: of all ways to cut a word into pieces, the most probable."]
    lines += [f"  {note}" for note in info["notes"]]
    if info["byte_level"]:
        symbols = [s for w in result["words"] for s in w.get("symbols", [])]
        shown = legend(symbols)
        if shown:
            lines.append("  symbols are bytes, each written as one printable character: " + "; ".join(shown))
    if result["normalized"] != result["text"]:
        lines.append(f"  normalized: {_q(result['normalized'])}")
    return [textwrap.fill(line, WIDTH, subsequent_indent="    ") for line in lines]


def _bpe(word: dict) -> list[str]:
    labels = [f"merge #{s['rank']}" for s in word["steps"]]
    merges = [f"{s['left']} + {s['right']} -> {s['merged']}" for s in word["steps"]]
    w1 = max([len(x) for x in labels] + [len("start")])
    w2 = max([len(x) for x in merges] + [0])
    lines = [f"    {'start':<{w1}}  {'':<{w2}}  {' '.join(word['symbols'])}"]
    for label, merge, step in zip(labels, merges, word["steps"], strict=True):
        lines.append(f"    {label:<{w1}}  {merge:<{w2}}  {' '.join(step['pieces'])}")
    lines += [f"    {e}" for e in word["events"]]
    return lines


def _wordpiece(word: dict) -> list[str]:
    lines = []
    for step in word["steps"]:
        if step["piece"] is None:
            continue  # said in the [UNK] line below
        missed = f"  ({step['missed'][-1]} is not in the vocabulary)" if step["missed"] else ""
        lines.append(f"    at {step['start']}: {step['piece']}{missed}")
    if word["unk"]:
        lines.append(f"    -> {word['pieces'][0]}: {word['unk']}")
    return lines


def _segmentation(seg: dict) -> str:
    parts = [
        f"{p}{'=unk' if unk else ''} ({s:.2f})"
        for p, unk, s in zip(seg["pieces"], seg["unknown"], seg["scores"], strict=True)
    ]
    return " + ".join(parts) + f" = {seg['total']:.2f}"


def _unigram(word: dict) -> list[str]:
    if word["best"] is None:
        return []
    n = word["segmentations"]
    lines = [f"    best of {n:,} segmentation{'s' if n != 1 else ''}: {_segmentation(word['best'])}"]
    for i, alt in enumerate(word["alternatives"], start=1):
        name = ORDINALS.get(i, f"{i + 1}th")
        gap = word["best"]["total"] - alt["total"]
        lines.append(f"    {name}: {_segmentation(alt)}  ({gap:.2f} lower)")
    return lines


STEPS = {"BPE": _bpe, "WordPiece": _wordpiece, "Unigram": _unigram}


def render(result: dict) -> str:
    """The explanation as text: header, then per word its steps and final pieces with their ids."""
    lines = _header(result)
    steps = STEPS[result["tokenizer"]["type"]]
    for word in result["words"]:
        if "added" in word:
            lines.append(f"{_q(word['added'])}: added token, id {word['ids'][0]} (never split)")
            continue
        title = _q(word["word"])
        if "readable" in word and word["readable"] != word["word"]:
            title += f" = {_q(word['readable'])}"
        lines.append(title)
        lines += steps(word)
        ids = " ".join(str(i) for i in word["ids"])
        shown = ""
        if "readable" in word and any(readable(p) != p for p in word["pieces"]):
            shown = f" ({' '.join(_q(readable(p)) for p in word['pieces'])})"
        lines.append(f"    pieces: {' '.join(word['pieces'])}{shown}  ids: {ids}")
    lines.append(f"{len(result['ids'])} pieces, ids: {' '.join(str(i) for i in result['ids'])}")
    return "\n".join(lines)
