"""`tokenizer explain`: the replayed steps end in the pieces the tokenizer's own encode gives, for BPE,
WordPiece and Unigram trained on real text and for GPT-2's real merges; a worked case checked by hand."""

import itertools
import json

import pytest
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models, pre_tokenizers, trainers

from tests.helpers.tokenizers import gpt2_encoder_dir, real_words
from warmstart.errors import WarmstartError
from warmstart.hub.tokenizer import find_tokenizer
from warmstart.tokenization.byte_level import legend, readable
from warmstart.tokenization.explain import Explainer, explain
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import train_tokenizer

KINDS = ["bpe", "wordpiece", "unigram"]


@pytest.fixture(scope="module")
def trained(wiki_extracts, tmp_path_factory):
    root = tmp_path_factory.mktemp("explain")
    return {k: train_tokenizer(wiki_extracts[:1000], k, 2000, root / k, show_progress=False) for k in KINDS}


@pytest.fixture(scope="module")
def words(wiki_extracts):
    return real_words(wiki_extracts[2000:], 2500)


@pytest.fixture(scope="module")
def gpt2():
    return find_tokenizer(gpt2_encoder_dir())


def _agreement(tok: Tokenizer, texts: list[str]) -> tuple[int, list]:
    explainer = Explainer(tok)
    results = [explainer.explain(t) for t in texts]
    same = sum(r["ids"] == tok.encode(t) for r, t in zip(results, texts, strict=True))
    return same, results


@pytest.mark.parametrize("kind", KINDS)
def test_explained_pieces_are_what_encode_gives(trained, words, wiki_extracts, kind):
    tok = trained[kind]
    same, results = _agreement(tok, words)
    assert len(words) >= 2000 and same == len(words)
    assert _agreement(tok, wiki_extracts[4000:4030])[0] == 30  # whole texts: the same split into words
    steps = [w for r in results for w in r["words"]]
    if kind == "bpe":  # the merges really build the pieces, and get used
        assert sum(len(w["steps"]) >= 3 for w in steps) > 500
        for w in steps:
            assert "".join(w["pieces"]) == "".join(w["symbols"]) == w["word"]
            for step in w["steps"]:
                assert step["merged"] == step["left"] + step["right"] and step["merged"] in step["pieces"]
    elif kind == "wordpiece":
        assert sum(len(w["pieces"]) >= 3 for w in steps) > 300
        assert all(w["unk"] or "".join(p.removeprefix("##") for p in w["pieces"]) == w["word"] for w in steps)
    else:
        assert sum(len(w["alternatives"]) == 2 for w in steps) > 1000
        for w in steps:
            assert "".join(w["best"]["pieces"]) == w["word"]
            assert w["best"]["total"] == pytest.approx(sum(w["best"]["scores"]))
            totals = [w["best"]["total"]] + [a["total"] for a in w["alternatives"]]
            assert totals == sorted(totals, reverse=True)


def test_gpt2_real_merges_give_what_encode_gives(gpt2, words, wiki_extracts):
    spaced = [" " + w for w in words]  # GPT-2 words mostly begin with their space: Ġ
    assert _agreement(gpt2, words)[0] == len(words)
    assert _agreement(gpt2, spaced)[0] == len(spaced)
    assert _agreement(gpt2, wiki_extracts[4000:4030] + ["Héllo <|endoftext|> 北京 naïve\n\ttabs"])[0] == 31


def test_gpt2_unbelievably_step_by_step_from_vocab_bpe(gpt2):
    """Worked out by hand from vocab.bpe: of the adjacent pairs of u n b e l i e v a b l y, the ones in the
    merge list are l+y (line 52 of vocab.bpe, so rank 50: the first line is '#version'), a+b, u+n, e+l,
    i+e; joined in that order, then ab+ly, b+el, ie+v; un+bel, bel+iev and iev+ably are not merges."""
    d = gpt2_encoder_dir()
    lines = (d / "vocab.bpe").read_text(encoding="utf-8").splitlines()[1:]
    rank = {tuple(line.split(" ")): i for i, line in enumerate(lines) if line}
    expected = [
        ("l", "y"),
        ("a", "b"),
        ("u", "n"),
        ("e", "l"),
        ("i", "e"),
        ("ab", "ly"),
        ("b", "el"),
        ("ie", "v"),
    ]
    assert rank[("l", "y")] == 50 and all(
        p not in rank for p in [("un", "bel"), ("bel", "iev"), ("iev", "ably")]
    )
    word = explain(gpt2, "unbelievably")["words"][0]
    assert word["symbols"] == list("unbelievably")
    assert [(s["left"], s["right"]) for s in word["steps"]] == expected
    assert [s["rank"] for s in word["steps"]] == [rank[p] for p in expected]
    assert word["steps"][2]["pieces"] == ["un", "b", "e", "l", "i", "e", "v", "ab", "ly"]
    encoder = json.loads((d / "encoder.json").read_text(encoding="utf-8"))
    assert word["pieces"] == ["un", "bel", "iev", "ably"]
    assert word["ids"] == [encoder[p] for p in word["pieces"]] == gpt2.encode("unbelievably")
    second = explain(gpt2, " tokenization")["words"][0]
    assert second["word"] == "Ġtokenization" and second["readable"] == " tokenization"
    first = second["steps"][0]  # Ġ t (vocab.bpe's first merge) comes before all others
    assert (
        (first["rank"], first["left"], first["right"], first["merged"])
        == (rank[("Ġ", "t")], "Ġ", "t", "Ġt")
        == (0, "Ġ", "t", "Ġt")
    )


def test_byte_level_symbols_read_as_bytes():
    assert readable("Ġthe") == " the" and readable("Ã©") == "é" and readable("Ã") == "<C3>"
    assert readable("Ċ") == "\n"
    shown = legend(["Ġc", "af", "Ã", "©"])
    assert shown[0] == "Ġ = byte 0x20 (space)" and any(line.startswith("Ã = byte 0xC3") for line in shown)


def _bpe_with(tmp_path, wiki_extracts, **changes) -> tuple[Tokenizer, Tokenizer]:
    """A BPE with a ## prefix, a </w> suffix and [UNK], trained on real text; the same with ``changes`` to
    its model section (loaded again from tokenizer.json, as a user's file would be)."""
    backend = HFTokenizer(
        models.BPE(unk_token="[UNK]", continuing_subword_prefix="##", end_of_word_suffix="</w>")
    )
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(
        vocab_size=1500,
        special_tokens=["[UNK]"],
        continuing_subword_prefix="##",
        end_of_word_suffix="</w>",
        limit_alphabet=60,
        show_progress=False,
    )
    backend.train_from_iterator(wiki_extracts[:1000], trainer)
    state = json.loads(backend.to_str())
    state["model"].update(changes)
    (tmp_path / "tokenizer.json").write_text(json.dumps(state), encoding="utf-8")
    return Tokenizer(backend), Tokenizer.load(tmp_path / "tokenizer.json")


@pytest.mark.parametrize("fuse_unk", [False, True])
def test_bpe_prefix_suffix_and_unknown_characters(tmp_path, wiki_extracts, words, fuse_unk):
    _, tok = _bpe_with(tmp_path, wiki_extracts, fuse_unk=fuse_unk)
    odd = ["naïve", "日本語", "x日本y", "Zürich's", "a"]
    assert _agreement(tok, words + odd)[0] == len(words) + len(odd)
    word = explain(tok, "日本語")["words"][0]
    assert word["pieces"] == ["[UNK]"] * (1 if fuse_unk else 3) and len(word["events"]) == 3
    step = explain(tok, "the")["words"][0]
    assert step["symbols"] == ["t", "##h", "##e</w>"] and step["pieces"] == ["the</w>"]
    assert step["steps"][0]["merged"] == "th"  # t + ##h: the right symbol loses its prefix


def test_bpe_dropout_is_said_and_left_out(tmp_path, wiki_extracts, words):
    plain, dropping = _bpe_with(tmp_path, wiki_extracts, dropout=0.5)
    result = Explainer(dropping).explain(" ".join(words[:300]))
    assert any("dropout 0.5" in note for note in result["tokenizer"]["notes"])
    assert result["ids"] == plain.encode(" ".join(words[:300]))


def _tiny(tmp_path, model: dict) -> Tokenizer:
    parts = (
        "added_tokens",
        "normalizer",
        "pre_tokenizer",
        "post_processor",
        "decoder",
        "truncation",
        "padding",
    )
    state = {"version": "1.0", **{p: None for p in parts}, "added_tokens": [], "model": model}
    (tmp_path / "tokenizer.json").write_text(json.dumps(state), encoding="utf-8")
    return Tokenizer.load(tmp_path / "tokenizer.json")


def test_bpe_byte_fallback_and_ignore_merges_as_tokenizers_does(tmp_path):
    vocab = {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "<0xC3>": 4, "<0xA9>": 5, "abab": 6, "ba": 7}
    model = {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
             "vocab": vocab, "merges": [["a", "b"], ["b", "a"]]}  # fmt: skip
    texts = ["abé", "ab日b", "aébab", "abab", "bab", "éé日日a"]
    for ignore in (False, True):
        tok = _tiny(tmp_path, {**model, "ignore_merges": ignore})
        assert [explain(tok, t)["ids"] for t in texts] == [tok.encode(t) for t in texts]
        assert explain(tok, "abab")["pieces"] == (["abab"] if ignore else ["ab", "ab"])
    assert explain(tok, "é")["pieces"] == ["<0xC3>", "<0xA9>"]


def test_wordpiece_unknown_words(trained):
    tok = trained["wordpiece"]
    long_word = "a" * 101
    for text in [long_word, "a" * 100, "snow☃man", "€uro"]:
        assert explain(tok, text)["ids"] == tok.encode(text)
    assert "max_input_chars_per_word = 100" in explain(tok, long_word)["words"][0]["unk"]
    word = explain(tok, "tokenization")["words"][0]
    for step in word["steps"]:  # each piece is the longest: the next longer candidate is not in the vocab
        assert all(m not in tok.get_vocab() for m in step["missed"])


def test_unigram_best_and_runner_up_are_the_top_of_all_segmentations(trained, words):
    """Against brute force: every way to cut short words into vocabulary pieces, summed from the scores
    in tokenizer.json."""
    tok = trained["unigram"]
    scores = {p: s for p, s in json.loads(tok.backend.to_str())["model"]["vocab"]}
    checked = 0
    explainer = Explainer(tok, alternatives=2)
    for w in words:
        word = "▁" + w
        if len(word) > 9:
            continue
        cuts = []
        for mask in itertools.product([0, 1], repeat=len(word) - 1):
            bounds = [0] + [i + 1 for i, m in enumerate(mask) if m] + [len(word)]
            pieces = [word[a:b] for a, b in itertools.pairwise(bounds)]
            if all(p in scores for p in pieces):
                cuts.append(sum(scores[p] for p in pieces))
        if all(c in scores for c in word):  # no unknown characters: every cut is in the lattice
            got = explainer.explain(w)["words"][0]
            tops = sorted(cuts, reverse=True)[:3]
            assert got["segmentations"] == len(cuts)
            assert [got["best"]["total"]] + [a["total"] for a in got["alternatives"]] == pytest.approx(tops)
            checked += 1
    assert checked > 300


def test_unigram_unknown_character_score(trained):
    """An uncovered character is the unknown token scored (lowest piece score - 10): tokenizers'
    K_UNK_PENALTY, SentencePiece's kUnkPenalty."""
    tok = trained["unigram"]
    lowest = min(s for _, s in json.loads(tok.backend.to_str())["model"]["vocab"])
    result = explain(tok, "x☃y")
    word = result["words"][0]
    best = word["best"]
    assert [p for p, unk in zip(best["pieces"], best["unknown"], strict=True) if unk] == ["☃"]
    unk_scores = [s for s, u in zip(word["best"]["scores"], word["best"]["unknown"], strict=True) if u]
    assert unk_scores == [lowest - 10] and tok.unk_id in result["ids"] and result["ids"] == tok.encode("x☃y")


def test_added_tokens_stay_whole(trained, gpt2):
    bpe = trained["bpe"]
    text = "a <mask> b<mask>c"
    result = explain(bpe, text)
    assert result["ids"] == bpe.encode(text) and [w["added"] for w in result["words"] if "added" in w] == [
        "<mask>",
        "<mask>",
    ]
    assert explain(gpt2, "end<|endoftext|>")["ids"] == gpt2.encode("end<|endoftext|>")


def test_bad_tokenizers_are_one_clear_error(tmp_path, wiki_extracts):
    word = train_tokenizer(wiki_extracts[:200], "word", 500, tmp_path / "word", show_progress=False)
    with pytest.raises(WarmstartError, match="cannot explain a WordLevel tokenizer"):
        explain(word, "hello")
    with pytest.raises(WarmstartError, match="does not exist"):
        find_tokenizer(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(WarmstartError, match="no tokenizer found"):
        find_tokenizer(tmp_path / "empty")
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    with pytest.raises(WarmstartError, match="not a valid tokenizer.json"):
        find_tokenizer(tmp_path / "notes.json")
