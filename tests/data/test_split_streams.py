"""The splits of a corpus read in one pass (data/split_streams.py): the same texts in the same order as each
split read on its own, every document hashed once, in any reading order, after a first stream that stopped
early, for given splits (a folder) as for hashed ones, and through `prepare` to the same shards."""

from __future__ import annotations

import itertools

import pytest

from warmstart.data import splits
from warmstart.data.catalog import open_dataset
from warmstart.data.corpus import corpus_texts
from warmstart.data.dataset import DataOptions
from warmstart.data.split_streams import split_streams

SPLITS = ("train", "validation", "test")
OPTS = DataOptions(label_column=None, validation_fraction=0.2, test_fraction=0.1)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """600 real rotten-tomatoes snippets as a .txt corpus, one with non-ASCII and a lone surrogate escape."""
    texts = [r["text"] for r in itertools.islice(open_dataset("rotten-tomatoes").records("all"), 600)]
    texts[3] = "café naïve — 東京 " + texts[3]
    path = tmp_path_factory.mktemp("corpus") / "c.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return str(path)


def _separately(names, split):
    return list(corpus_texts(names, OPTS, split))


def test_one_pass_gives_each_split_as_reading_it_alone_and_hashes_each_document_once(corpus, monkeypatch):
    expected = {s: _separately([corpus, corpus], s) for s in SPLITS}
    documents = sum(1 for _ in open_dataset(corpus, OPTS).records("all"))
    assert all(expected.values()) and documents >= 600
    hashed = []
    real = splits.record_split
    monkeypatch.setattr(splits, "record_split", lambda r, *a: hashed.append(1) or real(r, *a))
    streams = split_streams([open_dataset(corpus, OPTS), open_dataset(corpus, OPTS)], SPLITS)
    assert {s: list(streams[s]) for s in SPLITS} == expected
    assert len(hashed) == 2 * documents  # one pass over both corpora, not one per split


@pytest.mark.parametrize("order", [("test", "train", "validation"), ("validation", "test", "train")])
def test_any_reading_order_gives_the_same_texts(corpus, order):
    streams = split_streams([open_dataset(corpus, OPTS)], SPLITS)
    assert {s: list(streams[s]) for s in order} == {s: _separately([corpus], s) for s in order}


def test_a_first_stream_stopped_early_leaves_the_others_whole(corpus):
    streams = split_streams([open_dataset(corpus, OPTS)], SPLITS)
    assert len(list(itertools.islice(streams["train"], 5))) == 5
    streams["train"].close()  # the pass never finished: its temporary files are not used
    assert list(streams["validation"]) == _separately([corpus], "validation")
    assert list(streams["test"]) == _separately([corpus], "test")


def test_given_splits_are_read_part_by_part(tmp_path):
    folder = tmp_path / "given"
    folder.mkdir()
    for split, n in zip(SPLITS, (30, 5, 4)):
        (folder / f"{split}.txt").write_text("".join(f"{split} document {i}\n" for i in range(n)))
    streams = split_streams([open_dataset(str(folder), OPTS)], ("train", "validation"))
    assert set(streams) == {"train", "validation"}
    assert list(streams["train"]) == [f"train document {i}" for i in range(30)]
    assert list(streams["validation"]) == [f"validation document {i}" for i in range(5)]


def test_prepare_writes_the_shards_of_reading_each_split_alone(corpus, tmp_path):
    from warmstart.data.corpus import prepare_corpus
    from warmstart.data.shard_writer import prepare_shards
    from warmstart.tokenization.train import train_tokenizer

    tok = train_tokenizer(
        _separately([corpus], "train"), "wordpiece", 600, tmp_path / "tok", show_progress=False
    )
    one = prepare_corpus([corpus], OPTS, tok, tmp_path / "one")
    alone = {s: corpus_texts([corpus], OPTS, s) for s in SPLITS}
    before = prepare_shards(alone, tok, tmp_path / "alone", show_progress=False, source=one["source"])
    assert one["splits"] == before["splits"]
    for name in sorted(p.name for p in (tmp_path / "alone").glob("*.bin")):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "alone" / name).read_bytes(), name


def test_a_split_carved_from_a_given_train_part_reads_that_part_once(tmp_path, monkeypatch):
    folder = tmp_path / "carved"
    folder.mkdir()
    (folder / "train.txt").write_text("".join(f"training document number {i}\n" for i in range(200)))
    (folder / "test.txt").write_text("".join(f"test document {i}\n" for i in range(7)))
    expected = {s: list(open_dataset(str(folder), OPTS).texts(s)) for s in SPLITS}
    assert expected["validation"] and len(expected["test"]) == 7  # validation carved, test as given
    hashed = []
    real = splits.record_split
    monkeypatch.setattr(splits, "record_split", lambda r, *a: hashed.append(1) or real(r, *a))
    streams = split_streams([open_dataset(str(folder), OPTS)], SPLITS)
    assert {s: list(streams[s]) for s in SPLITS} == expected
    assert len(hashed) == 200  # the train part once, not once per split carved from it
