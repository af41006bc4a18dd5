"""NSP (BERT) and SOP (ALBERT) pairs on real wiki text: chunking, pair labels, layout, masking, training."""

import numpy as np
import pytest
import torch

from tests.helpers.shapes import tiny_bert_config
from warmstart.data.order import step_generator
from warmstart.data.packing import FixedWindowBatches, WindowBatches
from warmstart.data.sentence_pairs import DocumentChunks, PairWindows, truncate_pair
from warmstart.data.shard_writer import prepare_shards
from warmstart.data.shards import TokenShards
from warmstart.errors import WarmstartError
from warmstart.models.bert import BertModel
from warmstart.objectives.mlm import IGNORE, MLMConfig
from warmstart.objectives.nsp_sop import (
    NextSentenceLM,
    NSPConfig,
    SentenceOrderLM,
    SentencePairCollator,
)
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.loop import evaluate

SEQ = 64
NO_MASK = MLMConfig(mask_prob=0.0)


@pytest.fixture(scope="module")
def tok(small_tokenizer):
    return Tokenizer.load(small_tokenizer)


@pytest.fixture(scope="module")
def shards(small_shards):
    return TokenShards.open(small_shards, "train")


def segments(batch, row):
    """(A tokens, B tokens) read back from the [CLS] A [SEP] B [SEP] layout of one row."""
    n = int(batch["attention_mask"][row].sum())
    ids = batch["input_ids"][row, :n].tolist()
    types = batch["token_type_ids"][row, :n]
    a_end = int((types == 0).sum())  # [CLS] A [SEP]
    return ids[1 : a_end - 1], ids[a_end:-1]


def starts_alike(chunk: tuple, tokens: list) -> bool:
    k = min(len(chunk), len(tokens))
    return chunk[:k] == tuple(tokens[:k])


def chunk_docs_by_tokens(chunks):
    """tuple(tokens) -> set of documents holding a chunk with exactly those tokens."""
    table = {}
    for c in range(chunks.num_chunks):
        table.setdefault(tuple(chunks.tokens(c).tolist()), set()).add(int(chunks.doc_of(c)))
    return table


def test_chunks_cut_documents_without_crossing_and_index_stays_per_document(shards):
    seg = 30
    chunks = DocumentChunks(shards, seg)
    assert chunks.num_chunks > 2 * shards.num_docs  # real documents span several chunks
    rebuilt = {d: [] for d in range(shards.num_docs)}
    for c in range(chunks.num_chunks):
        toks = chunks.tokens(c)
        assert 1 <= len(toks) <= seg
        assert shards.doc_sep_id not in toks.tolist()  # never reaches into the separator or the next doc
        d = int(chunks.doc_of(c))
        if rebuilt[d]:
            assert chunks.doc_of(c - 1) == d  # a document's chunks are consecutive ids
        else:
            assert c == 0 or chunks.doc_of(c - 1) == d - 1
        rebuilt[d].append(toks)
        # every chunk but its document's last is full
        assert len(toks) == seg or c + 1 == chunks.num_chunks or chunks.doc_of(c + 1) != d
    for d in range(shards.num_docs):
        assert np.array_equal(np.concatenate(rebuilt[d]), shards.doc(d))
    # examples = chunks with a following chunk in the same document, in order
    a = chunks.pair_chunk(np.arange(chunks.num_pairs))
    expected = [c for c in range(chunks.num_chunks - 1) if chunks.doc_of(c) == chunks.doc_of(c + 1)]
    assert a.tolist() == expected
    # memory: only per-document arrays
    for name, value in vars(chunks).items():
        if isinstance(value, np.ndarray):
            assert len(value) <= shards.num_docs + 1, name


def test_nsp_labels_balanced_positives_next_chunk_negatives_other_document(shards, tok):
    windows, collate = NextSentenceLM.data(shards, SEQ, tok, NO_MASK, NSPConfig())
    chunks = windows.chunks
    table = chunk_docs_by_tokens(chunks)
    labels, negative_docs = [], set()
    for step in range(4):
        a = windows.get(range(len(windows)))
        batch = collate(a, step_generator(0, step))
        labels += batch["sentence_label"].tolist()
        for row, (c, label) in enumerate(zip(a.tolist(), batch["sentence_label"].tolist(), strict=True)):
            first, second = segments(batch, row)
            stretch = chunks.tokens(c).tolist() + chunks.tokens(c + 1).tolist()
            assert first == stretch[: len(first)] and 1 <= len(first) < len(stretch)
            doc = int(chunks.doc_of(c))
            assert chunks.doc_of(c + 1) == doc
            if label == 0:  # IsNext: the rest of A's stretch, same document
                assert first + second == stretch
            else:  # NotNext: the start of a chunk of another document, at most as long as the rest
                assert len(second) <= len(stretch) - len(first)
                holders = {d for key, docs in table.items() if starts_alike(key, second) for d in docs}
                assert holders - {doc}, (c, holders)
                negative_docs |= holders - {doc}
    assert len(labels) > 800
    assert abs(np.mean(labels) - 0.5) < 0.05
    assert len(negative_docs) == shards.num_docs  # negatives come from the whole corpus


def test_layout_segment_ids_mask_and_padding(shards, tok):
    windows, collate = NextSentenceLM.data(shards, SEQ, tok, NO_MASK, NSPConfig())
    batch = collate(windows.get(range(len(windows))), torch.Generator().manual_seed(0))
    ids, types, mask = batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]
    assert set(batch) == {"input_ids", "attention_mask", "token_type_ids", "labels", "sentence_label"}
    assert ids.shape == types.shape == mask.shape == batch["labels"].shape
    assert ids.shape[1] <= SEQ and ids.dtype == torch.long
    lengths = mask.sum(1)
    assert ids.shape[1] == int(lengths.max())  # padded to the batch's longest row
    assert (lengths < ids.shape[1]).any()  # some rows are padded (short last chunks)
    for r in range(len(ids)):
        n = int(lengths[r])
        row = ids[r].tolist()
        first, second = segments(batch, r)
        assert len(first) >= 1 and len(second) >= 1
        assert row[:n] == [tok.cls_id, *first, tok.sep_id, *second, tok.sep_id]
        assert row[n:] == [tok.pad_id] * (len(row) - n)
        assert mask[r].tolist() == [1] * n + [0] * (len(row) - n)
        la = len(first)
        assert types[r].tolist() == [0] * (la + 2) + [1] * (n - la - 2) + [0] * (len(row) - n)
        assert tok.sep_id not in first + second and tok.cls_id not in first + second
    assert (batch["labels"] == IGNORE).all()  # mask_prob 0: nothing to predict


def test_truncate_pair_matches_berts_loop():
    def reference(la, lb, m):  # google-research/bert truncate_seq_pair, on lengths
        while la + lb > m:
            if la > lb:
                la -= 1
            else:
                lb -= 1
        return la, lb

    for la in range(0, 40):
        for lb in range(0, 40):
            for m in (0, 1, 7, 30, 61):
                assert truncate_pair(la, lb, m) == reference(la, lb, m), (la, lb, m)


def test_long_segments_are_truncated_to_seq_len(shards, tok):
    seq = 40  # chunks of 30 tokens: a stretch of two does not fit, so the longer part loses its end
    windows = PairWindows(shards, seq, "nsp", seg_len=30)
    collate = SentencePairCollator(windows, "nsp", seq, tok, NO_MASK)
    a = windows.get(range(len(windows)))
    batch = collate(a, torch.Generator().manual_seed(3))
    assert batch["input_ids"].shape[1] == seq
    assert (batch["attention_mask"].sum(1) <= seq).all()
    for row, c in enumerate(a.tolist()):
        first, second = segments(batch, row)
        stretch = windows.chunks.tokens(c).tolist() + windows.chunks.tokens(c + 1).tolist()
        assert first == stretch[: len(first)]  # a prefix: cut from the end
        assert len(first) + len(second) <= seq - 3


def test_sop_pairs_are_a_cut_stretch_in_or_out_of_order(shards, tok):
    windows, collate = SentenceOrderLM.data(shards, SEQ, tok, NO_MASK, NSPConfig())
    chunks = windows.chunks
    labels, first_lengths = [], {0: [], 1: []}
    for step in range(12):
        a = windows.get(range(len(windows)))
        batch = collate(a, step_generator(1, step))
        labels += batch["sentence_label"].tolist()
        for row, (c, label) in enumerate(zip(a.tolist(), batch["sentence_label"].tolist(), strict=True)):
            assert chunks.doc_of(c) == chunks.doc_of(c + 1)
            stretch = chunks.tokens(c).tolist() + chunks.tokens(c + 1).tolist()
            first, second = segments(batch, row)
            assert (second + first if label == 1 else first + second) == stretch
            assert first and second
            first_lengths[label].append(len(first) / len(stretch))
    assert abs(np.mean(labels) - 0.5) < 0.03
    # the cut is uniform, so where the first [SEP] sits says nothing about the order (a shortcut otherwise:
    # chunks are full-length except a document's last)
    assert abs(np.mean(first_lengths[0]) - np.mean(first_lengths[1])) < 0.03


@pytest.mark.parametrize("masking", ["token", "whole_word", "span"])
def test_special_tokens_never_masked(shards, tok, masking):
    windows, collate = NextSentenceLM.data(
        shards, SEQ, tok, MLMConfig(mask_prob=0.6, masking=masking), NSPConfig()
    )
    a = windows.get(range(len(windows)))
    batch = collate(a, torch.Generator().manual_seed(4))
    plain = SentencePairCollator(windows, "nsp", SEQ, tok, NO_MASK)(a, torch.Generator().manual_seed(4))
    original = plain["input_ids"]  # same generator: the same pairs, unmasked
    assert torch.equal(batch["sentence_label"], plain["sentence_label"])
    layout = torch.tensor([tok.cls_id, tok.sep_id, tok.pad_id])
    special = torch.isin(original, layout)
    assert (batch["labels"][special] == IGNORE).all()
    assert torch.equal(batch["input_ids"][special], original[special])
    assert not torch.isin(batch["input_ids"][~special], layout).any()  # nor sampled as replacements
    selected = batch["labels"] != IGNORE
    assert abs(selected.float().sum() / (~special).sum() - 0.6) < 0.05
    assert torch.equal(batch["labels"][selected], original[selected])
    assert (batch["input_ids"][selected] == tok.mask_id).float().mean() > 0.7


@pytest.mark.parametrize("unit_cls", [NextSentenceLM, SentenceOrderLM])
def test_batches_are_a_function_of_the_generator_seed(shards, tok, unit_cls):
    windows, collate = unit_cls.data(shards, SEQ, tok, MLMConfig(), NSPConfig())
    idx = np.arange(0, len(windows), 7)
    one = collate(windows.get(idx), step_generator(0, 5))
    two = collate(windows.get(idx), step_generator(0, 5))
    other = collate(windows.get(idx), step_generator(0, 6))
    assert one.keys() == two.keys()
    assert all(torch.equal(one[k], two[k]) for k in one)
    assert not torch.equal(one["sentence_label"], other["sentence_label"])
    assert not torch.equal(one["labels"], other["labels"])


def test_clear_errors(tmp_path, tok, wiki_extracts):
    one = tmp_path / "one"
    prepare_shards({"train": [wiki_extracts[3000]]}, tok, one, show_progress=False)
    with pytest.raises(WarmstartError, match="another document") as e:
        NextSentenceLM.data(TokenShards.open(one), SEQ, tok, MLMConfig(), NSPConfig())
    assert e.value.fix
    SentenceOrderLM.data(TokenShards.open(one), SEQ, tok, MLMConfig(), NSPConfig())  # SOP needs no negatives
    short = tmp_path / "short"
    prepare_shards({"train": ["A short line.", "Another short one."]}, tok, short, show_progress=False)
    for unit_cls in (NextSentenceLM, SentenceOrderLM):
        with pytest.raises(WarmstartError, match="two consecutive segments") as e:
            unit_cls.data(TokenShards.open(short), SEQ, tok, MLMConfig(), NSPConfig())
        assert "seq_len" in e.value.fix
    with pytest.raises(WarmstartError, match="pooler") as e:
        NextSentenceLM(BertModel(tiny_bert_config(pooler=False)), MLMConfig(), NSPConfig())
    assert "model.pooler=true" in e.value.fix


@pytest.mark.slow
def test_training_smoke_loss_falls_and_stats_follow_the_loop(small_shards, shards, tok):
    torch.manual_seed(0)
    encoder = BertModel(tiny_bert_config(tok.vocab_size, max_position_embeddings=64))
    unit = NextSentenceLM(encoder, MLMConfig(), NSPConfig())
    assert unit.encoder is encoder and tuple(unit.sections) == ("mlm", "nsp")
    assert unit.hf_architecture == "BertForPreTraining"
    prefixes = {k.split(".")[0] for k in unit.state_dict()}
    assert prefixes == {"encoder", "head", "sentence_head"}
    windows, collate = NextSentenceLM.data(shards, SEQ, tok, MLMConfig(), NSPConfig())
    train = WindowBatches(windows, 16, 0, collate)
    opt = torch.optim.AdamW(unit.parameters(), lr=1e-3)
    losses = []
    unit.train()
    for step in range(30):
        loss, stats = unit(train.batch(step))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.5, losses
    val = TokenShards.open(small_shards, "validation")
    val_windows, val_collate = SentenceOrderLM.data(val, SEQ, tok, MLMConfig(), NSPConfig())
    evals = FixedWindowBatches(val_windows, 16, 2, 0, val_collate)
    sop = SentenceOrderLM(unit.encoder, MLMConfig(), NSPConfig(weight=0.5))
    metrics = evaluate(sop, evals, torch.device("cpu"))
    assert set(metrics) == {
        "loss",
        "mlm_loss",
        "accuracy",
        "sentence_loss",
        "sentence_accuracy",
        "perplexity",
    }
    assert 0 <= metrics["sentence_accuracy"] <= 1 and 0 <= metrics["accuracy"] <= 1
    assert metrics["perplexity"] == pytest.approx(np.exp(metrics["mlm_loss"]), rel=1e-5)
    batch = next(iter(evals))
    with torch.no_grad():
        loss, stats = sop.eval()(batch)
    mlm_mean = stats["mlm_loss"][0] / stats["mlm_loss"][1]
    sentence_mean = stats["sentence_loss"][0] / stats["sentence_loss"][1]
    assert float(loss) == pytest.approx(float(mlm_mean + 0.5 * sentence_mean), rel=1e-5)
    assert stats["sentence_accuracy"][1] == len(batch["sentence_label"])
