"""Tokenizer training, save/load and transformers interop on real wiki-leads prose."""

import json

import pytest

from warmstart.errors import WarmstartError
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import train_tokenizer

transformers = pytest.importorskip("transformers")

SENTENCES = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
    "Zürich's Bahnhofstrasse isn't cheap: prices rose 12.5% in 2019!",
    "Photosynthesis converts light energy into chemical energy.",
]


@pytest.fixture(scope="module")
def extracts(wiki_extracts):
    return wiki_extracts[:2000]


@pytest.fixture(scope="module")
def trained(extracts, tmp_path_factory):
    root = tmp_path_factory.mktemp("tok")
    return {
        kind: (train_tokenizer(extracts, kind, 2000, root / kind, show_progress=False), root / kind)
        for kind in ("wordpiece", "bpe", "unigram")
    }


KINDS = ["wordpiece", "bpe", "unigram"]


@pytest.mark.parametrize("kind", KINDS)
def test_trained_files_and_roundtrip(trained, kind, tmp_path):
    tok, out = trained[kind]
    assert {p.name for p in out.iterdir()} == {
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        ".warmstart",  # the marker: a tokenizer warmstart made
    }
    assert tok.algorithm == kind
    assert 1900 <= tok.vocab_size <= 2000
    saved = json.loads((out / "tokenizer.json").read_text())
    assert saved["truncation"] is None and saved["padding"] is None

    loaded = Tokenizer.load(out)
    assert loaded.encode_batch(SENTENCES) == tok.encode_batch(SENTENCES)
    assert loaded.fingerprint() == tok.fingerprint()
    assert len(tok.fingerprint()) == 16
    assert loaded.special_ids == tok.special_ids
    # a tokenizer.json path works too, and save() to another dir reproduces it
    assert Tokenizer.load(out / "tokenizer.json").encode_batch(SENTENCES) == tok.encode_batch(SENTENCES)
    loaded.save(tmp_path / "copy")
    again = Tokenizer.load(tmp_path / "copy")
    assert again.encode_batch(SENTENCES) == tok.encode_batch(SENTENCES)
    assert again.pad_id == tok.pad_id and again.doc_sep_id == tok.doc_sep_id

    ids = tok.encode_batch(SENTENCES)
    assert all(ids_ and not (set(ids_) & tok.special_ids) for ids_ in ids), "no specials in encode_batch"
    text = tok.decode(ids[0])
    assert "tower" in text.lower() and "paris" in text.lower()


def test_special_ids_as_documented(trained):
    wp = trained["wordpiece"][0]
    assert (wp.pad_id, wp.unk_id, wp.cls_id, wp.sep_id, wp.mask_id) == (0, 1, 2, 3, 4)
    assert [wp.id_to_token(i) for i in range(5)] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert wp.bos_id is None and wp.eos_id is None
    assert wp.doc_sep_id == 3 and wp.special_ids == frozenset(range(5))

    bpe = trained["bpe"][0]
    assert [bpe.id_to_token(i) for i in range(5)] == ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    assert (bpe.bos_id, bpe.pad_id, bpe.eos_id, bpe.unk_id, bpe.mask_id) == (0, 1, 2, 3, 4)
    assert bpe.doc_sep_id == 2

    uni = trained["unigram"][0]
    assert [uni.id_to_token(i) for i in range(4)] == ["<pad>", "</s>", "<unk>", "<mask>"]
    assert (uni.pad_id, uni.eos_id, uni.unk_id, uni.mask_id) == (0, 1, 2, 3)
    assert uni.cls_id is None and uni.bos_id is None
    assert uni.doc_sep_id == 1


def test_unigram_collapses_runs_of_spaces(trained):
    """Its normalizer turns any run of spaces into one (a pattern, not the literal text " {2,}")."""
    uni = trained["unigram"][0]
    assert uni.encode_batch(["the  city   of Paris"]) == uni.encode_batch(["the city of Paris"])
    assert uni.encode_batch(["the {2,} city"]) != uni.encode_batch(["the city"])


def test_lowercasing_defaults(trained):
    wp, bpe = trained["wordpiece"][0], trained["bpe"][0]
    assert wp.encode_batch(["PARIS Café"]) == wp.encode_batch(["paris cafe"])
    assert bpe.encode_batch(["Paris"]) != bpe.encode_batch(["paris"])
    assert bpe.decode(bpe.encode_batch([SENTENCES[1]])[0]) == SENTENCES[1]  # byte-level: lossless


@pytest.mark.parametrize("kind", KINDS)
def test_transformers_loads_same_ids(trained, kind):
    tok, out = trained[kind]
    auto = transformers.AutoTokenizer.from_pretrained(out)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(out / "tokenizer.json"),
        **json.loads((out / "special_tokens_map.json").read_text()),
    )
    from_dir = transformers.PreTrainedTokenizerFast.from_pretrained(out)
    ours, _ = tok.encode_pairs(SENTENCES, max_length=512)
    for hf in (auto, fast, from_dir, tok.to_transformers()):
        assert hf.pad_token_id == tok.pad_id
        assert hf.mask_token_id == tok.mask_id
        assert hf.unk_token_id == tok.unk_id
        assert hf(SENTENCES)["input_ids"] == ours
        assert hf(SENTENCES, add_special_tokens=False)["input_ids"] == tok.encode_batch(SENTENCES)
    first = auto(SENTENCES[0])["input_ids"]
    if kind == "wordpiece":
        assert auto.cls_token == "[CLS]" and auto.sep_token == "[SEP]"
        assert first[0] == 2 and first[-1] == 3
    elif kind == "bpe":
        assert auto.bos_token == "<s>" and auto.eos_token == "</s>"
        assert first[0] == 0 and first[-1] == 2 and first.count(0) == 1
    else:
        assert auto.eos_token == "</s>" and first[-1] == 1 and first.count(1) == 1
    assert auto.model_max_length == 512


@pytest.mark.parametrize("kind", KINDS)
def test_encode_pairs(trained, kind):
    tok, _ = trained[kind]
    long_a = SENTENCES[0] * 5
    ids, types = tok.encode_pairs([long_a, SENTENCES[2]], [SENTENCES[1], SENTENCES[0]], max_length=32)
    for row, tt in zip(ids, types):
        assert len(row) == len(tt) <= 32
        assert set(tt) == {0, 1}
        first_one = tt.index(1)
        assert all(t == 0 for t in tt[:first_one]) and all(t == 1 for t in tt[first_one:])
    assert len(ids[0]) == 32  # truncated, longest first: the short second segment survives
    b_ids = tok.encode_batch([SENTENCES[1]])[0]
    assert sum(types[0]) >= min(len(b_ids), 10)
    single_ids, single_types = tok.encode_pairs([long_a], max_length=16)
    assert len(single_ids[0]) == 16 and set(single_types[0]) == {0}
    if kind == "wordpiece":
        assert single_ids[0][0] == tok.cls_id and single_ids[0][-1] == tok.sep_id
        assert ids[1][0] == tok.cls_id and ids[1].count(tok.sep_id) == 2
    else:
        assert single_ids[0][-1] == tok.eos_id
    # the shared tokenizer stays untruncated
    assert len(tok.encode_batch([long_a])[0]) > 32
    with pytest.raises(WarmstartError):
        tok.encode_pairs(["a"], ["b"], max_length=2)


def test_errors(extracts, trained, tmp_path):
    with pytest.raises(
        WarmstartError, match="unknown tokenizer kind 'sentencepiece'.*wordpiece, bpe, unigram"
    ):
        train_tokenizer(extracts[:10], "sentencepiece", 1000, tmp_path / "x")
    with pytest.raises(WarmstartError, match="empty"):
        train_tokenizer(["", "   ", "\n"], "wordpiece", 1000, tmp_path / "empty", show_progress=False)
    assert not (tmp_path / "empty").exists()
    with pytest.raises(WarmstartError, match="too small"):
        train_tokenizer(extracts[:10], "wordpiece", 20, tmp_path / "small")

    _, out = trained["wordpiece"]
    before = (out / "tokenizer.json").read_bytes()
    with pytest.raises(WarmstartError, match="already contains a tokenizer.*--overwrite"):
        train_tokenizer(extracts[:50], "bpe", 500, out, show_progress=False)
    assert (out / "tokenizer.json").read_bytes() == before

    with pytest.raises(WarmstartError, match="warmstart tokenizer train"):
        Tokenizer.load(tmp_path / "nowhere")
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(WarmstartError, match="tokenizer.json is missing"):
        Tokenizer.load(tmp_path / "emptydir")


def test_overwrite_replaces_atomically(extracts, tmp_path):
    out = tmp_path / "tok"
    first = train_tokenizer(extracts[:300], "wordpiece", 500, out, show_progress=False)
    (out / "notes.txt").write_text("keep me")
    second = train_tokenizer(extracts[:300], "bpe", 500, out, overwrite=True, show_progress=False)
    assert Tokenizer.load(out).algorithm == "bpe" and second.fingerprint() != first.fingerprint()
    assert Tokenizer.load(out).fingerprint() == second.fingerprint()
    assert (out / "notes.txt").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tok"], "no temp dirs left behind"


def test_load_bare_tokenizer_json_guesses_roles(trained, tmp_path):
    _, out = trained["wordpiece"]
    bare = tmp_path / "bare.json"
    bare.write_bytes((out / "tokenizer.json").read_bytes())
    tok = Tokenizer.load(bare)
    assert (tok.pad_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 2, 3, 4)
    assert tok.do_lower_case
