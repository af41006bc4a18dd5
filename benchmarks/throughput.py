"""warmstart against transformers, side by side: training, finetuning, inference, generation.

Every row runs the same shape, batch, sequence length, real token ids and objective semantics on both sides;
each side runs in a fresh process of its own, one after the other (``--in-process``: every row and both sides
in this one, the trials alternating between the sides), and the median of each side's trials is
reported with the ratio, and, for a row run in both precisions, warmstart's rate over transformers' faster
precision of that row ("vs its faster mode": what a user compares). The same run measures the machine's matmul
peak (fp32 and bf16) and prints, for warmstart, the model FLOPs per token (see throughput_rows.py for how they
are counted), the fraction of the peak achieved, and the ratio at peak: what warmstart's ratio would be if its
FLOPs ran at the matmul peak (peak / (transformers' rate x warmstart's FLOPs per unit)), the ceiling of any
target. With ``--memory`` (default on) each side of each row also runs once in a fresh process that reports
its peak resident memory (VmHWM). Separate processes keep a row from inheriting the allocator and
thread-pool state the rows before it left, and give each side the allocator settings its users get:
warmstart's training loop keeps freed memory (train/malloc.py), transformers runs with glibc's defaults.
Prints a Markdown table and one JSON line per row.

    python benchmarks/throughput.py                       # every CPU row (about 20 min on 2 cores)
    python benchmarks/throughput.py --rows mlm clm --steps 5
    python benchmarks/throughput.py --device cuda --rows mlm-base clm-gpt2 --precision bf16

Targets (issues 10 and 43): masked LM >= 3x (bert-base >= 2.5x), causal LM, span corruption and denoising
>= 2x, finetuning and inference >= 1.5x transformers.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time

import throughput_plm as plm
import throughput_rows as pre
import throughput_tasks as tasks
import torch

from warmstart.train.malloc import keep_freed_memory

# name -> (builder, default precisions on the CPU, target ratio)
ROWS = {
    "mlm": (lambda d: pre.mlm(None, 32, 128, d), ("fp32", "bf16"), 3.0),
    "mlm-base": (lambda d: pre.mlm("bert-base", 32, 128, d), ("bf16",), 2.5),
    "clm": (lambda d: pre.clm(None, 32, 128, d), ("fp32", "bf16"), 2.0),
    "clm-gpt2": (lambda d: pre.clm("gpt2", 8, 128, d), ("bf16",), 2.0),
    "t5-tiny": (lambda d: pre.span("t5-tiny", 32, 128, d), ("fp32", "bf16"), 2.0),
    "t5-small": (lambda d: pre.span("t5-small", 16, 128, d), ("bf16",), 2.0),
    "bart-tiny": (lambda d: pre.denoise("bart-tiny", 32, 128, d), ("fp32", "bf16"), 2.0),
    "xlnet": (lambda d: plm.plm(32, 128, d), ("fp32", "bf16"), None),
    "finetune": (lambda d: tasks.finetune(32, d), ("fp32", "bf16"), 1.5),
    "inference": (lambda d: tasks.inference(64, d), ("fp32",), 1.5),
    "generate": (lambda d: tasks.generation(8, 64, d), ("fp32",), None),
    # GPU shapes (issue 43's targets), left out of the default rows on a CPU
    "mlm-base-256": (lambda d: pre.mlm("bert-base", 256, 128, d), ("bf16",), None),
    "clm-gpt2-1024": (lambda d: pre.clm("gpt2", 16, 1024, d), ("bf16",), None),
}
GPU_ROWS = ("mlm-base-256", "clm-gpt2-1024")


def peak_flops(dtype: torch.dtype, device: torch.device, reps: int = 10) -> float:
    """Matmul FLOP/s of this device in ``dtype``: the median of ``reps`` timed n x n x n products (n = 2048
    on a CPU, 8192 on a GPU, where a smaller product does not fill the device)."""
    n = 8192 if device.type == "cuda" else 2048
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    a @ b
    times = []
    for _ in range(reps):
        sync()
        start = time.perf_counter()
        a @ b
        sync()
        times.append(time.perf_counter() - start)
    return 2 * n**3 / statistics.median(times)


def rate(row, side_step, steps: int, warmup: int, bf16: bool, sync) -> float:
    """Counted tokens (or examples) per second of ``steps`` timed steps after ``warmup`` untimed ones."""
    if hasattr(side_step, "timed"):  # a side that times itself (the Trainer)
        return side_step.timed(steps, warmup, bf16)
    for i in range(warmup):
        side_step(row.batches[i % len(row.batches)], bf16)
    sync()
    start = time.perf_counter()
    for i in range(steps):
        side_step(row.batches[i % len(row.batches)], bf16)
    sync()
    return steps * row.tokens_per_step / (time.perf_counter() - start)


def peak_rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def memory_probe(name: str, side: str, precision: str, device: str) -> None:
    """Child process: build one side of one row, run two steps, print its peak RSS (MB) as JSON."""
    if side == "warmstart":
        keep_freed_memory()  # as its training loop does
    row = ROWS[name][0](torch.device(device))
    step = row.sides[side]()
    rate(row, step, 1, 1, precision == "bf16", lambda: None)
    print(json.dumps({"peak_rss_mb": round(peak_rss_mb())}))


def measure_memory(name: str, precision: str, device: str) -> dict:
    out = {}
    for side in ("warmstart", "transformers"):
        cmd = [sys.executable, __file__, "--memory-probe", name, side, precision, "--device", device]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        out[side] = json.loads(lines[-1])["peak_rss_mb"] if lines else None
    return out


def side_rates(name: str, a, device: torch.device, sides) -> list[dict]:
    """Per precision: the row's description and each of ``sides``' rates over ``a.trials`` trials, the sides
    alternating. warmstart's side keeps freed memory as its training loop does (train/malloc.py)."""
    build, default_precisions, target = ROWS[name]
    cuda = device.type == "cuda"
    sync = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)
    if sides == ("warmstart",):
        keep_freed_memory()  # what `warmstart pretrain` and `finetune` do (train.reuse_memory)
    row = build(device)
    parts = []
    for precision in a.precision or default_precisions:
        bf16 = precision == "bf16"
        steps = {side: make() for side, make in row.sides.items() if side in sides}
        rates: dict[str, list[float]] = {side: [] for side in steps}
        for _ in range(a.trials):
            for side, step in steps.items():
                rates[side].append(rate(row, step, a.steps, a.warmup, bf16, sync))
        del steps
        per_unit = {s: f / row.tokens_per_step for s, f in row.flops_per_step.items()}
        meta = {"row": row.name, "shape": row.shape, "precision": precision, "counts": row.counts}
        flops = {
            "flops_per_unit": per_unit.get("warmstart"),
            "hf_flops_per_unit": per_unit.get("transformers"),
        }
        parts.append({**meta, "target": target, **flops, "rates": rates})
    return parts


def summary(part: dict, ws: float, hf: float, peaks: dict, spec: float | None = None) -> dict:
    flops, precision = part["flops_per_unit"], part["precision"]
    of_spec = {}
    if spec and flops:  # the fraction of the device's datasheet rate (--spec-tflops) each side's FLOPs reach
        hf_flops = part.get("hf_flops_per_unit") or flops
        of_spec = {
            "warmstart_of_spec": round(ws * flops / spec, 4),
            "transformers_of_spec": round(hf * hf_flops / spec, 4),
        }
    return {
        **{k: part[k] for k in ("row", "shape", "precision", "counts")},
        "warmstart_per_s": round(ws, 1),
        "transformers_per_s": round(hf, 1),
        "ratio": round(ws / hf, 2),
        "target": part["target"],
        "warmstart_gflop_per_unit": round(flops / 1e9, 4) if flops else None,
        "warmstart_peak_fraction": round(ws * flops / peaks[precision], 4) if flops else None,
        # the ratio warmstart would reach running its FLOPs at the matmul peak: no target above it is
        # reachable without doing less work
        "ceiling_ratio": round(peaks[precision] / (hf * flops), 2) if flops else None,
        **of_spec,
    }


def finish(name: str, a, part: dict, ws: float, hf: float, peaks: dict) -> dict:
    result = summary(part, ws, hf, peaks, a.spec_tflops * 1e12 if a.spec_tflops else None)
    if a.memory and a.device == "cpu":
        result["peak_rss_mb"] = measure_memory(name, part["precision"], a.device)
    print(json.dumps(result), flush=True)
    return result


def run_row(name: str, a, device: torch.device, peaks: dict) -> list[dict]:
    """Both sides in this process (``--in-process``)."""
    results = []
    for part in side_rates(name, a, device, ("warmstart", "transformers")):
        ws, hf = (statistics.median(part["rates"][s]) for s in ("warmstart", "transformers"))
        results.append(finish(name, a, part, ws, hf, peaks))
    return results


def against_faster_mode(results: list[dict]) -> None:
    """Adds ``vs_faster``: warmstart's rate over transformers' faster precision of the same row (what a user
    compares), where the run measured both of transformers' precisions."""
    best: dict[str, float] = {}
    for r in results:
        best[r["row"]] = max(best.get(r["row"], 0.0), r["transformers_per_s"])
    precisions = {(r["row"], r["precision"]) for r in results}
    for r in results:
        if {(r["row"], "fp32"), (r["row"], "bf16")} <= precisions:
            r["vs_faster"] = round(r["warmstart_per_s"] / best[r["row"]], 2)


def table(results: list[dict], peaks: dict, where: str) -> str:
    against_faster_mode(results)
    lines = [
        f"Side by side on {where}; fp32 matmul peak {peaks['fp32'] / 1e9:,.0f} GFLOP/s, bf16 "
        f"{peaks['bf16'] / 1e9:,.0f} GFLOP/s (measured in the same run); median of the trials.",
        "",
        "| row | shape | precision | counted | warmstart /s | transformers /s | ratio | vs its faster mode | "
        "target | warmstart GFLOP per unit | of peak | ratio at peak | peak RSS MB (ws / hf) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        target = f"{r['target']:g}x" if r["target"] else "-"
        flops = f"{r['warmstart_gflop_per_unit']:.3f}" if r["warmstart_gflop_per_unit"] else "-"
        frac = f"{r['warmstart_peak_fraction']:.1%}" if r["warmstart_peak_fraction"] else "-"
        ceiling = f"{r['ceiling_ratio']}x" if r.get("ceiling_ratio") else "-"
        faster = f"{r['vs_faster']}x" if "vs_faster" in r else "-"
        rss = r.get("peak_rss_mb")
        mem = f"{rss['warmstart']:,} / {rss['transformers']:,}" if rss and None not in rss.values() else "-"
        lines.append(
            f"| {r['row']} | {r['shape']} | {r['precision']} | {r['counts']} | {r['warmstart_per_s']:,.0f} | "
            f"{r['transformers_per_s']:,.0f} | {r['ratio']}x | {faster} | {target} | {flops} | {frac} | "
            f"{ceiling} | {mem} |"
        )
    return "\n".join(lines)


def row_in_own_process(name: str, a, peaks: dict) -> list[dict]:
    """Run one row with each side in a fresh Python process of its own (warmstart's first), and return its
    results. In one long process a row inherited the state the rows before it left (allocator, thread pools):
    transformers' small causal-LM rate moved by 20% with the rows run before it; and warmstart's training
    loop sets the process's malloc thresholds (train/malloc.py), which transformers, run as its users run
    it, does not get."""
    parts = {}
    for side in ("warmstart", "transformers"):
        cmd = [sys.executable, __file__, "--rows", name, "--device", a.device, "--steps", str(a.steps)]
        cmd += ["--warmup", str(a.warmup), "--trials", str(a.trials), "--side", side]
        cmd += ["--compile"] if a.compile else []
        cmd += ["--precision", *a.precision] if a.precision else []
        done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
        if done.returncode != 0:
            print(f"row {name} ({side}) failed (exit {done.returncode})", file=sys.stderr)
            return []
        for line in done.stdout.splitlines():
            if line.startswith('{"row"'):
                part = json.loads(line)
                parts.setdefault(part["precision"], part)["rates"].update(part["rates"])
    results = []
    for part in parts.values():
        ws, hf = (statistics.median(part["rates"][s]) for s in ("warmstart", "transformers"))
        results.append(finish(name, a, part, ws, hf, peaks))
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", nargs="+", choices=list(ROWS), help="default: every row but the GPU shapes")
    p.add_argument("--precision", nargs="+", choices=["fp32", "bf16"], help="default: each row's own")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--steps", type=int, default=4, help="timed steps per trial")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps before each trial")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument(
        "--compile", action="store_true", help="torch.compile both sides' modules (pretraining rows)"
    )
    p.add_argument("--spec-tflops", type=float, help="the device's datasheet bf16 rate (H100/H200: 989)")
    p.add_argument("--no-memory", dest="memory", action="store_false", help="skip the peak-RSS processes")
    p.add_argument(
        "--in-process",
        action="store_true",
        help="run all rows in this process (default: each its own)",
    )
    p.add_argument("--memory-probe", nargs=3, metavar=("ROW", "SIDE", "PRECISION"), help=argparse.SUPPRESS)
    p.add_argument("--side", choices=["warmstart", "transformers"], help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.memory_probe:
        memory_probe(*a.memory_probe, a.device)
        return
    device = torch.device(a.device)
    a.rows = a.rows or [name for name in ROWS if name not in GPU_ROWS]
    pre.COMPILE = a.compile
    torch.manual_seed(0)
    if a.side:  # one side of a row in its own process, started by the parent run below
        for name in a.rows:
            for part in side_rates(name, a, device, (a.side,)):
                print(json.dumps(part), flush=True)
        return
    peaks = {"fp32": peak_flops(torch.float32, device), "bf16": peak_flops(torch.bfloat16, device)}
    if device.type == "cuda":
        where = torch.cuda.get_device_name(device)
    else:
        where = f"{platform.machine()} CPU, {torch.get_num_threads()} threads, torch {torch.__version__}"
    print(
        json.dumps(
            {"peak_fp32_gflops": round(peaks["fp32"] / 1e9), "peak_bf16_gflops": round(peaks["bf16"] / 1e9)}
        )
    )
    if a.in_process:
        results = [r for name in a.rows for r in run_row(name, a, device, peaks)]
    else:
        results = [r for name in a.rows for r in row_in_own_process(name, a, peaks)]
    print()
    print(f"{time.strftime('%Y-%m-%d')}: " + table(results, peaks, where))
    for r in results:
        if "warmstart_of_spec" in r:
            print(f"- {r['row']} ({r['shape']}): of the {a.spec_tflops:g} TFLOP/s spec, warmstart "
                  f"{r['warmstart_of_spec']:.1%}, transformers {r['transformers_of_spec']:.1%}")  # fmt: skip
    print(
        json.dumps({"vs_faster_mode": {f"{r['row']} {r['precision']}": r.get("vs_faster") for r in results}})
    )


if __name__ == "__main__":
    main()
