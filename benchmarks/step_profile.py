"""Where a training step's time goes: a torch profile of one throughput.py row, per side, by kind of work.

For a row of benchmarks/throughput.py and a precision, each side (warmstart, transformers) runs ``--warmup``
steps, then ``--steps`` profiled ones. The self CPU time of every aten op is summed into kinds: matmuls
(mm, addmm, bmm, baddbmm, oneDNN linear), softmax, norms, activations, copies and casts, other element-wise
work, the optimizer (foreach ops) and the rest; "untraced" is the wall time no aten op accounts for
(Python, numba kernels such as warmstart's dropout, the autograd engine). With the row's model FLOPs, it
says what the matmuls themselves achieved (FLOPs / matmul time, against the measured peak) and so what a
step would reach if all the non-matmul work vanished: why a row sits where it does against a "% of peak"
target. Prints a Markdown table and one JSON line per side.

    python benchmarks/step_profile.py --row mlm --precision fp32
    python benchmarks/step_profile.py --row clm --precision bf16 --sides warmstart
"""

from __future__ import annotations

import argparse
import json
import re
import time

import torch
from throughput import ROWS, peak_flops

from warmstart.train.malloc import keep_freed_memory

KINDS = [  # (kind, pattern on the aten op's name); the first match wins
    ("matmul", r"^aten::(mm|addmm|bmm|baddbmm|_addmm_activation|mkldnn_linear|_mkldnn|matmul)"),
    ("softmax", r"softmax"),
    ("norm", r"norm"),
    ("activation", r"gelu|relu|tanh|silu|sigmoid"),
    ("copy / cast", r"^aten::(copy_|_to_copy|to|clone|contiguous|cat|index|gather|scatter|where)"),
    ("optimizer", r"_foreach|_fused_adam"),
    ("element-wise", r"^aten::(add|mul|sub|div|exp|log|neg|pow|sqrt|rsqrt|sum|mean|amax|max|fill_|zero_)"),
]


def kind_of(name: str) -> str:
    return next((k for k, pattern in KINDS if re.search(pattern, name)), "other aten")


def profile_side(row, make, steps: int, warmup: int, bf16: bool) -> dict:
    """Seconds per step by kind (see the module) over ``steps`` profiled steps."""
    step = make()
    for i in range(warmup):
        step(row.batches[i % len(row.batches)], bf16)
    acts = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=acts) as prof:
        start = time.perf_counter()
        for i in range(steps):
            step(row.batches[i % len(row.batches)], bf16)
        wall = time.perf_counter() - start
    kinds: dict[str, float] = {}
    for event in prof.key_averages():
        if event.key.startswith("aten::"):
            k = kind_of(event.key)
            kinds[k] = kinds.get(k, 0.0) + event.self_cpu_time_total / 1e6 / steps
    kinds["untraced"] = max(0.0, wall / steps - sum(kinds.values()))
    return {"step_s": wall / steps, "kinds": kinds}


def describe(side: str, prof: dict, flops: float | None, peak: float) -> dict:
    step, mm = prof["step_s"], prof["kinds"].get("matmul", 0.0)
    out = {"side": side, "step_s": round(step, 4)}
    out["shares"] = {k: round(v / step, 4) for k, v in sorted(prof["kinds"].items(), key=lambda kv: -kv[1])}
    if flops:
        out["of_peak"] = round(flops / step / peak, 4)
        out["matmuls_of_peak"] = round(flops / mm / peak, 4) if mm else None  # the matmuls alone
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--row", choices=[r for r in ROWS if r not in ("finetune", "inference", "generate")])
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    p.add_argument("--sides", nargs="+", default=["warmstart", "transformers"])
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    device, bf16 = torch.device("cpu"), a.precision == "bf16"
    peak = peak_flops(torch.bfloat16 if bf16 else torch.float32, device)
    row = ROWS[a.row][0](device)
    results = []
    for side in a.sides:
        if side == "warmstart":
            keep_freed_memory()  # as its training loop does (the transformers side, when both run, too)
        prof = profile_side(row, row.sides[side], a.steps, a.warmup, bf16)
        results.append(describe(side, prof, row.flops_per_step.get(side), peak))
    kinds = list(dict.fromkeys(k for r in results for k in r["shares"]))
    threads = torch.get_num_threads()
    print(f"{row.name}, {a.precision}, {threads} threads; matmul peak {peak / 1e9:,.0f} GFLOP/s")
    print("| side | step s | of peak | matmuls alone, of peak | " + " | ".join(kinds) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(kinds))
    for r in results:
        cells = [f"{r['shares'].get(k, 0):.1%}" for k in kinds]
        of_peak = f"{r['of_peak']:.1%}" if "of_peak" in r else "-"
        alone = f"{r['matmuls_of_peak']:.1%}" if r.get("matmuls_of_peak") else "-"
        print(f"| {r['side']} | {r['step_s']:.3f} | {of_peak} | {alone} | " + " | ".join(cells) + " |")
    for r in results:
        print(json.dumps({"row": a.row, "precision": a.precision, "peak_gflops": round(peak / 1e9), **r}))


if __name__ == "__main__":
    main()
