"""train.fp16: a gradient that overflows even at a loss scale below 1 is not float16's range but a broken
step, so the NaN guard counts it as a bad step and stops the run at train.max_bad_steps (the scaler alone
would skip such steps forever, halving its scale each time, with the loss looking finite): the fourth bad
step past three allowed stops it."""

import pytest
import torch

from warmstart.errors import WarmstartError
from warmstart.train.checkpoint import Checkpointer
from warmstart.train.fit import fit
from warmstart.train.logging import read_metrics
from warmstart.train.loop import TrainConfig


class BrokenGradient(torch.nn.Module):
    """Linear regression plus sqrt(w - w) = 0: the loss stays finite, the gradient of sqrt at 0 is inf."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.w = torch.nn.Linear(4, 1)

    def forward(self, batch):
        fit_loss = ((self.w(batch["input_ids"]) - batch["y"]) ** 2).mean().float()
        broken = torch.sqrt(self.w.weight - self.w.weight.detach()).sum()
        loss = fit_loss + broken
        return loss, {"loss": (float(loss.detach()), 1)}


class Data:
    def batch(self, i):
        x = torch.randn(8, 4, generator=torch.Generator().manual_seed(i))
        return {"input_ids": x, "y": x.sum(1, keepdim=True)}

    def position(self, i):
        return i // 10, i % 10


def test_a_gradient_broken_below_scale_one_is_a_bad_step_and_stops_the_run(tmp_path):
    cfg = TrainConfig(steps=60, lr=0.01, fp16=True, max_bad_steps=3, save_every=0, eval_every=0,
                      log_every=1, progress=False, device="cpu", eval_at_start=False)  # fmt: skip
    with pytest.raises(WarmstartError, match="more than train.max_bad_steps=3"):
        fit(BrokenGradient(), Data(), [Data().batch(100)], cfg, Checkpointer(tmp_path, {}))
    train = read_metrics(tmp_path, "train")
    # 2^16 halved 17 times is below 1: each of those steps was the scaler's skip, none a bad step
    assert [r["scaler_skipped"] for r in train] == list(range(1, 18))
    assert train[-1]["loss_scale"] == 0.5 and all(r["loss"] == r["loss"] for r in train)  # finite losses
    bad = read_metrics(tmp_path, "bad_step")
    assert [r["step"] for r in bad] == [18, 19, 20, 21] and "inf" in bad[0]["problem"]
