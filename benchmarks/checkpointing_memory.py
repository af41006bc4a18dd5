"""Peak memory of one training step with and without gradient checkpointing (train.gradient_checkpointing).

For each model (a preset: bert-base and gpt2 by default) and each side (plain, checkpointed), a fresh child
process builds the model with random weights and one batch of random token ids (``--batch`` x ``--seq``),
runs one step of 1 x 8 tokens (kernels compiled, libraries set up), then three training steps: forward,
the language-model loss through the tied embedding (warmstart's fused linear cross-entropy: 15% of the
positions for a BERT, every position for a GPT-2) and backward; no optimizer, whose state is the same on
both sides. What is measured is the memory the three steps add above what the process held before them
(the weights and the batch):

- CUDA: ``torch.cuda.max_memory_allocated`` minus the memory allocated before the steps;
- CPU: the process's peak resident memory (``ru_maxrss``, the kernel's high-water mark) minus its resident
  memory before the steps. This counts what the allocator keeps too, so it is coarser than CUDA's count;
  each side runs in its own process so that neither inherits the other's high-water mark.

The faster of the last two steps' times is printed beside it (checkpointing runs each block's forward
twice). Prints a Markdown table and one JSON line per model.

    python benchmarks/checkpointing_memory.py                              # bert-base, gpt2 at seq 512
    python benchmarks/checkpointing_memory.py --models bert-mini gpt2-mini --seq 128 --batch 2
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import torch

from warmstart.config import from_dict, load_preset
from warmstart.registry import MODELS


def build(preset: str, vocab: int):
    spec = load_preset(preset)
    config_cls, model_cls = MODELS[spec.get("arch", "bert")]
    return model_cls(from_dict(config_cls, {**spec.get("model", {}), "vocab_size": vocab}))


def rss_bytes() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def one_side(preset: str, checkpointing: bool, batch: int, seq: int, vocab: int, device: str) -> dict:
    """Runs in the child: the memory two steps add, and the second step's seconds."""
    from warmstart.objectives.fused_ce import linear_cross_entropy

    torch.manual_seed(0)
    dev = torch.device(device)
    model = build(preset, vocab).to(dev).train()
    if checkpointing:
        model.gradient_checkpointing_enable()
    ids = torch.randint(5, vocab, (batch, seq), device=dev)
    labels = ids.clone()
    if not model.decoder_only:  # masked LM: a loss at 15% of the positions
        labels[torch.rand(batch, seq, device=dev) > 0.15] = -100
    cuda = dev.type == "cuda"
    warm = ids[:1, :8]  # one small step first: kernels compiled and libraries set up before the baseline
    loss, n = linear_cross_entropy(model(warm), model.word_embeddings.weight, labels[:1, :8].clamp(min=0))
    (loss / n).backward()
    model.zero_grad(set_to_none=True)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    else:
        before = rss_bytes()
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        loss, n = linear_cross_entropy(model(ids), model.word_embeddings.weight, labels)
        (loss / n).backward()
        model.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - start)
    peak = torch.cuda.max_memory_allocated() if cuda else peak_rss_bytes()
    params = sum(p.numel() for p in model.parameters())
    return {
        "peak_added_mb": round((peak - before) / 2**20, 1),
        "step_s": round(min(seconds[1:]), 3),
        "params": params,
    }


def run_child(preset: str, checkpointing: bool, a) -> dict:
    args = [preset, str(int(checkpointing)), str(a.batch), str(a.seq), str(a.vocab), a.device]
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        preset, on, batch, seq, vocab, device = sys.argv[2:]
        print(json.dumps(one_side(preset, on == "1", int(batch), int(seq), int(vocab), device)))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=["bert-base", "gpt2"], help="presets")
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = p.parse_args()
    measure = "max_memory_allocated" if a.device.startswith("cuda") else "peak RSS"
    print(f"device {a.device}, batch {a.batch} x seq {a.seq}, vocab {a.vocab}; memory: {measure} added")
    print("| model | parameters | plain MB | checkpointed MB | saved | plain s | checkpointed s |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for preset in a.models:
        plain, saved = run_child(preset, False, a), run_child(preset, True, a)
        share = 1 - saved["peak_added_mb"] / plain["peak_added_mb"] if plain["peak_added_mb"] else 0.0
        print(
            f"| {preset} | {plain['params'] / 1e6:.1f}M | {plain['peak_added_mb']:,.0f} | "
            f"{saved['peak_added_mb']:,.0f} | {share:.0%} | {plain['step_s']:.2f} | {saved['step_s']:.2f} |"
        )
        rows.append({"model": preset, "plain": plain, "checkpointed": saved, "saved_share": round(share, 3)})
    for row in rows:
        print(json.dumps({"device": a.device, "batch": a.batch, "seq": a.seq, "vocab": a.vocab, **row}))


if __name__ == "__main__":
    main()
