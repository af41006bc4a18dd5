"""Data order: a pure function of (seed, batch index), every example once per epoch, length grouping."""

import numpy as np

from warmstart.data.order import EpochOrder, step_generator


def epoch_indices(order, epoch):
    per = order.batches_per_epoch
    return [order.indices(epoch * per + k) for k in range(per)]


def test_each_epoch_is_a_permutation_and_epochs_differ():
    order = EpochOrder(103, 10, seed=1, drop_last=False)
    assert order.batches_per_epoch == 11
    e0, e1 = epoch_indices(order, 0), epoch_indices(order, 1)
    assert sorted(np.concatenate(e0).tolist()) == list(range(103))
    assert sorted(np.concatenate(e1).tolist()) == list(range(103))
    assert not np.array_equal(np.concatenate(e0), np.concatenate(e1))


def test_random_access_equals_sequential_access():
    a, b = EpochOrder(50, 4, seed=7), EpochOrder(50, 4, seed=7)
    seq = [a.indices(i).tolist() for i in range(40)]
    assert [b.indices(i).tolist() for i in (39, 3, 25, 12)] == [seq[39], seq[3], seq[25], seq[12]]


def test_length_grouping_reduces_padding_and_keeps_every_example():
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 120, size=2000)
    plain = EpochOrder(2000, 32, seed=0, drop_last=False)
    grouped = EpochOrder(2000, 32, seed=0, drop_last=False, lengths=lengths, group=20)
    batches = epoch_indices(grouped, 0)
    assert len(batches) == grouped.batches_per_epoch
    assert sorted(np.concatenate(batches).tolist()) == list(range(2000))

    def padded(bs):
        return sum(len(b) * lengths[b].max() for b in bs)

    assert padded(batches) < 0.75 * padded(epoch_indices(plain, 0))


def test_step_generator_is_deterministic_and_distinct():
    import torch

    x = torch.rand(5, generator=step_generator(3, 10))
    assert torch.equal(x, torch.rand(5, generator=step_generator(3, 10)))
    assert not torch.equal(x, torch.rand(5, generator=step_generator(3, 11)))
    assert not torch.equal(x, torch.rand(5, generator=step_generator(4, 10)))
