"""BART denoising transforms on fixed seeds, and the batches of the collator on real text."""

import pytest
import torch

from warmstart.errors import WarmstartError
from warmstart.objectives.denoising import (
    DenoisingCollator,
    DenoisingConfig,
    apply_spans,
    document_rotation,
    infilling_spans,
    sentence_ends,
    sentence_permutation,
    text_infilling,
    token_deletion,
    token_masking,
)
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import train_tokenizer

BOS, PAD, EOS, UNK, MASK = 0, 1, 2, 3, 4  # the bpe kind's special ids
SPECIAL = torch.tensor([BOS, PAD, EOS, UNK, MASK])


@pytest.fixture(scope="module")
def bpe(wiki_extracts, tmp_path_factory):
    out = tmp_path_factory.mktemp("bpe") / "tok"
    return train_tokenizer(wiki_extracts[:1500], "bpe", 1000, out, show_progress=False)


@pytest.fixture(scope="module")
def windows(bpe, wiki_extracts):
    """16 windows of 120 tokens of real text, documents separated by </s> as in packed shards."""
    stream = [i for text in wiki_extracts[2000:2100] for i in bpe.encode(text) + [bpe.eos_id]]
    return torch.tensor(stream[: 16 * 120]).view(16, 120)


def row(seed, n=200):
    """Random ordinary ids with a document separator every 37 tokens."""
    ids = torch.randint(5, 1000, (n,), generator=torch.Generator().manual_seed(seed))
    ids[::37] = EOS
    return ids


def specials_of(ids):
    return ids[torch.isin(ids, SPECIAL)].tolist()


def test_token_masking_counts_and_spares_specials():
    ids = row(0)
    ordinary = int((~torch.isin(ids, SPECIAL)).sum())
    out = token_masking(ids, 0.3, MASK, torch.Generator().manual_seed(1), special=SPECIAL)
    assert out.shape == ids.shape
    assert int((out == MASK).sum()) == round(0.3 * ordinary)
    changed = out != ids
    assert (out[changed] == MASK).all() and (ids[ids == EOS] == out[ids == EOS]).all()
    # random replacements: about random_frac of the masked tokens, never a special id
    big = torch.cat([row(s) for s in range(50)])
    out = token_masking(
        big, 0.3, MASK, torch.Generator().manual_seed(2), special=SPECIAL, random_frac=0.5, vocab_size=1000
    )
    masked = (out == MASK).sum() + ((out != big) & (out != MASK)).sum()
    random = ((out != big) & (out != MASK)).sum() / masked
    assert abs(random - 0.5) < 0.05
    assert (out[big == EOS] == EOS).all()
    assert not torch.isin(out[(out != big) & (out != MASK)], SPECIAL).any()


def test_token_deletion_removes_p_and_keeps_order():
    ids = row(3)
    ordinary = int((~torch.isin(ids, SPECIAL)).sum())
    out = token_deletion(ids, 0.3, torch.Generator().manual_seed(4), special=SPECIAL)
    assert len(out) == len(ids) - round(0.3 * ordinary)
    it = iter(ids.tolist())
    assert all(any(x == y for y in it) for x in out.tolist())  # a subsequence: order kept
    assert specials_of(out) == specials_of(ids)


def reference_infill(ids, spans, mask_id):
    """The slow spelled-out version of apply_spans."""
    out, skip = [], set()
    starts = {s: n for s, n in spans}
    for i, t in enumerate(ids.tolist() + [None]):
        if i in starts:
            out.append(mask_id)
            skip.update(range(i, i + starts[i]))
        if t is not None and i not in skip:
            out.append(t)
    return out


def test_text_infilling_spans_masks_and_coverage():
    coverage, lengths = [], []
    for seed in range(60):
        ids, g = row(seed), torch.Generator().manual_seed(seed)
        spans = infilling_spans(ids, 0.3, 3.0, g, special=SPECIAL)
        out = apply_spans(ids, spans, MASK)
        assert out.tolist() == reference_infill(ids, spans, MASK)
        assert int((out == MASK).sum()) == len(spans)  # one mask per span, zero-length ones included
        covered = torch.zeros(len(ids), dtype=torch.bool)
        for start, n in spans:
            assert not covered[max(start - 1, 0) : start + n + 1].any()  # disjoint, not even touching
            covered[start : start + n] = True
        assert not covered[torch.isin(ids, SPECIAL)].any()  # separators are never swallowed
        assert specials_of(out[out != MASK]) == specials_of(ids)
        coverage.append(covered.sum() / (~torch.isin(ids, SPECIAL)).sum())
        lengths += [n for _, n in spans]
    assert abs(sum(coverage) / len(coverage) - 0.3) < 0.01
    assert 2.5 < sum(lengths) / len(lengths) < 3.5  # Poisson(3) lengths, the last of each row trimmed


def test_zero_length_spans_insert_masks():
    ids = row(7)
    g = torch.Generator().manual_seed(7)
    spans = infilling_spans(ids, 0.1, 0.3, g, special=SPECIAL)  # Poisson(0.3) is 0 three times in four
    inserts = [s for s, n in spans if n == 0]
    assert len(inserts) > len(spans) // 2
    out = apply_spans(ids, spans, MASK)
    assert len(out) == len(ids) - sum(n for _, n in spans) + len(spans) > len(ids)
    # with only the insertions applied, dropping the masks gives the original back
    only = apply_spans(ids, [(s, 0) for s in inserts], MASK)
    assert len(only) == len(ids) + len(inserts) and torch.equal(only[only != MASK], ids)
    same = text_infilling(ids, 0.1, 0.3, MASK, torch.Generator().manual_seed(7), special=SPECIAL)
    assert torch.equal(same, out)


def test_sentence_permutation_keeps_sentences():
    end = torch.zeros(1000, dtype=torch.bool)
    end[[EOS, 10]] = True  # token 10 plays '.'
    ids = torch.tensor([20, 21, 10, 22, 10, 23, 24, 25, 10, 26, EOS, 27, 28, 10])
    sentences = sorted([(20, 21, 10), (22, 10), (23, 24, 25, 10), (26, EOS), (27, 28, 10)])
    outs = set()
    for seed in range(30):
        out = sentence_permutation(ids, end, torch.Generator().manual_seed(seed))
        assert sorted(out.tolist()) == sorted(ids.tolist())
        cuts = (end[out].nonzero().squeeze(1) + 1).tolist()
        assert sorted(tuple(s.tolist()) for s in torch.tensor_split(out, cuts) if len(s)) == sentences
        outs.add(tuple(out.tolist()))
    assert len(outs) > 10
    # a trailing fragment without an end stays whole
    out = sentence_permutation(torch.tensor([20, 10, 21, 22]), end, torch.Generator().manual_seed(1))
    assert out.tolist() in ([20, 10, 21, 22], [21, 22, 20, 10])


def test_document_rotation_is_a_cyclic_shift():
    ids = row(9, 50)
    shifts = set()
    for seed in range(40):
        out = document_rotation(ids, torch.Generator().manual_seed(seed))
        k = [k for k in range(1, 50) if torch.equal(out, torch.roll(ids, -k))]
        assert len(k) == 1
        shifts.add(k[0])
    assert len(shifts) > 20
    assert document_rotation(torch.tensor([5]), torch.Generator()).tolist() == [5]


def test_sentence_ends_table(bpe):
    table = sentence_ends(bpe)
    assert table.shape == (bpe.vocab_size,)
    assert table[bpe.token_to_id(".")] and table[bpe.eos_id]
    assert not table[[bpe.bos_id, bpe.pad_id, bpe.mask_id]].any()
    assert not table[bpe.encode(" the")].any()


def test_collator_batch_on_real_text(bpe, windows):
    collate = DenoisingCollator(DenoisingConfig(), bpe)
    batch = collate(windows, torch.Generator().manual_seed(0))
    n, w = windows.shape
    expected = torch.cat([torch.full((n, 1), bpe.bos_id), windows, torch.full((n, 1), bpe.eos_id)], dim=1)
    assert torch.equal(batch["labels"], expected)  # always <s> original </s>
    assert (batch["decoder_attention_mask"] == 1).all()
    assert torch.equal(batch["decoder_input_ids"][:, 1:], batch["labels"][:, :-1])
    assert (batch["decoder_input_ids"][:, 0] == bpe.eos_id).all()  # BART starts decoding from </s>
    src, att = batch["input_ids"], batch["attention_mask"]
    assert src.shape == att.shape and src.shape[1] <= w + 2
    assert (src[:, 0] == bpe.bos_id).all()
    lengths = att.sum(1)
    assert (src[torch.arange(n), lengths - 1] == bpe.eos_id).all()
    assert torch.equal(att.bool(), torch.arange(src.shape[1]) < lengths[:, None])
    assert (src[att == 0] == bpe.pad_id).all() and (att == 0).any()  # rows differ in length
    for i in range(n):
        real = src[i, 1 : lengths[i] - 1]
        assert (real == bpe.mask_id).any()
        assert (real == bpe.eos_id).sum() == (windows[i] == bpe.eos_id).sum()  # separators kept
    again = collate(windows, torch.Generator().manual_seed(0))
    assert all(torch.equal(batch[k], again[k]) for k in batch)
    other = collate(windows, torch.Generator().manual_seed(1))
    assert not torch.equal(batch["input_ids"], other["input_ids"])


@pytest.mark.parametrize("transform", ["token_masking", "token_deletion", "document_rotation"])
def test_each_transform_through_the_collator(bpe, windows, transform):
    collate = DenoisingCollator(DenoisingConfig(transforms=[transform]), bpe)
    batch = collate(windows, torch.Generator().manual_seed(2))
    src = batch["input_ids"]
    if transform == "token_masking":
        assert src.shape[1] == windows.shape[1] + 2 and (src == bpe.mask_id).any()
    elif transform == "token_deletion":
        ordinary = (~torch.isin(windows[0], torch.tensor(sorted(bpe.special_ids)))).sum()
        assert batch["attention_mask"][0].sum() == windows.shape[1] + 2 - round(0.3 * int(ordinary))
    else:
        assert sorted(src[0, 1:-1].tolist()) == sorted(windows[0].tolist())


def test_bad_config_and_tokenizer_refused(small_tokenizer):
    with pytest.raises(WarmstartError, match="text_infilling") as info:
        DenoisingConfig(transforms=["text_infilling", "shuffle"])
    assert "document_rotation" in info.value.fix and "shuffle" in info.value.problem
    with pytest.raises(WarmstartError, match="mask_prob"):
        DenoisingConfig(mask_prob=1.5)
    with pytest.raises(WarmstartError, match="poisson_lambda"):
        DenoisingConfig(poisson_lambda=0)
    with pytest.raises(WarmstartError, match="bpe"):
        DenoisingCollator(DenoisingConfig(), Tokenizer.load(small_tokenizer))
