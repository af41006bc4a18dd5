"""Token shards on real wiki-leads prose: layout, cross-boundary reads, doc offsets, atomicity, errors."""

from pathlib import Path

import numpy as np
import pytest

from warmstart.data.shard_writer import prepare_shards
from warmstart.data.shards import TokenShards, read_meta, token_dtype
from warmstart.errors import WarmstartError
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import train_tokenizer


@pytest.fixture(scope="module")
def extracts(wiki_extracts):
    return wiki_extracts


@pytest.fixture(scope="module")
def tok(extracts, tmp_path_factory):
    out = tmp_path_factory.mktemp("shards-tok") / "tok"
    return train_tokenizer(extracts[:1500], "wordpiece", 2000, out, show_progress=False)


@pytest.fixture(scope="module")
def prepared(extracts, tok, tmp_path_factory):
    train = extracts[2000:2300] + ["", "   "]  # blanks are skipped
    validation = extracts[2300:2340]
    out = tmp_path_factory.mktemp("shards") / "wiki"
    meta = prepare_shards(
        {"train": iter(train), "validation": validation},
        tok,
        out,
        batch_size=64,
        shard_tokens=5000,
        source={"corpus": "wiki-leads", "seed": 0},
        show_progress=False,
    )
    return out, meta, [t for t in train if t.strip()], validation


def _expected_stream(tok, docs):
    flat = []
    for ids in tok.encode_batch(docs):
        flat.extend(ids)
        flat.append(tok.doc_sep_id)
    return np.asarray(flat, dtype=np.int64)


def test_layout_and_meta(prepared, tok):
    out, meta, train, validation = prepared
    assert meta == read_meta(out)
    assert meta["dtype"] == "uint16" and meta["vocab_size"] == tok.vocab_size
    assert meta["tokenizer_fingerprint"] == tok.fingerprint() and meta["tokenizer_kind"] == "wordpiece"
    assert meta["doc_sep_id"] == tok.sep_id == 3
    assert meta["source"] == {"corpus": "wiki-leads", "seed": 0}
    tr = meta["splits"]["train"]
    assert tr["num_docs"] == len(train) == 300
    assert len(tr["shards"]) >= 3, "tiny shard_tokens gives several shard files"
    assert [s["file"] for s in tr["shards"]][:2] == ["train-00000.bin", "train-00001.bin"]
    assert all(s["num_tokens"] == 5000 for s in tr["shards"][:-1])
    assert sum(s["num_tokens"] for s in tr["shards"]) == tr["num_tokens"]
    for s in tr["shards"]:
        assert (out / s["file"]).stat().st_size == 2 * s["num_tokens"]
    assert (out / "train.docs.bin").stat().st_size == 8 * len(train)
    assert meta["splits"]["validation"]["num_docs"] == len(validation)
    assert Tokenizer.load(out / "tokenizer").fingerprint() == tok.fingerprint()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")], "no temp dirs left"


def test_read_matches_encode_batch(prepared, tok):
    out, _, train, validation = prepared
    shards = TokenShards.open(out, "train")
    expected = _expected_stream(tok, train)
    assert shards.num_tokens == len(expected) and shards.num_docs == len(train)
    assert shards.dtype == np.uint16 and shards.num_shards >= 3
    assert shards.fingerprint == tok.fingerprint() and shards.doc_sep_id == 3 and shards.vocab_size == 2000
    whole = shards.read(0, shards.num_tokens)
    assert whole.dtype == np.int64
    np.testing.assert_array_equal(whole, expected)
    # a window across the first and second shard-file boundaries
    window = shards.read(4990, 5020)
    np.testing.assert_array_equal(window, expected[4990:10010])
    np.testing.assert_array_equal(shards.read(5000, 1), expected[5000:5001])
    assert len(shards.read(7, 0)) == 0
    with pytest.raises(IndexError):
        shards.read(shards.num_tokens - 3, 4)

    lengths = [len(ids) + 1 for ids in tok.encode_batch(train)]
    np.testing.assert_array_equal(shards.doc_offsets, np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    assert all(whole[o - 1] == tok.doc_sep_id for o in shards.doc_offsets[1:])
    np.testing.assert_array_equal(shards.doc(5), tok.encode_batch([train[5]])[0])
    np.testing.assert_array_equal(shards.doc(len(train) - 1), tok.encode_batch([train[-1]])[0])

    val = TokenShards.open(out, "validation")
    np.testing.assert_array_equal(val.read(0, val.num_tokens), _expected_stream(tok, validation))
    shards.check_tokenizer(tok)


def test_dtype_selection():
    assert token_dtype(2000) == np.uint16
    assert token_dtype(65535) == np.uint16
    assert token_dtype(65536) == np.uint32
    assert token_dtype(70_000) == np.uint32


def test_uint32_path(extracts, tok, tmp_path, monkeypatch):
    # Pretend the vocab is big: the stream must be written and read back as uint32.
    monkeypatch.setattr(type(tok), "vocab_size", property(lambda self: 70_000))
    out = tmp_path / "big"
    meta = prepare_shards({"train": extracts[:20]}, tok, out, shard_tokens=1000, show_progress=False)
    monkeypatch.undo()
    assert meta["dtype"] == "uint32"
    shards = TokenShards.open(out, "train")
    assert shards.dtype == np.uint32
    assert (out / "train-00000.bin").stat().st_size == 4 * 1000
    np.testing.assert_array_equal(shards.read(0, shards.num_tokens), _expected_stream(tok, extracts[:20]))


def test_existing_out_refused_then_overwrite(extracts, tok, tmp_path):
    out = tmp_path / "s"
    prepare_shards({"train": extracts[:10]}, tok, out, show_progress=False)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    with pytest.raises(WarmstartError, match="already exists.*--overwrite"):
        prepare_shards({"train": extracts[10:30]}, tok, out, show_progress=False)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    meta = prepare_shards({"train": extracts[10:30]}, tok, out, overwrite=True, show_progress=False)
    assert meta["splits"]["train"]["num_docs"] == 20
    assert TokenShards.open(out, "train").num_docs == 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_empty_split_is_an_error_and_leaves_nothing(extracts, tok, tmp_path):
    out = tmp_path / "e"
    with pytest.raises(WarmstartError, match="'validation' split has no text"):
        prepare_shards({"train": extracts[:5], "validation": ["", "  \n"]}, tok, out, show_progress=False)
    assert list(tmp_path.iterdir()) == []
    # a failed overwrite keeps the previous shards
    prepare_shards({"train": extracts[:5]}, tok, out, show_progress=False)
    with pytest.raises(WarmstartError):
        prepare_shards({"train": []}, tok, out, overwrite=True, show_progress=False)
    assert TokenShards.open(out, "train").num_docs == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e"]


def test_long_document(extracts, tok, tmp_path):
    long_doc = " ".join(extracts[:200])[:100_000]
    assert len(long_doc) == 100_000
    out = tmp_path / "long"
    prepare_shards(
        {"train": [extracts[0], long_doc, extracts[1]]}, tok, out, shard_tokens=4096, show_progress=False
    )
    shards = TokenShards.open(out, "train")
    assert shards.num_docs == 3 and shards.num_shards > 3
    np.testing.assert_array_equal(shards.doc(1), tok.encode_batch([long_doc])[0])
    np.testing.assert_array_equal(shards.doc(2), tok.encode_batch([extracts[1]])[0])


def test_open_errors(prepared, tmp_path):
    out, *_ = prepared
    with pytest.raises(WarmstartError, match="warmstart prepare"):
        TokenShards.open(tmp_path / "missing", "train")
    with pytest.raises(WarmstartError, match="no 'test' split.*train, validation"):
        TokenShards.open(out, "test")
    assert TokenShards.splits(out) == ["train", "validation"]


def test_reads_do_not_map_shard_files_into_the_process(prepared):
    """Windows are read with pread: the pages stay in the OS page cache, not in this process's RSS."""
    maps = Path("/proc/self/maps")
    if not maps.is_file():
        pytest.skip("needs /proc")
    out, *_ = prepared
    shards = TokenShards.open(out, "train")
    for start in range(0, shards.num_tokens - 100, 997):
        shards.read(start, 100)
    mapped = [line for line in maps.read_text().splitlines() if str(out / "train-") in line]
    assert not mapped
