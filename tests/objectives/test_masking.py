"""MLM position selection: token (unchanged), whole-word and span masking on real text; word-start tables."""

import pytest
import torch

from warmstart.config import from_dict
from warmstart.data.shards import TokenShards
from warmstart.errors import WarmstartError
from warmstart.objectives.masking import (
    expected_span_length,
    sample_span_lengths,
    span_length_pmf,
    span_positions,
    word_ids,
    word_starts,
)
from warmstart.objectives.mlm import IGNORE, MaskedLM, MLMCollator, MLMConfig, mask_tokens
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import train_tokenizer

MODES = ("token", "whole_word", "span")


@pytest.fixture(scope="module")
def wordpiece(small_tokenizer):
    return Tokenizer.load(small_tokenizer)


@pytest.fixture(scope="module")
def bpe(wiki_extracts, tmp_path_factory):
    out = tmp_path_factory.mktemp("bpe") / "tok"
    train_tokenizer(wiki_extracts[:600], "bpe", 500, out, show_progress=False)
    return Tokenizer.load(out)


def packed_rows(tok: Tokenizer, texts: list[str], width: int = 126):
    """(ids, words): rows ``[CLS] window [SEP]`` cut from the documents joined by the document separator, as
    PackedWindows cuts them, and each token's (document, word) number from the tokenizer's own
    pre-tokenizer (-1 for special tokens): an oracle for word boundaries independent of word_starts."""
    ids, words = [], []
    for d, enc in enumerate(tok.backend.encode_batch(texts, add_special_tokens=False)):
        ids += enc.ids + [tok.doc_sep_id]
        words += [d * 100_000 + w for w in enc.word_ids] + [-1]
    n = len(ids) // width
    body = torch.tensor(ids[: n * width]).view(n, width)
    wbody = torch.tensor(words[: n * width]).view(n, width)
    cls, sep = torch.full((n, 1), tok.cls_id), torch.full((n, 1), tok.sep_id)
    return torch.cat([cls, body, sep], 1), torch.cat(
        [torch.full((n, 1), -1), wbody, torch.full((n, 1), -1)], 1
    )


@pytest.fixture(scope="module")
def wiki_rows(wordpiece, wiki_extracts):
    """About 1,000 rows of 128 WordPiece tokens of real text (~125k tokens)."""
    return packed_rows(wordpiece, wiki_extracts[3000:3600])


def run(tok, ids, seed=0, word_start=None, **cfg):
    cfg = MLMConfig(**cfg)
    if word_start is None and cfg.masking != "token":
        word_start = word_starts(tok)
    special = torch.tensor(sorted(tok.special_ids))
    return mask_tokens(
        ids, cfg, tok.mask_id, tok.vocab_size, special, torch.Generator().manual_seed(seed), word_start
    )


def split_words(selected: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
    """The keys (row, word) of the words that are partly, not wholly, selected."""
    rows = torch.arange(len(words)).unsqueeze(1).expand_as(words)
    key = rows * 10**9 + words
    real = words >= 0
    inside, outside = key[real & selected].unique(), key[real & ~selected].unique()
    return inside[torch.isin(inside, outside)]


# ------------------------------------------------------------------------------- token: unchanged
def frozen_mask_tokens(ids, cfg, mask_id, vocab_size, special_ids, generator):
    """mask_tokens as it was before whole-word and span masking, copied verbatim."""
    candidates = ~torch.isin(ids, special_ids)
    draw = torch.rand(ids.shape, generator=generator)
    selected = (draw < cfg.mask_prob) & candidates
    labels = torch.where(selected, ids, IGNORE)
    how = torch.rand(ids.shape, generator=generator)
    to_mask = selected & (how < cfg.mask_token_frac)
    to_random = selected & (how >= cfg.mask_token_frac) & (how < cfg.mask_token_frac + cfg.random_token_frac)
    inputs = torch.where(to_mask, mask_id, ids)
    allowed = torch.ones(vocab_size, dtype=torch.bool)
    allowed[special_ids] = False
    pool = allowed.nonzero().squeeze(1)
    picks = pool[torch.randint(len(pool), ids.shape, generator=generator)]
    inputs = torch.where(to_random, picks, inputs)
    return inputs, labels


@pytest.mark.parametrize(
    "cfg", [{}, {"mask_prob": 0.3}, {"mask_prob": 0.5, "mask_token_frac": 0.6, "random_token_frac": 0.2}]
)
def test_token_masking_is_bit_for_bit_the_old_algorithm(wordpiece, wiki_rows, cfg):
    ids = wiki_rows[0][:200]
    special = torch.tensor(sorted(wordpiece.special_ids))
    old = frozen_mask_tokens(
        ids, MLMConfig(**cfg), wordpiece.mask_id, 1000, special, torch.Generator().manual_seed(7)
    )
    new = mask_tokens(
        ids,
        MLMConfig(masking="token", **cfg),
        wordpiece.mask_id,
        1000,
        special,
        torch.Generator().manual_seed(7),
    )
    assert torch.equal(old[0], new[0]) and torch.equal(old[1], new[1])
    # the collator (what training uses), with a word table it does not need, draws the same masks
    collate = MLMCollator(
        MLMConfig(**cfg), wordpiece.mask_id, 1000, wordpiece.special_ids, word_starts(wordpiece)
    )
    batch = collate(ids, torch.Generator().manual_seed(7))
    assert torch.equal(batch["input_ids"], old[0]) and torch.equal(batch["labels"], old[1])
    assert MLMConfig().masking == "token"


# ------------------------------------------------------------------------------- whole words
@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
@pytest.mark.parametrize("masking", ["whole_word", "span"])
def test_words_are_selected_entirely_or_not_at_all(kind, masking, request, wiki_extracts):
    tok = request.getfixturevalue(kind)
    ids, words = packed_rows(tok, wiki_extracts[3000:3150])
    for p in (0.15, 0.3):
        _, labels = run(tok, ids, masking=masking, mask_prob=p)
        selected = labels != IGNORE
        assert split_words(selected, words).numel() == 0
        # multi-token words were selected (whole), so the check above had something to catch
        rows = torch.arange(len(words)).unsqueeze(1).expand_as(words)
        key = (rows * 10**9 + words)[selected & (words >= 0)]
        assert (key.unique(return_counts=True)[1] > 1).sum() > 50
    # the same check catches token masking, which cuts words
    _, labels = run(tok, ids, masking="token", mask_prob=0.3)
    assert split_words(labels != IGNORE, words).numel() > 50


@pytest.mark.parametrize("masking", MODES)
@pytest.mark.parametrize("p", [0.15, 0.3, 0.5])
def test_selected_token_fraction_is_mask_prob(wordpiece, wiki_rows, masking, p):
    ids = wiki_rows[0]
    inputs, labels = run(wordpiece, ids, seed=3, masking=masking, mask_prob=p)
    candidates = ~torch.isin(ids, torch.tensor(sorted(wordpiece.special_ids)))
    selected = labels != IGNORE
    assert candidates.sum() > 100_000
    # binomial noise for token / whole-word draws; span rows are filled to their budget (unbiased rounding)
    assert abs(selected.sum() / candidates.sum() - p) < (0.003 if masking == "span" else 0.006)
    # 80/10/10 per selected token in every mode
    n = selected.sum().item()
    as_mask = (inputs[selected] == wordpiece.mask_id).sum().item() / n
    unchanged = (inputs[selected] == ids[selected]).sum().item() / n
    assert abs(as_mask - 0.8) < 0.015 and abs(unchanged - 0.1) < 0.015
    assert torch.equal(inputs[~selected], ids[~selected]) and torch.equal(labels[selected], ids[selected])


# ------------------------------------------------------------------------------- spans
def test_span_lengths_follow_the_truncated_geometric(wordpiece, wiki_rows):
    expected = expected_span_length(0.2, 10)
    assert abs(expected - 3.8) < 0.01  # SpanBERT's mean span length for p=0.2, max 10
    pmf = span_length_pmf(0.2, 10)
    assert abs(float(pmf[0]) - 0.2 / (1 - 0.8**10)) < 1e-9 and abs(float(pmf.sum()) - 1) < 1e-9
    drawn = sample_span_lengths(200_000, 0.2, 10, torch.Generator().manual_seed(0))
    assert drawn.min() == 1 and drawn.max() == 10
    assert abs(drawn.float().mean() - expected) < 0.03
    freq = torch.bincount(drawn, minlength=11)[1:] / len(drawn)
    assert torch.allclose(freq.double(), pmf, atol=0.005)
    # the spans the selection actually used, on real text
    ids = wiki_rows[0]
    special = torch.tensor(sorted(wordpiece.special_ids))
    table = word_starts(wordpiece)
    g = torch.Generator().manual_seed(1)
    selected, used = span_positions(ids, special, table, 0.15, 0.2, 10, g, return_lengths=True)
    assert len(used) > 2000 and used.max() <= 10
    assert abs(used.float().mean() - expected) < 0.15
    _, short = span_positions(ids, special, table, 0.3, 0.5, 3, g, return_lengths=True)
    assert short.max() <= 3 and abs(short.float().mean() - expected_span_length(0.5, 3)) < 0.1
    # spans are runs of words: the selected runs are far longer than whole-word masking's
    wid = word_ids(ids, torch.isin(ids, special), table)

    def words_per_run(sel):
        starts = sel.clone()
        starts[:, 1:] &= ~sel[:, :-1]
        return wid[sel].unique().numel() / starts.sum().item()

    _, ww_labels = run(wordpiece, ids, masking="whole_word", mask_prob=0.15)
    assert words_per_run(selected) > 3.0
    assert words_per_run(ww_labels != IGNORE) < 1.5


def test_spans_stop_at_special_tokens(wordpiece, wiki_rows):
    """A word right after [CLS] / a document's [SEP] can only be covered by a span starting there, so it is
    selected far less often than other words (a span running across the separator would cover it as often)."""
    ids = wiki_rows[0]
    special = torch.isin(ids, torch.tensor(sorted(wordpiece.special_ids)))
    after = torch.zeros_like(special)
    after[:, 1:] = special[:, :-1] & ~special[:, 1:]
    assert after.sum() > 1000
    selected = run(wordpiece, ids, masking="span", mask_prob=0.3)[1] != IGNORE
    assert selected[after].float().mean() < 0.15
    selected = run(wordpiece, ids, masking="whole_word", mask_prob=0.3)[1] != IGNORE
    assert abs(selected[after].float().mean() - 0.3) < 0.05


# ------------------------------------------------------------------------------- invariants
@pytest.mark.parametrize("masking", MODES)
def test_special_tokens_never_selected_nor_sampled(wordpiece, wiki_rows, masking):
    ids = wiki_rows[0][:300].clone()
    ids[::3, 90:] = wordpiece.pad_id  # padded rows
    special = torch.isin(ids, torch.tensor(sorted(wordpiece.special_ids)))
    inputs, labels = run(wordpiece, ids, masking=masking, mask_prob=0.5)
    assert (labels[special] == IGNORE).all() and torch.equal(inputs[special], ids[special])
    randomised = (labels != IGNORE) & (inputs != wordpiece.mask_id) & (inputs != ids)
    assert randomised.any()
    assert not torch.isin(inputs[randomised], torch.tensor(sorted(wordpiece.special_ids))).any()


@pytest.mark.parametrize("masking", MODES)
def test_masks_are_a_function_of_the_generator_seed(wordpiece, wiki_rows, masking):
    ids = wiki_rows[0][:64]
    a, b, c = (run(wordpiece, ids, seed=s, masking=masking) for s in (5, 5, 6))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])


# ------------------------------------------------------------------------------- word starts
def test_word_starts_wordpiece(wordpiece):
    table = word_starts(wordpiece)
    assert table.shape == (wordpiece.vocab_size,) and table.dtype == torch.bool
    vocab = wordpiece.get_vocab()
    for token in ("the", "of", ",", "."):
        assert table[vocab[token]], token
    for token in ("##s", "##ed", "##ing"):
        assert not table[vocab[token]], token
    for i in wordpiece.special_ids:
        assert not table[i]
    pieces = wordpiece.backend.encode("photosynthesis", add_special_tokens=False).tokens
    assert len(pieces) > 1 and pieces[1].startswith("##")
    assert [bool(table[vocab[t]]) for t in pieces] == [True] + [False] * (len(pieces) - 1)
    # a continuation right after [CLS] or [SEP] (a cut word, a new document) starts a word; specials are
    # words of their own
    cls, sep, s, the = wordpiece.cls_id, wordpiece.sep_id, vocab["##s"], vocab["the"]
    ids = torch.tensor([[cls, s, the, s, sep, s, the], [s, s, the, sep, sep, the, s]])
    special = torch.isin(ids, torch.tensor(sorted(wordpiece.special_ids)))
    got = word_ids(ids, special, table)
    assert got.tolist() == [[0, 1, 2, 2, 3, 4, 5], [6, 6, 7, 8, 9, 10, 10]]


def test_word_starts_byte_level_bpe(bpe):
    table = word_starts(bpe)
    vocab = bpe.get_vocab()
    assert table.shape == (bpe.vocab_size,)
    for token in ("<s>", "</s>", "<pad>", "<unk>", "<mask>"):
        assert not table[vocab[token]], token
    assert table[vocab["Ġthe"]] and table[vocab["Ġ"]]
    for token in ("The", "ing", ",", "e"):
        assert not table[vocab[token]], token
    assert int(table.sum()) == sum(t.startswith("Ġ") for t in vocab)
    # five words, each the tokens from one Ġ to the next
    enc = bpe.backend.encode(" the photosynthesis of a mat", add_special_tokens=False)
    assert len(enc.ids) > 5  # the long word is split
    ids = torch.tensor([[bpe.cls_id, *enc.ids, bpe.sep_id]])
    got = word_ids(ids, torch.isin(ids, torch.tensor(sorted(bpe.special_ids))), table)[0, 1:-1]
    assert got.tolist() == [w + 1 for w in enc.word_ids]
    # punctuation and a first word without a leading space: "Hello, world" after <s> is two words
    enc = bpe.backend.encode("Hello, world", add_special_tokens=False)
    ids = torch.tensor([[bpe.cls_id, *enc.ids, bpe.sep_id]])
    got = word_ids(ids, torch.isin(ids, torch.tensor(sorted(bpe.special_ids))), table)[0, 1:-1]
    assert got.unique().numel() == 2 and got[0] == 1


def test_word_starts_unigram(wiki_extracts, tmp_path):
    tok = train_tokenizer(wiki_extracts[:300], "unigram", 300, tmp_path / "uni", show_progress=False)
    table = word_starts(tok)
    vocab = tok.get_vocab()
    assert int(table.sum()) == sum(t.startswith("▁") for t in vocab) > 20
    assert not table[sorted(tok.special_ids)].any()
    enc = tok.backend.encode("the photosynthesis of a mat", add_special_tokens=False)
    ids = torch.tensor([[*enc.ids, tok.eos_id]])
    got = word_ids(ids, torch.isin(ids, torch.tensor(sorted(tok.special_ids))), table)[0, :-1]
    assert len(enc.ids) > 5 and got.tolist() == enc.word_ids


# ------------------------------------------------------------------------------- configuration
def test_bad_masking_settings_are_clear_errors(wordpiece):
    with pytest.raises(WarmstartError, match="unknown mlm.masking 'wwm'.*whole_word") as err:
        MLMConfig(masking="wwm")
    assert "\n" not in str(err.value) and err.value.fix
    with pytest.raises(WarmstartError, match="unknown mlm.masking"):
        from_dict(MLMConfig, {"masking": "spans"})
    with pytest.raises(WarmstartError, match="mask_prob"):
        MLMConfig(mask_prob=1.5)
    with pytest.raises(WarmstartError, match="span_p"):
        MLMConfig(span_p=0.0)
    with pytest.raises(WarmstartError, match="span_max"):
        MLMConfig(span_max=0)
    with pytest.raises(WarmstartError, match="word-start table"):
        MLMCollator(MLMConfig(masking="whole_word"), 4, 1000, wordpiece.special_ids)


def test_maskedlm_data_builds_the_word_table(wordpiece, small_shards):
    shards = TokenShards.open(small_shards, "train")
    windows, collate = MaskedLM.data(shards, 64, wordpiece, MLMConfig())
    assert collate.word_start is None
    windows, collate = MaskedLM.data(shards, 64, wordpiece, MLMConfig(masking="span", mask_prob=0.3))
    assert torch.equal(collate.word_start, word_starts(wordpiece))
    batch = collate(windows.get(range(8)), torch.Generator().manual_seed(0))
    assert batch["input_ids"].shape == (8, 64) and (batch["labels"] != IGNORE).any()
