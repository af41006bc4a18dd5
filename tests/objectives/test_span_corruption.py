"""T5 span corruption: the noise mask, the sentinel rewrite, the length arithmetic and the batch format."""

import pytest
import torch

from warmstart.errors import WarmstartError
from warmstart.objectives.mlm import IGNORE
from warmstart.objectives.span_corruption import (
    SpanCorruptionCollator,
    SpanCorruptionConfig,
    random_spans_noise_mask,
    raw_length,
    sentinel_ids,
    seq2seq_batch,
    span_corrupt,
)
from warmstart.tokenization.sentinels import add_sentinels
from warmstart.tokenization.train import train_tokenizer

EOS, PAD = 1, 0
SENTINELS = list(range(1099, 999, -1))  # <extra_id_0> has the last id, as in T5


def spans_of(mask: torch.Tensor) -> list[tuple[int, int]]:
    """(start, length) of each True run."""
    out, start = [], None
    for i, m in enumerate(mask.tolist() + [False]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            out.append((start, i - start))
            start = None
    return out


def test_lecture_example():
    words = "Thank you for inviting me to your party last week .".split()
    vocab = {w: i + 10 for i, w in enumerate(dict.fromkeys(words))}
    vocab.update({"<X>": 100, "<Y>": 101, "<Z>": 102, "</s>": EOS})
    ids = torch.tensor([vocab[w] for w in words])
    noise = torch.tensor([w in ("for", "inviting", "last") for w in words])
    inputs, targets = span_corrupt(ids, noise, [100, 101, 102, 103], EOS)
    expect_in = "Thank you <X> me to your party <Y> week . </s>".split()
    expect_out = "<X> for inviting <Y> last <Z> </s>".split()
    assert inputs.tolist() == [vocab[w] for w in expect_in]
    assert targets.tolist() == [vocab[w] for w in expect_out]


@pytest.mark.parametrize("length", [2, 5, 10, 37, 100, 568])
def test_noise_mask_counts_and_alternation(length):
    noise = round(length * 0.15)
    noise = min(max(noise, 1), length - 1)
    n_spans = min(max(1, round(noise / 3.0)), length - noise)
    seen = set()
    for seed in range(20):
        mask = random_spans_noise_mask(length, 0.15, 3.0, torch.Generator().manual_seed(seed))
        assert mask.dtype == torch.bool and mask.shape == (length,)
        assert int(mask.sum()) == noise
        assert len(spans_of(mask)) == n_spans
        assert not mask[0] and mask[-1]  # non-noise first; T5's interleaving ends on a noise span
        seen.add(tuple(mask.tolist()))
    assert n_spans == 1 or len(seen) > 15  # one span sits at the end; several are really random
    same = random_spans_noise_mask(length, 0.15, 3.0, torch.Generator().manual_seed(3))
    assert (
        same.tolist() == random_spans_noise_mask(length, 0.15, 3.0, torch.Generator().manual_seed(3)).tolist()
    )


def test_mean_span_length_is_respected():
    lengths = []
    for seed in range(50):
        mask = random_spans_noise_mask(512, 0.15, 3.0, torch.Generator().manual_seed(seed))
        lengths += [n for _, n in spans_of(mask)]
    assert abs(sum(lengths) / len(lengths) - 77 / 26) < 1e-6  # 77 noise tokens in 26 spans, every time


def test_inputs_and_targets_rebuild_the_original():
    g = torch.Generator().manual_seed(0)
    for _ in range(30):
        ids = torch.randint(10, 900, (int(torch.randint(2, 200, (1,), generator=g)),), generator=g)
        mask = random_spans_noise_mask(len(ids), 0.3, 2.0, g)
        inputs, targets = span_corrupt(ids, mask, SENTINELS, EOS)
        assert inputs[-1] == EOS and targets[-1] == EOS
        n = len(spans_of(mask))
        assert targets[-2] == SENTINELS[n]  # the final sentinel
        # substitute each sentinel of the input by what follows it in the target
        fill, current = {}, None
        for t in targets[:-2].tolist():
            if t in SENTINELS:
                current = t
                fill[t] = []
            else:
                fill[current].append(t)
        rebuilt = [x for t in inputs[:-1].tolist() for x in fill.get(t, [t])]
        assert rebuilt == ids.tolist()
        assert [t for t in inputs.tolist() if t in SENTINELS] == SENTINELS[:n]


@pytest.mark.parametrize("seq_len", [8, 16, 64, 100, 128, 512])
def test_raw_length_fills_seq_len_exactly(seq_len):
    raw, target_len = raw_length(seq_len, 0.15, 3.0)
    collate = SpanCorruptionCollator(SpanCorruptionConfig(), SENTINELS, EOS, PAD, PAD)
    g = torch.Generator().manual_seed(seq_len)
    batch = collate(torch.randint(10, 900, (4, raw), generator=g), g)
    assert batch["input_ids"].shape[1] <= seq_len
    assert batch["labels"].shape[1] <= target_len
    assert (batch["attention_mask"] == 1).all()  # same counts in every row: nothing to pad
    one_more = collate(torch.randint(10, 900, (4, raw + 1), generator=g), g)
    assert one_more["input_ids"].shape[1] > seq_len  # raw is the largest that fits
    if seq_len >= 64:
        assert batch["input_ids"].shape[1] == seq_len and batch["labels"].shape[1] == target_len


def test_raw_length_matches_t5():
    assert raw_length(512, 0.15, 3.0) == (568, 115)  # T5: 568 raw tokens; 114 targets + our final sentinel
    with pytest.raises(WarmstartError, match="too short"):
        raw_length(2, 0.15, 3.0)


def test_seq2seq_batch_pads_and_shifts():
    batch = seq2seq_batch([[5, 6, 7, 1], [8, 1]], [[9, 1], [10, 11, 12, 1]], pad_id=PAD, decoder_start_id=PAD)
    assert batch["input_ids"].tolist() == [[5, 6, 7, 1], [8, 1, PAD, PAD]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 0, 0]]
    assert batch["labels"].tolist() == [[9, 1, IGNORE, IGNORE], [10, 11, 12, 1]]
    assert batch["decoder_input_ids"].tolist() == [[PAD, 9, PAD, PAD], [PAD, 10, 11, 12]]
    assert batch["decoder_attention_mask"].tolist() == [[1, 1, 0, 0], [1, 1, 1, 1]]
    assert all(v.dtype == torch.long for v in batch.values())


def test_collator_on_real_text_with_sentinel_tokenizer(wiki_extracts, tmp_path):
    bare = train_tokenizer(wiki_extracts[:400], "unigram", 1000, tmp_path / "tok", show_progress=False)
    with pytest.raises(WarmstartError, match="no sentinel tokens"):
        SpanCorruptionCollator.for_tokenizer(SpanCorruptionConfig(), bare)
    tok = add_sentinels(bare, 100)
    assert len(sentinel_ids(tok)) == 100
    stream = [i for text in wiki_extracts[:60] for i in tok.encode(text) + [tok.eos_id]]
    raw, target_len = raw_length(128, 0.15, 3.0)
    ids = torch.tensor(stream[: 8 * raw]).view(8, raw)
    collate = SpanCorruptionCollator.for_tokenizer(SpanCorruptionConfig(), tok)
    batch = collate(ids, torch.Generator().manual_seed(5))
    assert batch["input_ids"].shape == (8, 128) and batch["labels"].shape == (8, target_len)
    assert batch["decoder_attention_mask"].shape == (8, target_len)
    assert (batch["decoder_input_ids"][:, 0] == tok.pad_id).all()  # T5 starts decoding from <pad>
    assert torch.equal(batch["decoder_input_ids"][:, 1:], batch["labels"][:, :-1])
    assert (batch["labels"][:, 0] == tok.token_to_id("<extra_id_0>")).all()
    text = tok.decode(batch["input_ids"][0], skip_special_tokens=False)
    assert "<extra_id_0>" in text and "<extra_id_1>" in text
    again = collate(ids, torch.Generator().manual_seed(5))
    assert all(torch.equal(batch[k], again[k]) for k in batch)
    other = collate(ids, torch.Generator().manual_seed(6))
    assert not torch.equal(batch["input_ids"], other["input_ids"])


def test_too_few_sentinels_and_bad_config_refused():
    mask = torch.tensor([False, True, False, True, False, True])
    with pytest.raises(WarmstartError, match="need 4 sentinels"):
        span_corrupt(torch.arange(6), mask, [100, 101, 102], EOS)
    for bad in ({"noise_density": 0.0}, {"noise_density": 1.0}, {"mean_span_length": 0.5}):
        with pytest.raises(WarmstartError, match="span_corruption"):
            SpanCorruptionConfig(**bad)
