"""train.fp16 on the CPU: float16 autocast with torch.amp.GradScaler (train/precision.py). A step whose
gradients overflow is skipped by the scaler, counted and logged, and is no bad step of the NaN guard (every
run here allows none: train.max_bad_steps=0); the gradients are unscaled before clipping; the scaler's
state resumes exactly; evaluation runs under the same autocast."""

import json

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers.runs import assert_resumes_exactly, final_weights, run_args, same_tensors
from warmstart.commands.pretrain import pretrain
from warmstart.errors import WarmstartError
from warmstart.train.loop import TrainConfig, evaluate

pytestmark = pytest.mark.integration

FP16 = ["train.fp16=true", "train.max_bad_steps=0"]


def fp16_args(shards, out):
    args = run_args(shards, out)
    args["overrides"] = [*args["overrides"], *FP16]
    return args


def rows(run, split=None) -> list[dict]:
    out = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [r for r in out if split is None or r["split"] == split]


@pytest.fixture(scope="module")
def fp16_run(small_shards, tmp_path_factory):
    out = tmp_path_factory.mktemp("fp16") / "run"
    return out, pretrain(**fp16_args(small_shards, out))


def test_overflowed_steps_are_skipped_counted_and_logged(fp16_run):
    run, result = fp16_run
    train = rows(run, "train")
    assert not rows(run, "bad_step") and result["bad_steps"] == 0
    # the scaler starts at 2^16: the first steps overflow in float16 and halve it until they fit
    assert train[0]["loss_scale"] == 2.0**15 and train[0]["scaler_skipped"] == 1
    skipped = train[-1]["scaler_skipped"]
    assert 1 <= skipped < len(train) and result["scaler_skipped"] == skipped
    assert all(r["loss_scale"] == 2.0**16 / 2 ** r["scaler_skipped"] for r in train)  # no growth in 16 steps
    # a skipped step logs no gradient norm (it is inf); a taken one logs the unscaled norm (~1, not ~4096)
    counts = [0] + [r["scaler_skipped"] for r in train]
    for r, before in zip(train, counts):
        assert ("grad_norm" in r) == (r["scaler_skipped"] == before), train
    assert all(0.2 < r["grad_norm"] < 5 for r in train if "grad_norm" in r)
    val = rows(run, "validation")
    assert val[-1]["loss"] < val[0]["loss"] - 0.05  # it learns
    state = json.loads((run / "checkpoints" / "step-00000016" / "trainer" / "state.json").read_text())
    assert state["scaler"]["scale"] == train[-1]["loss_scale"] and state["scaler_skipped"] == skipped


def test_fp16_resumes_exactly_with_the_scalers_state(small_shards, fp16_run, tmp_path):
    full, _ = fp16_run
    cut = tmp_path / "cut"
    # killed after step 6: resumed from step 4's checkpoint, inside the scaler's first skipped steps or
    # right after them, whose scale must come back from the checkpoint
    assert_resumes_exactly(lambda out: fp16_args(small_shards, out), full, cut, 6, 16)
    keys = ("step", "split", "loss", "loss_scale", "scaler_skipped", "grad_norm")
    assert [{k: r.get(k) for k in keys} for r in rows(cut)] == [
        {k: r.get(k) for k in keys} for r in rows(full)
    ]


def test_a_huge_loss_scale_is_skipped_not_a_bad_step(small_shards, tmp_path):
    """A checkpoint whose scale is 2^40: every later step overflows and is skipped (the weights stay those
    of the checkpoint), each halving the scale, and the run finishes."""
    from tests.helpers.runs import Interrupt, stop_at

    run = tmp_path / "run"
    with pytest.raises(Interrupt):
        pretrain(**fp16_args(small_shards, run), hooks=[stop_at(8)])
    state_file = run / "checkpoints" / "step-00000008" / "trainer" / "state.json"
    state = json.loads(state_file.read_text())
    before = state["scaler_skipped"]
    state["scaler"]["scale"] = 2.0**40
    state_file.write_text(json.dumps(state))
    weights = load_file(str(run / "checkpoints" / "step-00000008" / "model.safetensors"))

    result = pretrain(None, None, {}, [], resume=str(run))
    assert result["step"] == 16 and result["bad_steps"] == 0 and not rows(run, "bad_step")
    after = [r for r in rows(run, "train") if r["step"] > 8]
    assert [r["scaler_skipped"] - before for r in after] == list(range(1, 9))
    assert [r["loss_scale"] for r in after] == [2.0 ** (40 - i) for i in range(1, 9)]
    assert same_tensors(final_weights(run), weights)


def test_fp16_and_bf16_together_is_one_clear_error():
    with pytest.raises(WarmstartError, match="train.fp16 and train.bf16 are both on") as e:
        TrainConfig(fp16=True, bf16=True)
    assert "keep one" in e.value.fix


class DtypeProbe(torch.nn.Module):
    """A unit reporting the dtype its linear layer computed in (1 for float16) and a loss."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, batch):
        y = self.linear(batch["x"])
        return y.float().pow(2).mean(), {"half": (float(y.dtype == torch.float16), 1), "loss": (1.0, 1)}


def test_evaluation_runs_under_the_runs_autocast():
    batches = [{"x": torch.randn(2, 4)}]
    cpu = torch.device("cpu")
    assert evaluate(DtypeProbe(), batches, cpu, torch.float16)["half"] == 1.0
    assert evaluate(DtypeProbe(), batches, cpu, None)["half"] == 0.0
    assert evaluate(DtypeProbe(), batches, cpu, True)["half"] == 0.0  # True: bfloat16, as bf16 callers meant


def test_a_finetune_under_fp16_with_checkpointing(tiny_pretrained, rt_small, tmp_path):
    """Both knobs on a classification finetune: the loss scale is logged, the test split is scored (and
    broken down) under the same autocast, and the run picks its best model as usual."""
    from warmstart.commands.finetune import finetune

    out = tmp_path / "run"
    flags = {"init": str(tiny_pretrained), "data": {"dataset": str(rt_small)}, "epochs": 1, "out": str(out)}
    overrides = ["train.progress=false", "task.max_length=48", "train.batch_size=16", "evals_per_epoch=2"]
    finetune(None, flags, [*overrides, *FP16, "train.gradient_checkpointing=true", "breakdown=true"])
    train = rows(out, "train")
    assert train and all("loss_scale" in r and "scaler_skipped" in r for r in train)
    tm = json.loads((out / "test_metrics.json").read_text())
    assert tm["metric"] == "accuracy" and 0 <= tm["test"]["accuracy"] <= 1
    assert tm["breakdown"]["per_class"].keys() == {"fresh", "rotten"}
