"""The fit loop reports the share of each logged window's wall time its steps waited for their batches
(``data_share`` in metrics.jsonl): near 0 when batches are ready, most of the window when making them is
slow (issue 26: the data path, measured)."""

import time

import torch

from warmstart.train.checkpoint import Checkpointer
from warmstart.train.fit import fit
from warmstart.train.logging import read_metrics
from warmstart.train.loop import TrainConfig


class Regression(torch.nn.Module):
    """A few milliseconds of work a step: more than making a ready batch takes."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)], torch.nn.Linear(256, 1))

    def forward(self, batch):
        loss = ((self.w(batch["input_ids"]) - batch["y"]) ** 2).mean()
        return loss, {"loss": (float(loss.detach()), 1)}


class Batches:
    """Micro-batch i after ``delay`` seconds of making it."""

    def __init__(self, delay: float):
        self.delay = delay

    def batch(self, i):
        time.sleep(self.delay)
        x = torch.randn(256, 256, generator=torch.Generator().manual_seed(i))
        return {"input_ids": x, "y": x.sum(1, keepdim=True)}

    def position(self, i):
        return 0, i


def shares(run_dir, delay):
    cfg = TrainConfig(steps=6, lr=1e-4, save_every=0, eval_every=0, log_every=2, progress=False,
                      device="cpu", eval_at_start=False)  # fmt: skip
    fit(Regression(), Batches(delay), [Batches(0).batch(99)], cfg, Checkpointer(run_dir, {}))
    return [r["data_share"] for r in read_metrics(run_dir, "train")]


def test_the_share_of_time_spent_waiting_for_batches_is_logged(tmp_path):
    slow = shares(tmp_path / "slow", 0.2)  # 200 ms a batch against a short step
    ready = shares(tmp_path / "ready", 0.0)
    assert len(slow) == len(ready) == 3 and all(0.0 <= s <= 1.0 for s in slow + ready)
    slow, ready = slow[1:], ready[1:]  # the first window holds the first step's warm-up too
    assert all(s > 0.5 for s in slow) and all(s < 0.5 for s in ready) and max(ready) < min(slow)
