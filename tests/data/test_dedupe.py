"""`warmstart prepare --dedupe` / ``prepare_shards(dedupe=True)``: exact duplicates dropped (first copy kept),
a held-out copy of a training document dropped from the held-out split, the counts said and in meta.json."""

import json

from tests.helpers.cli import run
from warmstart.data.dedupe import Dedupe, text_hash
from warmstart.data.shard_writer import prepare_shards
from warmstart.data.shards import TokenShards
from warmstart.tokenization.tokenizer import Tokenizer


def _bins(out) -> dict:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.bin"))}


def test_the_key_is_the_stripped_text():
    assert text_hash("  a b\n") == text_hash("a b")
    assert text_hash("a  b") != text_hash("a b") and text_hash("A b") != text_hash("a b")
    dedupe = Dedupe()
    kept = list(dedupe.texts("train", ["x", " x ", "y", "", "  ", "x", "z"]))
    assert kept == ["x", "y", "", "  ", "z"]  # blank texts pass through (the writer skips them uncounted)
    assert dedupe.dropped == {"train": 2} and dedupe.dropped_bytes == len(" x ") + len("x")


def test_known_duplicates_are_dropped_within_and_across_splits(tmp_path, wiki_extracts, small_tokenizer):
    tok = Tokenizer.load(small_tokenizer)
    train, test = wiki_extracts[:30], wiki_extracts[30:40]
    splits = {
        "train": train + [train[3], " " + train[7] + "\n", train[3]],  # 3 copies within train
        "test": test + [train[1], test[2], train[5]],  # 2 copies of train documents, 1 within test
    }
    meta = prepare_shards(splits, tok, tmp_path / "dedupe", dedupe=True, show_progress=False)
    assert meta["dedupe"]["dropped"] == 6
    assert meta["dedupe"]["dropped_per_split"] == {"train": 3, "test": 3}
    assert meta["dedupe"]["copies_of_earlier_splits"] == {"train": 0, "test": 2}
    assert meta["splits"]["train"]["duplicates_dropped"] == 3 and meta["splits"]["test"]["num_docs"] == 10
    assert json.loads((tmp_path / "dedupe" / "meta.json").read_text())["dedupe"] == meta["dedupe"]

    plain = prepare_shards({"train": train, "test": test}, tok, tmp_path / "plain", show_progress=False)
    assert _bins(tmp_path / "dedupe") == _bins(tmp_path / "plain")  # the same as the corpus without copies
    assert "dedupe" not in plain and "duplicates_dropped" not in plain["splits"]["train"]
    kept = prepare_shards(splits, tok, tmp_path / "kept", show_progress=False)  # without the option: all kept
    assert kept["splits"]["train"]["num_docs"] == 33 and kept["splits"]["test"]["num_docs"] == 13


def test_the_command_says_the_count(capsys, tmp_path, wiki_extracts, small_tokenizer):
    docs = wiki_extracts[:400]
    corpus = tmp_path / "c.jsonl"
    lines = [json.dumps({"text": t}) for t in docs + docs[:50] + docs[10:12]]  # 52 copies
    corpus.write_text("\n".join(lines) + "\n")
    args = [
        "prepare",
        "--corpus",
        corpus,
        "--tokenizer",
        small_tokenizer,
        "--out",
        tmp_path / "s",
        "--dedupe",
    ]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert "dropped 52 exact duplicate documents: train " in err
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    assert meta["dedupe"]["dropped"] == 52
    docs_kept = sum(TokenShards.open(tmp_path / "s", s).num_docs for s in ("train", "validation", "test"))
    assert docs_kept == len(set(docs))
    code, out, err = run(capsys, *args[:-1], "--overwrite")
    assert code == 0 and "duplicate" not in err
    assert (
        sum(
            info["num_docs"]
            for info in json.loads((tmp_path / "s" / "meta.json").read_text())["splits"].values()
        )
        == 452
    )
