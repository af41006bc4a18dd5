"""word2vec training: vocabulary, subsampling, noise, windows, the SGNS loss and gradient, a tiny real run."""

import numpy as np
import pytest
import torch

from warmstart.errors import WarmstartError
from warmstart.word2vec.batches import NoiseSampler, chunk_bounds, make_examples, windows
from warmstart.word2vec.train import Batch, Word2VecConfig, sgd_steps, sgns_loss, train
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
    n = 200_000
    draws = NoiseSampler(probs).sample(np.random.default_rng(0), (n // 5, 5))
    observed = np.bincount(draws.ravel(), minlength=len(counts))
    chi2 = (((observed - n * probs) ** 2) / (n * probs)).sum()
    assert chi2 < 30  # 9 degrees of freedom: the 99.9% quantile is 27.9


def test_windows_stay_in_documents_and_reach():
    rng = np.random.default_rng(0)
    doc = np.repeat(np.arange(40), rng.integers(1, 12, size=40))
    reach = rng.integers(1, 6, size=len(doc))
    ok, ctx = windows(doc, reach, 5)
    for i in range(len(doc)):
        got = sorted(ctx[i][ok[i]].tolist())
        want = [j for j in range(len(doc)) if j != i and abs(j - i) <= reach[i] and doc[j] == doc[i]]
        assert got == want


def test_examples_never_cross_documents():
    # every word of document d has id d, so an example crossing a boundary would pair two different ids
    lengths = np.random.default_rng(1).integers(1, 30, size=50)
    ids = np.repeat(np.arange(50), lengths)
    keep = np.full(50, 0.8)
    noise = NoiseSampler(np.ones(50) / 50)
    for cbow in (False, True):
        ex = make_examples(ids, ids.astype(np.int32), 0, keep, noise, 5, 3, cbow, np.random.default_rng(2))
        assert len(ex) > 100
        if cbow:
            bags = np.repeat(ex.targets[:, 0], np.diff(ex.starts))
            assert (ex.inputs == bags).all() and (np.diff(ex.starts) <= 10).all()
        else:
            assert (ex.inputs == ex.targets[:, 0]).all()
        assert (ids[ex.position] == ex.targets[:, 0]).all()


def test_window_sizes_fall_in_one_to_window():
    ids = np.zeros(5000, dtype=np.int64)  # one long document
    ex = make_examples(
        ids,
        ids.astype(np.int32),
        0,
        np.ones(1),
        NoiseSampler(np.ones(1)),
        4,
        1,
        True,
        np.random.default_rng(0),
    )
    sizes = np.diff(ex.starts)[10:-10]  # contexts per centre word away from the ends: 2 * window size
    assert set(sizes.tolist()) == {2, 4, 6, 8}


def test_negatives_equal_to_the_positive_are_skipped():
    noise = NoiseSampler(np.array([0.5, 0.5]))  # two words: collisions are frequent
    ids = np.random.default_rng(0).integers(0, 2, size=400)
    ex = make_examples(
        ids, np.zeros(400, np.int32), 0, np.ones(2), noise, 2, 5, False, np.random.default_rng(0)
    )
    clash = ex.targets[:, 1:] == ex.targets[:, :1]
    assert clash.any() and (ex.valid[:, 0] == 1).all()
    assert (ex.valid[:, 1:] == ~clash).all()
    # a skipped negative adds nothing: the loss is that of the example without it
    g = torch.Generator().manual_seed(0)
    v, u = torch.randn(1, 4, generator=g), torch.randn(1, 3, 4, generator=g)
    masked = sgns_loss(v, u[:, 0], u[:, 1:], torch.tensor([[1.0, 0.0]]))
    assert torch.allclose(masked, sgns_loss(v, u[:, 0], u[:, 1:2]))


def test_loss_matches_a_direct_computation():
    rng = np.random.default_rng(0)
    v, u_o, u_neg = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 2, 4))

    def log_sigmoid(x):
        return np.log(1 / (1 + np.exp(-x)))

    want = [
        -(log_sigmoid(u_o[b] @ v[b]) + sum(log_sigmoid(-u_neg[b, k] @ v[b]) for k in range(2)))
        for b in range(3)
    ]
    got = sgns_loss(*(torch.from_numpy(x) for x in (v, u_o, u_neg)))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)


def test_hand_written_gradient_matches_autograd():
    g = torch.Generator().manual_seed(0)
    h, u = torch.randn(6, 8, generator=g), torch.randn(6, 4, 8, generator=g)
    valid = torch.ones(6, 4)
    valid[1, 2] = valid[4, 1] = 0.0
    lr = 0.3
    batch = Batch(h.clone(), u.clone())
    loss = sgd_steps(batch, valid, lr, with_loss=True)
    h_, u_ = h.clone().requires_grad_(), u.clone().requires_grad_()
    ref = sgns_loss(h_, u_[:, 0], u_[:, 1:], valid[:, 1:]).sum()
    ref.backward()
    ref = ref.detach()
    assert loss == pytest.approx(ref.item(), rel=1e-5)
    torch.testing.assert_close(batch.dh_flat, -lr * h_.grad)
    torch.testing.assert_close(batch.du, -lr * u_.grad)


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
    cfg = Word2VecConfig(model=model, dim=24, epochs=3, min_count=3, threads=1, batch=128)
    wv, stats = train(wiki_docs, cfg, progress=False)
    losses = stats["epoch_losses"]
    assert losses[-1] < losses[0] < 4.2  # 4.16 = 6 log 2, the loss of the zero output vectors at the start
    assert stats["vocab_size"] == len(wv) and wv.words[0] == "the" and wv.dim == 24
    assert stats["words_per_second"] > 0 and stats["corpus_words"] == sum(map(len, wiki_docs))
    again, _ = train(wiki_docs, cfg, progress=False)
    np.testing.assert_array_equal(wv.vectors, again.vectors)
    two = Word2VecConfig(model=model, dim=24, epochs=1, min_count=3, threads=2, batch=128)
    assert np.isfinite(train(wiki_docs, two, progress=False)[0].vectors).all()
