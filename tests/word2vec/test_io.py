"""Word vector files: word2vec text and binary (both ways through gensim), .npy + vocab, clear errors."""

import numpy as np
import pytest

from warmstart.errors import WarmstartError
from warmstart.word2vec import io
from warmstart.word2vec.vectors import WordVectors

gensim_models = pytest.importorskip("gensim.models")
WORDS = ["the", "of", "café", "naïve", "straße", "東京", "日本語", "привет", "x-ray", "don't", "ß", "z"]


@pytest.fixture
def wv():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(WORDS), 7)).astype(np.float32)
    vectors[0] = [0.1, -0.0, 1e-8, 3.4e38, -1.5, 2.0, 123456.78]  # awkward decimals
    return WordVectors(list(WORDS), vectors, counts=np.arange(len(WORDS), 0, -1) * 10)


def _gensim(wv):
    kv = gensim_models.KeyedVectors(wv.dim)
    kv.add_vectors(wv.words, wv.vectors)
    return kv


def _same(a: WordVectors, b: WordVectors):
    assert a.words == b.words
    assert a.vectors.dtype == b.vectors.dtype == np.float32
    np.testing.assert_array_equal(a.vectors, b.vectors)


@pytest.mark.parametrize("name,binary", [("v.txt", False), ("v.vec", False), ("v.bin", True)])
def test_word2vec_formats_both_ways_through_gensim(wv, tmp_path, name, binary):
    ours = io.save(wv, tmp_path / name)
    kv = gensim_models.KeyedVectors.load_word2vec_format(str(ours), binary=binary)
    assert kv.index_to_key == wv.words
    np.testing.assert_array_equal(kv.vectors, wv.vectors)

    theirs = tmp_path / f"gensim-{name}"
    _gensim(wv).save_word2vec_format(str(theirs), binary=binary)
    assert theirs.read_bytes() == ours.read_bytes()  # byte for byte what gensim writes
    back = io.load(theirs)
    _same(back, wv)
    assert back.counts is None  # the word2vec formats hold no counts


def test_binary_with_c_tool_newlines(wv, tmp_path):
    """The C word2vec tool writes a newline after each vector; gensim does not. Both read."""
    path = tmp_path / "c.bin"
    body = b"".join(
        w.encode() + b" " + v.astype("<f4").tobytes() + b"\n" for w, v in zip(wv.words, wv.vectors)
    )
    path.write_bytes(f"{len(wv)} {wv.dim}\n".encode() + body)
    _same(io.load(path), wv)
    kv = gensim_models.KeyedVectors.load_word2vec_format(str(path), binary=True)
    assert kv.index_to_key == wv.words


def test_npy_keeps_counts(wv, tmp_path):
    path = io.save(wv, tmp_path / "sub" / "vectors.npy")
    assert path == tmp_path / "sub" / "vectors.npy"
    vocab = tmp_path / "sub" / "vectors.vocab.txt"
    assert vocab.read_text(encoding="utf-8").splitlines()[2] == "café 100"
    back = io.load(path)
    _same(back, wv)
    assert back.counts.tolist() == wv.counts.tolist()
    # no counts: a bare word list; format given explicitly, path without suffix
    bare = WordVectors(wv.words, wv.vectors)
    io.save(bare, tmp_path / "bare", "npy")
    assert (tmp_path / "bare.vocab.txt").read_text(encoding="utf-8").splitlines()[0] == "the"
    again = io.load(tmp_path / "bare", "npy")
    _same(again, wv)
    assert again.counts is None
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_detect():
    assert [io.detect(p) for p in ["a.txt", "a.VEC", "a.bin", "a.npy"]] == ["text", "text", "binary", "npy"]
    assert io.detect("a.model", "binary") == "binary"
    with pytest.raises(WarmstartError, match="cannot tell the word vector format"):
        io.detect("a.model")
    with pytest.raises(WarmstartError, match="unknown word vector format 'glove'"):
        io.detect("a.txt", "glove")


def test_words_with_spaces_cannot_be_saved(tmp_path):
    wv = WordVectors(["new york", "b"], np.zeros((2, 3)))
    for name in ["v.txt", "v.bin", "v.npy"]:
        with pytest.raises(WarmstartError, match="word 1 .'new york'. is empty or contains whitespace"):
            io.save(wv, tmp_path / name)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "text,match",
    [
        ("2 3\na 1 2 3\n", "line 3: the file ends after 1 of 2 rows"),
        ("2 3\na 1 2 3\nb 1 2\n", "line 3: 2 values where the header says 3"),
        ("1 3\na 1 2 3\nb 1 2 3\n", "line 3: more rows than the 1 the header announces"),
        ("2 3\na 1 2 3\nb 1 two 3\n", "line 3: a value is not a number"),
        ("2 3\na 1 2 3\na 4 5 6\n", "line 3: the word 'a' appears again .first at line 2."),
        ("a 1 2 3\n", "line 1: expected the header 'N D'"),
        ("", "line 1: expected the header"),
        ("2 3\na 1 2 3\n\n", "line 3: 0 values where the header says 3"),
    ],
)
def test_text_errors_name_the_line(tmp_path, text, match):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(WarmstartError, match=match):
        io.load(path)


def test_text_accepts_trailing_space_and_crlf(tmp_path):
    path = tmp_path / "ok.vec"
    path.write_bytes(b"2 2\r\na 1 2 \r\nb 3 4\r\n\r\n")
    back = io.load(path)
    assert back.words == ["a", "b"] and back.vectors.tolist() == [[1, 2], [3, 4]]


def test_binary_errors(wv, tmp_path):
    good = io.save(wv, tmp_path / "good.bin").read_bytes()
    cases = {
        "truncated.bin": (good[:-5], "vector 12 .byte \\d+.: the file ends after 11 of 12 vectors"),
        "extra.bin": (good + b"more 1234", "more data after the 12 vectors the header announces"),
        "header.bin": (b"12\n" + good.split(b"\n", 1)[1], "line 1: expected the header"),
        "dim.bin": (b"12 8\n" + good.split(b"\n", 1)[1], "vector"),
    }
    for name, (data, match) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(WarmstartError, match=match):
            io.load(tmp_path / name)


def test_npy_errors(wv, tmp_path):
    with pytest.raises(WarmstartError, match="does not exist"):
        io.load(tmp_path / "missing.npy")
    io.save(wv, tmp_path / "v.npy")
    vocab = tmp_path / "v.vocab.txt"
    lines = vocab.read_text(encoding="utf-8").splitlines()
    vocab.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(WarmstartError, match="11 words for 12 matrix rows"):
        io.load(tmp_path / "v.npy")
    vocab.write_text("\n".join([*lines[:-1], "z"]) + "\n", encoding="utf-8")
    with pytest.raises(WarmstartError, match="line 12: expected 'word count'"):
        io.load(tmp_path / "v.npy")
    vocab.unlink()
    with pytest.raises(WarmstartError, match="has no word list"):
        io.load(tmp_path / "v.npy")
