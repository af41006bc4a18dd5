"""The pretraining data order: a seeded permutation over windows, computed per index in O(1) memory."""

import tracemalloc

import numpy as np
import pytest

from warmstart.data.order import FeistelPermutation, WindowOrder


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100, 1000, 4097])
def test_feistel_is_a_bijection_of_range_n(n):
    perm = FeistelPermutation(n, [5, 0])
    out = perm(np.arange(n))
    assert sorted(out.tolist()) == list(range(n))
    np.testing.assert_array_equal(out, FeistelPermutation(n, [5, 0])(np.arange(n)))  # seeded
    if n >= 64:
        assert not np.array_equal(out, FeistelPermutation(n, [6, 0])(np.arange(n)))
    if n >= 1000:  # a random permutation's correlation with the identity has std 1/sqrt(n)
        assert abs(np.corrcoef(np.arange(n), out)[0, 1]) < 0.15, "looks shuffled, not near the identity"
    with pytest.raises(IndexError):
        perm([n])


def test_every_window_once_per_epoch_and_epochs_differ():
    order = WindowOrder(1000, 32, seed=3)
    per = order.batches_per_epoch
    assert per == 31  # the last 1000 % 32 positions of each epoch's permutation are dropped
    e0 = np.concatenate([order.indices(k) for k in range(per)])
    e1 = np.concatenate([order.indices(per + k) for k in range(per)])
    assert len(set(e0.tolist())) == len(e0) == 992 and e0.max() < 1000
    assert len(set(e1.tolist())) == len(e1) == 992
    assert not np.array_equal(e0, e1)
    assert order.position(per + 4) == (1, 4)


def test_resume_anywhere_equals_sequential_order():
    a, b = WindowOrder(517, 8, seed=1), WindowOrder(517, 8, seed=1)
    seq = [a.indices(i).tolist() for i in range(300)]
    picks = (299, 0, 64, 65, 130, 7)
    assert [b.indices(i).tolist() for i in picks] == [seq[i] for i in picks]
    assert WindowOrder(3, 8, seed=0).indices(0).tolist() != []  # fewer windows than a batch: one batch of all
    assert sorted(WindowOrder(3, 8, seed=0).indices(5).tolist()) == [0, 1, 2]


def test_memory_does_not_depend_on_the_number_of_windows():
    """Ten billion windows (~5 TB of text): a batch deep in epoch 3 costs kilobytes, not an array of all."""
    tracemalloc.start()
    order = WindowOrder(10**10, 32, seed=0)
    late = order.indices(3 * order.batches_per_epoch + 123_456_789)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 100_000
    assert len(set(late.tolist())) == 32 and late.min() >= 0 and late.max() < 10**10
