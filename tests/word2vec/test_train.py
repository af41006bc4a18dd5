"""word2vec training: vocabulary, subsampling, noise, windows, the compiled SGD steps against autograd, a tiny
real run."""

import numpy as np
import pytest
import torch

from warmstart.errors import WarmstartError
from warmstart.word2vec.batches import Examples, NoiseSampler, chunk_bounds, make_examples
from warmstart.word2vec.kernel import cbow_chunk, skipgram_chunk
from warmstart.word2vec.train import Word2VecConfig, train
from warmstart.word2vec.vocab import Vocab

DOCS = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "and", "the", "cat"], ["zebra"]]


def test_vocab_order_counts_and_encoding():
    vocab = Vocab.build(DOCS, min_count=1)
    assert vocab.words[:2] == ["the", "cat"]  # 3 and 2 occurrences
    assert vocab.words[2:] == ["sat", "on", "mat", "a", "dog", "and", "zebra"]  # ties: first occurrence
    assert vocab.counts.dtype == np.int64 and vocab.counts.tolist() == [3, 2, 1, 1, 1, 1, 1, 1, 1]
    small = Vocab.build(DOCS, min_count=2)
    ids, offsets = small.encode(DOCS)
    assert small.words == ["the", "cat"] and small.total == 5
    assert ids.tolist() == [0, 1, 0, 0, 1] and offsets.tolist() == [0, 3, 5, 5]  # OOV dropped
    assert Vocab.build(DOCS, min_count=1, max_vocab=3).words == ["the", "cat", "sat"]


def test_subsampling_formula():
    vocab = Vocab.build([["w"] * 5000 + ["x"] * 300 + ["y"] * 20 + ["z"] * 4], min_count=5)
    total = 5000 + 300 + 20  # z is below min_count: not part of the total
    sample = 1e-3
    expected = [min(1.0, (np.sqrt(f / (sample * total)) + 1) * (sample * total) / f) for f in (5000, 300, 20)]
    np.testing.assert_allclose(vocab.keep_probs(sample), expected, rtol=1e-12)
    assert vocab.keep_probs(1e-2)[-1] == 1.0  # rare words are always kept (capped at 1)
    assert vocab.keep_probs(0).tolist() == [1.0, 1.0, 1.0]


def test_noise_distribution_and_sampler():
    counts = np.array([900, 400, 120, 60, 30, 9, 5, 5, 1, 1])
    vocab = Vocab([str(i) for i in range(len(counts))], counts)
    probs = vocab.noise_distribution()
    np.testing.assert_allclose(probs, counts**0.75 / (counts**0.75).sum())
    ids = np.zeros(40_001, np.int64)  # one document: every word a centre with 5 negatives
    ex = make_examples(ids, np.zeros(len(ids), np.int32), 0, np.ones(1), NoiseSampler(probs), 2, 5, 0)
    observed = np.bincount(ex.negatives.ravel(), minlength=len(counts))
    n = observed.sum()
    assert n == 200_005
    chi2 = (((observed - n * probs) ** 2) / (n * probs)).sum()
    assert chi2 < 30  # 9 degrees of freedom: the 99.9% quantile is 27.9


def test_windows_stay_in_documents_and_reach():
    """Word i has id i: each centre's context is exactly the words within some reach r in 1..window of it
    in its own document, and every reach occurs."""
    rng = np.random.default_rng(0)
    doc = np.repeat(np.arange(40), rng.integers(1, 12, size=40)).astype(np.int32)
    ids = np.arange(len(doc))
    ex = make_examples(ids, doc, 100, np.ones(len(ids)), NoiseSampler(np.ones(3)), 5, 2, 1)
    reaches = set()
    for c, centre in enumerate(ex.words):
        got = sorted(ex.inputs[ex.starts[c] : ex.starts[c + 1]].tolist())
        fits = [
            r
            for r in range(1, 6)
            if got == [j for j in ids if j != centre and abs(j - centre) <= r and doc[j] == doc[centre]]
        ]
        assert fits, (centre, got)
        reaches.update(fits)
        assert ex.position[c] == centre + 100
    assert reaches == {1, 2, 3, 4, 5}
    alone = {i for i in ids if (doc == doc[i]).sum() == 1}
    assert alone and not alone & set(ex.words.tolist())  # a one-word document has no example


def test_window_sizes_fall_in_one_to_window_and_subsampling_keeps_its_share():
    ids = np.zeros(5000, dtype=np.int64)  # one long document
    ex = make_examples(ids, ids.astype(np.int32), 0, np.ones(1), NoiseSampler(np.ones(1)), 4, 1, 3)
    sizes = np.diff(ex.starts)[10:-10]  # contexts per centre word away from the ends: 2 * window size
    assert set(sizes.tolist()) == {2, 4, 6, 8} and ex.kept == 5000
    half = make_examples(ids, ids.astype(np.int32), 0, np.full(1, 0.5), NoiseSampler(np.ones(1)), 4, 1, 3)
    assert abs(half.kept - 2500) < 150  # 4 sigma
    again = make_examples(ids, ids.astype(np.int32), 0, np.full(1, 0.5), NoiseSampler(np.ones(1)), 4, 1, 3)
    np.testing.assert_array_equal(again.inputs, half.inputs)  # the same seed, the same examples


def sgns_loss(v_c, u_o, u_neg):
    """The negative of log sigma(u_o . v_c) + sum_k log sigma(-u_neg_k . v_c), per example (rows)."""
    pos = torch.nn.functional.logsigmoid((u_o * v_c).sum(-1))
    return -(pos + torch.nn.functional.logsigmoid(-(u_neg * v_c.unsqueeze(1)).sum(-1)).sum(-1))


def one_centre(contexts, centre, negatives):
    return Examples(
        np.array([centre]), np.array(contexts), np.array([0, len(contexts)]), np.array([negatives]),
        np.zeros(1, np.int64), 1,
    )  # fmt: skip


def tables(rows=8, dim=6):
    g = torch.Generator().manual_seed(0)
    return torch.randn(rows, dim, generator=g) * 0.5, torch.randn(rows, dim, generator=g) * 0.5


def run_kernel(model, ex, syn0, syn1, lr, mean=True):
    args = (syn0.numpy(), syn1.numpy(), ex.inputs, ex.starts, ex.words, ex.negatives, ex.position)
    schedule = (lr, lr, 0.0, 1.0, 1)  # a constant rate; every example measured
    if model == "skipgram":
        return skipgram_chunk(*args, *schedule)
    return cbow_chunk(*args, *schedule, mean)


def test_a_skipgram_window_is_one_sgd_step_of_its_summed_loss():
    """Context rows 0, 1, 2 each predict centre 3 against negatives 4, 5 and 3 (= the centre: skipped): the
    kernel's new rows are the old ones minus lr times autograd's gradient of the window's summed loss."""
    syn0, syn1 = tables()
    ex, lr = one_centre([0, 1, 2], 3, [4, 5, 3]), 0.3
    v = syn0[[0, 1, 2]].clone().requires_grad_()
    u = syn1.clone().requires_grad_()
    reference = sgns_loss(v, u[3].expand(3, -1), u[[4, 5]].expand(3, -1, -1)).sum()  # 3 skipped
    reference.backward()
    want0, want1 = syn0.clone(), syn1 - lr * u.grad
    want0[[0, 1, 2]] -= lr * v.grad
    loss, measured = run_kernel("skipgram", ex, syn0, syn1, lr)
    assert measured == 3 and loss == pytest.approx(reference.item(), rel=1e-5)
    torch.testing.assert_close(syn0, want0)
    torch.testing.assert_close(syn1, want1)


@pytest.mark.parametrize("mean", [True, False])
def test_a_cbow_step_is_word2vec_cs(mean):
    """h = mean (or sum) of context rows 0, 1 predicts centre 2 against negatives 3, 2 (skipped) and 4;
    the output rows take -lr * dL/du and every context row the whole -lr * dL/dh, as word2vec.c."""
    syn0, syn1 = tables()
    ex, lr = one_centre([0, 1], 2, [3, 2, 4]), 0.2
    h = (syn0[[0, 1]].mean(0) if mean else syn0[[0, 1]].sum(0)).unsqueeze(0).requires_grad_()
    u = syn1.clone().requires_grad_()
    reference = sgns_loss(h, u[[2]], u[[3, 4]].unsqueeze(0)).sum()
    reference.backward()
    want0, want1 = syn0.clone(), syn1 - lr * u.grad
    want0[[0, 1]] -= lr * h.grad
    loss, measured = run_kernel("cbow", ex, syn0, syn1, lr, mean)
    assert measured == 1 and loss == pytest.approx(reference.item(), rel=1e-5)
    torch.testing.assert_close(syn0, want0)
    torch.testing.assert_close(syn1, want1)


def test_user_errors_are_clear():
    with pytest.raises(WarmstartError, match="the corpus has no words"):
        Vocab.build([])
    with pytest.raises(WarmstartError, match="the corpus has no words"):
        train([[]], progress=False)
    with pytest.raises(WarmstartError, match=r"most frequent occurs 3 times.*min_count to 3 or lower"):
        Vocab.build(DOCS, min_count=50)
    with pytest.raises(WarmstartError, match="unknown word2vec model"):
        Word2VecConfig(model="glove")


def test_chunks_cover_the_corpus_in_whole_documents():
    offsets = np.array([0, 5, 5, 12, 30, 31])
    bounds = chunk_bounds(offsets, 10)
    assert bounds[0] == 0 and bounds[-1] == 5 and (np.diff(bounds) > 0).all()


@pytest.fixture(scope="module")
def wiki_docs():
    from warmstart.word2vec.words import corpus_documents

    return corpus_documents(["wiki-leads"], "train")[:300]


@pytest.mark.parametrize("model", ["skipgram", "cbow"])
def test_tiny_run_learns_and_repeats(wiki_docs, model):
    cfg = Word2VecConfig(model=model, dim=24, epochs=3, min_count=3, threads=1)
    wv, stats = train(wiki_docs, cfg, progress=False)
    losses = stats["epoch_losses"]
    assert losses[-1] < losses[0] < 4.2  # 4.16 = 6 log 2, the loss of the zero output vectors at the start
    assert stats["vocab_size"] == len(wv) and wv.words[0] == "the" and wv.dim == 24
    assert stats["words_per_second"] > 0 and stats["corpus_words"] == sum(map(len, wiki_docs))
    again, _ = train(wiki_docs, cfg, progress=False)
    np.testing.assert_array_equal(wv.vectors, again.vectors)
    two = Word2VecConfig(model=model, dim=24, epochs=1, min_count=3, threads=2)
    assert np.isfinite(train(wiki_docs, two, progress=False)[0].vectors).all()
