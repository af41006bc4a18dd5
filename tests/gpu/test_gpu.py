"""Short real runs on a CUDA device through the paths users take: pretrain (bf16), exact resume, finetune.

Skipped without CUDA (CI has none). On a GPU machine: ``pytest -m gpu tests/gpu``.
"""

import json
import os
import shutil

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers.runs import Interrupt
from tests.helpers.shapes import TINY_MODEL
from warmstart.checkpoints.load import load_encoder
from warmstart.cli.main import main
from warmstart.commands.pretrain import pretrain
from warmstart.data.packing import FixedWindowBatches, PackedWindows
from warmstart.data.shards import TokenShards
from warmstart.objectives.mlm import MaskedLM, MLMCollator, MLMConfig
from warmstart.train.loop import evaluate

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

# cuBLAS reads this when its first handle is made; it only matters for the deterministic resume case
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

SEQ, BATCH, SEED = 64, 16, 5


def rows(run_dir, split):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["split"] == split]


def mlm_unit_from(run_dir, device):
    """The pretrained unit (encoder + MLM head) of RUN/final, loaded the way users load it."""
    encoder, tokenizer, _ = load_encoder(run_dir)
    unit = MaskedLM(encoder, MLMConfig())
    unit.load_state_dict(load_file(str(run_dir / "final" / "model.safetensors")))
    return unit.to(device).eval(), tokenizer


def validation_batches(shards, tokenizer):
    """The run's own validation batches (same windows, same fixed masks)."""
    collate = MLMCollator(MLMConfig(), tokenizer.mask_id, tokenizer.vocab_size, tokenizer.special_ids)
    windows = PackedWindows(
        TokenShards.open(shards, "validation"), SEQ, [tokenizer.cls_id], [tokenizer.sep_id]
    )
    return list(FixedWindowBatches(windows, BATCH, 2, SEED, collate))


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().cpu(), b.double().cpu()
    return float((a - b).norm() / b.norm())


def test_pretrain_cli_on_cuda_bf16_learns_saves_and_reloads_on_cpu(small_shards, tmp_path, capsys):
    run = tmp_path / "pt"
    argv = ["pretrain", "--shards", str(small_shards), "--steps", "40", "--out", str(run)]
    argv += ["--seq-len", str(SEQ), "--batch-size", str(BATCH), "--lr", "2e-3", "--seed", str(SEED)]
    argv += [o for o in TINY_MODEL if not o.startswith("data.seq_len")]
    argv += ["train.device=cuda", "train.bf16=true", "train.log_every=1", "train.eval_every=20"]
    argv += ["train.save_every=20", "train.eval_batches=2", "train.progress=false", "train.warmup_steps=4"]
    assert main(argv) == 0
    assert "done: step 40" in capsys.readouterr().out

    train = rows(run, "train")
    assert [r["step"] for r in train] == list(range(1, 41))
    first = sum(r["loss"] for r in train[:5]) / 5
    last = sum(r["loss"] for r in train[-5:]) / 5
    assert last < first - 0.3, (first, last)  # ~ln(1000) = 6.9 at the start
    val = rows(run, "validation")
    assert [r["step"] for r in val] == [0, 20, 40] and val[-1]["loss"] < val[0]["loss"] - 0.3
    for d in ("checkpoints/step-00000020", "checkpoints/step-00000040", "final", "best"):
        assert (run / d / "model.safetensors").is_file(), d
    state = json.loads((run / "checkpoints/step-00000040/trainer/state.json").read_text())
    assert state["step"] == 40
    rng = load_file(str(run / "checkpoints/step-00000040/trainer/rng.safetensors"))
    assert "cuda.0" in rng  # dropout's CUDA RNG is part of the checkpoint

    # the saved weights are plain CPU tensors and reload on CPU
    cpu, tokenizer = mlm_unit_from(run, "cpu")
    gpu, _ = mlm_unit_from(run, "cuda")
    assert all(p.device.type == "cpu" for p in cpu.parameters())
    batches = validation_batches(small_shards, tokenizer)
    with torch.no_grad():
        for batch in batches:
            ids = batch["input_ids"]
            h_cpu = cpu.encoder(ids)
            h_gpu = gpu.encoder(ids.cuda())  # fp32 on both (TF32 is off by default for matmuls)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                h_bf16 = gpu.encoder(ids.cuda()).float()
            assert rel_err(h_gpu, h_cpu) < 1e-4
            assert rel_err(h_bf16, h_cpu) < 3e-2  # bf16 keeps 8 mantissa bits: ~4e-3 per rounding
    # the run's last validation loss (CUDA, bf16 autocast) against the reloaded model on CPU in fp32
    on_cpu = evaluate(cpu, batches, torch.device("cpu"))
    on_gpu = evaluate(gpu, batches, torch.device("cuda"))
    assert on_gpu["loss"] == pytest.approx(on_cpu["loss"], rel=1e-4)
    assert val[-1]["loss"] == pytest.approx(on_cpu["loss"], rel=2e-2)


def resume_args(shards, out):
    flags = {"out": str(out), "data": {"shards": str(shards)}, "train": {"steps": 16}}
    overrides = TINY_MODEL + [
        "data.seq_len=32",
        "train.batch_size=16",
        "train.grad_accum=2",
        "train.save_every=8",
        "train.eval_every=4",
        "train.log_every=1",
        "train.eval_batches=2",
        "train.progress=false",
        "train.lr=1e-3",
        "train.seed=3",
        "train.device=cuda",
        "train.bf16=true",
    ]
    return dict(preset=None, config_file=None, flags=flags, overrides=overrides)


def losses(run_dir):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return {(r["step"], r["split"]): r["loss"] for r in map(json.loads, lines)}


@pytest.mark.parametrize("deterministic", [False, True], ids=["default", "deterministic"])
def test_resume_on_cuda_is_exact(small_shards, tmp_path, deterministic):
    """16 steps in one go == 8 steps, a crash at 10, and a resume from the step-8 checkpoint to 16.

    Bit for bit: same kernels on the same inputs, the weights, AdamW moments and the CUDA RNG (dropout)
    restored exactly. PyTorch flags SDPA's cuDNN attention backward as non-deterministic, yet at this size
    (seq 32) both modes gave bit-identical runs on an H100 (torch 2.11, cu130); should a longer sequence
    or another GPU break the default case, the deterministic case is the one that must hold."""
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(deterministic, warn_only=True)
    try:
        full = pretrain(**resume_args(small_shards, tmp_path / "full"))

        def die(step, loss):
            if step == 10:
                raise Interrupt

        with pytest.raises(Interrupt):
            pretrain(**resume_args(small_shards, tmp_path / "cut"), hooks=[die])
        cut = tmp_path / "cut"
        assert (cut / "checkpoints" / "step-00000008").is_dir() and not (cut / "final").exists()
        resumed = pretrain(None, None, {}, [], resume=str(cut))
    finally:
        torch.use_deterministic_algorithms(before)
    assert resumed["step"] == full["step"] == 16
    a, b = losses(tmp_path / "full"), losses(cut)
    assert a.keys() == b.keys()
    diffs = {k: abs(a[k] - b[k]) for k in a if a[k] != b[k]}
    assert not diffs, f"logged losses differ after resume: {diffs}"
    wa = load_file(str(tmp_path / "full" / "final" / "model.safetensors"))
    wb = load_file(str(cut / "final" / "model.safetensors"))
    assert wa.keys() == wb.keys()
    worst = {k: float((wa[k] - wb[k]).abs().max()) for k in wa if not wa[k].equal(wb[k])}
    assert not worst, f"final weights differ after resume: {worst}"
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_finetune_rotten_tomatoes_on_cuda(tiny_pretrained, tmp_path, capsys):
    run = tmp_path / "rt"
    argv = ["finetune", "--init", str(tiny_pretrained), "--dataset", "rotten-tomatoes", "--out", str(run)]
    argv += ["--lr", "1e-3", "--batch-size", "32", "--max-length", "64", "--seeds", "4"]
    argv += ["train.device=cuda", "train.bf16=true", "train.steps=30", "train.eval_every=15"]
    argv += ["train.progress=false", "data.train_limit=2000"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    metrics = json.loads((run / "test_metrics.json").read_text())
    assert metrics["steps"] == 30 and metrics["best_step"] in (15, 30)
    assert 0.0 <= metrics["test"]["accuracy"] <= 1.0
    assert f"accuracy {metrics['test']['accuracy']:.4f}" in out
    train = rows(run, "train")
    assert train and all(r["loss"] == r["loss"] for r in train)  # finite, no NaN
    # scoring the saved model again (on the CUDA device the machine has) gives the run's own test numbers
    assert main(["evaluate", str(run), "--data", "rotten-tomatoes", "--out", str(tmp_path / "m.json")]) == 0
    again = json.loads((tmp_path / "m.json").read_text())["metrics"]
    assert again["accuracy"] == pytest.approx(metrics["test"]["accuracy"], abs=1e-6)
    assert again["loss"] == pytest.approx(metrics["test"]["loss"], rel=1e-4)
    src = tmp_path / "in.txt"
    src.write_text("a gripping, beautifully acted film\ndull and far too long\n")
    assert main(["predict", str(run), "--input", str(src), "--out", str(tmp_path / "p.jsonl")]) == 0
    preds = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(preds) == 2 and all(p["label"] in ("fresh", "rotten") for p in preds)
