"""Compressed inputs (.gz, .zst) read as their inner kind, streamed: the same shards as the plain file;
a damaged file, an unknown compression or a missing zstandard package is one line."""

import csv
import gzip
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.data.readers import file_columns, read_file
from warmstart.data.split_files import folder_files

try:
    import zstandard
except ImportError:  # the .zst cases need it (the dev and zst extras)
    zstandard = None
NEEDS_ZSTD = pytest.mark.skipif(zstandard is None, reason="needs the zstandard package")
HOW = [".gz", pytest.param(".zst", marks=NEEDS_ZSTD)]


def _plain(path, texts) -> None:
    if path.suffix == ".txt":
        path.write_text("".join(" ".join(t.split()) + "\n" for t in texts), encoding="utf-8")
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
    elif path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist([{"text": t} for t in texts]), path, row_group_size=50)
    else:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            rows = csv.writer(fh, delimiter="\t" if path.suffix == ".tsv" else ",")
            rows.writerow(["text", "id"])
            rows.writerows([[" ".join(t.split()), i] for i, t in enumerate(texts)])


def _compress(plain, how: str):
    data = plain.read_bytes()
    packed = gzip.compress(data) if how == ".gz" else zstandard.ZstdCompressor().compress(data)
    out = plain.with_name(plain.name + how)
    out.write_bytes(packed)
    return out


def _shards(capsys, corpus, tokenizer, out):
    code, _, err = run(capsys, "prepare", "--corpus", corpus, "--tokenizer", tokenizer, "--out", out)
    assert code == 0, err
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.bin"))}


@pytest.mark.parametrize("kind", [".jsonl", ".txt", ".csv", ".tsv"])
@pytest.mark.parametrize("how", HOW)
def test_a_compressed_file_gives_the_shards_of_the_plain_file(
    capsys, tmp_path, wiki_extracts, small_tokenizer, kind, how
):
    plain = tmp_path / f"corpus{kind}"
    _plain(plain, wiki_extracts[:300])
    packed = _compress(plain, how)
    want = _shards(capsys, plain, small_tokenizer, tmp_path / "plain")
    assert len(want) == 6  # train, validation, test: tokens and document starts
    assert _shards(capsys, packed, small_tokenizer, tmp_path / "packed") == want
    assert file_columns(packed) == file_columns(plain)


def test_parquet_is_read_by_batches_and_gives_the_shards_of_jsonl(
    capsys, tmp_path, wiki_extracts, small_tokenizer
):
    texts = wiki_extracts[:300]
    _plain(tmp_path / "c.jsonl", texts)
    _plain(tmp_path / "c.parquet", texts)
    assert pq.ParquetFile(tmp_path / "c.parquet").num_row_groups == 6
    want = _shards(capsys, tmp_path / "c.jsonl", small_tokenizer, tmp_path / "a")
    assert _shards(capsys, tmp_path / "c.parquet", small_tokenizer, tmp_path / "b") == want


@NEEDS_ZSTD
def test_records_stream_from_several_zstd_frames_and_a_folder_of_compressed_splits(tmp_path):
    plain = tmp_path / "x.jsonl"
    _plain(plain, [f"document {i}" for i in range(5)])
    frames = b"".join(zstandard.ZstdCompressor().compress(plain.read_bytes()) for _ in range(2))
    (tmp_path / "train.jsonl.zst").write_bytes(frames)
    assert [r["text"] for r in read_file(tmp_path / "train.jsonl.zst")] == [
        f"document {i}" for i in range(5)
    ] * 2
    _compress(plain, ".gz").rename(tmp_path / "test.jsonl.gz")
    assert folder_files(tmp_path) == {
        "train": tmp_path / "train.jsonl.zst",
        "test": tmp_path / "test.jsonl.gz",
    }


def _damaged(tmp_path, how: str, cut: bool):
    plain = tmp_path / "c.jsonl"
    _plain(plain, [f"document number {i} " + "word " * (i % 50) for i in range(5000)])
    packed = _compress(plain, how)
    data = packed.read_bytes()
    packed.write_bytes(data[: len(data) // 2] if cut else plain.read_bytes())  # cut short, or not compressed
    return packed


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("cut", [True, False], ids=["cut-short", "not-compressed"])
def test_a_damaged_file_is_one_line_and_leaves_nothing(capsys, tmp_path, small_tokenizer, how, cut):
    packed = _damaged(tmp_path, how, cut)
    out = tmp_path / "s"
    code, _, err = run(capsys, "prepare", "--corpus", packed, "--tokenizer", small_tokenizer, "--out", out)
    name = "gzip" if how == ".gz" else "Zstandard"
    assert_one_line_error(code, err, f"is not a readable {name} file", packed.name)
    if cut:  # found where the damage is read, after the lines before it
        assert "after line " in err
    assert not out.exists() and not list(tmp_path.glob(".s.*"))


def test_an_unknown_compression_and_a_compressed_parquet_are_one_line(capsys, tmp_path, small_tokenizer):
    for name, needle in (
        ("c.jsonl.bz2", "unknown compression '.bz2'"),
        ("c.parquet.gz", "compressed .parquet"),
    ):
        (tmp_path / name).write_bytes(b"data")
        code, _, err = run(capsys, "prepare", "--corpus", tmp_path / name, "--tokenizer", small_tokenizer,
                           "--out", tmp_path / "s")  # fmt: skip
        assert_one_line_error(code, err, needle)


@NEEDS_ZSTD
def test_zst_without_the_zstandard_package_names_the_install(capsys, tmp_path, small_tokenizer, monkeypatch):
    plain = tmp_path / "c.jsonl"
    _plain(plain, ["one document", "another"])
    packed = _compress(plain, ".zst")
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard fails
    code, _, err = run(
        capsys, "prepare", "--corpus", packed, "--tokenizer", small_tokenizer, "--out", tmp_path / "s"
    )
    assert_one_line_error(code, err, "zstandard package is not installed", "pip install zstandard")
