"""`warmstart export RUN --to onnx`: a finetuned model's scores as an ONNX graph, with the tokenizer, the run
card and label map (config.json) and a card, in one directory that predict, evaluate, serve and
``warmstart.load`` take. ``quantize="int8"``: the matmul weights in int8 (onnxruntime's dynamic
quantization); ``optimize``: onnxruntime's graph optimizations applied once and saved. The export checks
itself: the graph's scores on the sample batch against PyTorch's (fp32: within 1e-4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import torch

from warmstart.checkpoints.load import load_finetuned
from warmstart.deploy.onnx_graph import OPSET, export_graph, sample_batch, score_method
from warmstart.deploy.onnx_unit import GRAPH, session
from warmstart.errors import WarmstartError
from warmstart.hub.convert import check_out
from warmstart.hub.runs import choose
from warmstart.outputs import mark
from warmstart.train.checkpoint import atomic_dir

PRECISIONS = ("fp32", "int8")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _require_onnx() -> None:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        raise WarmstartError(
            "export --to onnx needs onnx and onnxruntime", 'pip install "warmstart[onnx]"'
        ) from None


def export_onnx(run, out, overwrite: bool = False, checkpoint: str | None = None, quantize: str | None = None,
                optimize: bool = False) -> tuple[Path, dict]:  # fmt: skip
    """Write the ONNX directory ``out`` of the finetuned ``run``; (out, what the export measured)."""
    _require_onnx()
    if quantize not in (None, "int8"):
        raise WarmstartError(f"--quantize {quantize} is not a precision export writes", "use --quantize int8")
    chosen = choose(run, checkpoint)
    out, d = Path(out), chosen.path
    check_out(out, overwrite, Path(run), d)
    unit, task, tokenizer, labels = load_finetuned(d)
    if getattr(unit, "word_reader", None) is not None or not hasattr(unit, score_method(unit)):
        raise WarmstartError(f"export --to onnx does not export this {task.name} model yet", "use --to hf")
    batch = sample_batch(task, tokenizer, labels)
    precision = quantize or "fp32"

    def write(tmp: Path) -> None:
        raw = tmp / "fp32.onnx"
        names, outputs = export_graph(unit, batch, raw)
        graph = tmp / GRAPH
        if quantize == "int8":
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(str(raw), str(graph), weight_type=QuantType.QInt8)
            raw.unlink()
        else:
            raw.rename(graph)
        if optimize:
            _optimize(graph)
        measured.update(_check(unit, batch, names, graph, precision))
        for name in TOKENIZER_FILES:
            if (d / name).is_file():
                shutil.copy2(d / name, tmp / name)
        config = json.loads((d / "config.json").read_text(encoding="utf-8"))
        config["onnx"] = {"precision": precision, "inputs": names, "outputs": outputs, "opset": OPSET,
                          "optimized": optimize, "source": str(d)}  # fmt: skip
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        (tmp / "README.md").write_text(
            _card(chosen.says(), task.name, precision, names, measured), encoding="utf-8"
        )
        mark(tmp, "export")

    measured: dict = {}
    return atomic_dir(out, write), measured


def _optimize(graph: Path) -> None:
    """onnxruntime's graph optimizations (constant folding, fusions) applied once and saved in place."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    done = graph.with_name("optimized.onnx")
    options.optimized_model_filepath = str(done)
    ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    done.replace(graph)


def _check(unit, batch: dict, names: list[str], graph: Path, precision: str) -> dict:
    """The largest difference of the graph's scores from PyTorch's on the sample batch; fp32 must be within
    1e-4 (finite scores only: QA's masked positions are -inf-like on both sides)."""
    with torch.inference_mode():
        want = getattr(unit, score_method(unit))(batch)
    want = [w.float().numpy() for w in (want if isinstance(want, tuple | list) else [want])]
    got = session(graph).run(None, {n: batch[n].numpy() for n in names})
    gap = 0.0
    for w, g in zip(want, got, strict=True):
        finite = np.isfinite(w) & (np.abs(w) < 1e4)
        gap = max(gap, float(np.max(np.abs(w[finite] - g[finite]), initial=0.0)))
    if precision == "fp32" and gap > 1e-4:
        raise WarmstartError(f"the ONNX graph's scores differ from PyTorch's by {gap:.1e}", "this is a bug")
    return {"max_abs_difference": gap}


def _card(source: str, task: str, precision: str, names: list[str], measured: dict) -> str:
    gap = measured.get("max_abs_difference", 0.0)
    return (
        f"# ONNX export of {source}\n\nA {task} model as an ONNX graph ({precision}; inputs "
        f"{', '.join(names)}), "
        "with its tokenizer and config.json (the run card and label map). It answers as the PyTorch model "
        f"does: `warmstart predict DIR`, `evaluate`, `serve`, `warmstart.load(DIR)`. On the export's sample "
        f"input its scores differ from PyTorch's by at most {gap:.1e}.\n"
    )
