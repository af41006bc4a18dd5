"""`warmstart export RUN --to onnx`: a finetuned model's scores, or a sentence encoder's vectors (its pooling
and normalization inside the graph: deploy/onnx_encoder.py), as an ONNX graph, with the tokenizer, the run
card and label map (config.json) and a card, in one directory that predict, evaluate, serve, embed and
``warmstart.load`` take. ``quantize="int8"``: the matmul weights in int8 per output channel (onnxruntime's
dynamic quantization; all-MiniLM-L6-v2's vectors keep a cosine of 0.988 or more with fp32's, 0.948 with one
scale per tensor); with ``calibrate=N`` static, the activations calibrated on N training rows
(deploy/calibrate.py). ``optimize``: BERT-style attention as onnxruntime's fused Attention node
(deploy/onnx_attention.py) and onnxruntime's graph optimizations applied once and saved (the graph then runs
in onnxruntime only). The export checks itself: the graph's outputs on the sample batch against
PyTorch's (fp32: within 1e-4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import load_encoder, load_finetuned
from warmstart.checkpoints.resolve import read_config
from warmstart.checkpoints.sentence import declared
from warmstart.deploy.calibrate import quantize_calibrated, training_feeds
from warmstart.deploy.onnx_attention import fused_attention
from warmstart.deploy.onnx_encoder import NAMES, Sentences, check_encoder, sample_inputs
from warmstart.deploy.onnx_graph import INPUTS, OPSET, Graph, sample_batch, score_method, trace
from warmstart.deploy.onnx_unit import GRAPH, quiet_logs, session
from warmstart.errors import WarmstartError
from warmstart.hub.convert import check_out
from warmstart.hub.on_the_fly import warmstart_dir
from warmstart.hub.runs import choose
from warmstart.outputs import mark
from warmstart.registry import generates
from warmstart.train.checkpoint import atomic_dir

PRECISIONS = ("fp32", "int8")
PREDICTS = "`warmstart predict DIR`, `evaluate`, `serve`, `warmstart.load(DIR).predict`"
ENCODES = "`warmstart embed DIR`, `warmstart.load(DIR).encode`"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


class Source(NamedTuple):
    """What is traced: ``graph`` (a module of ``batch``'s tensors ``names``), what it is (``what``), the
    config.json ``onnx`` fields it adds, and its task pieces (None for an encoder) for calibration."""

    graph: nn.Module
    batch: dict
    names: list[str]
    what: str
    uses: str
    extra: dict
    task: tuple | None


def _require_onnx() -> None:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        raise WarmstartError(
            "export --to onnx needs onnx and onnxruntime", 'pip install "warmstart[onnx]"'
        ) from None


def check_precision(quantize: str | None, calibrate: int | None) -> None:
    """Refuse a precision export does not write, and --calibrate without int8 or below 1."""
    if quantize not in (None, "int8"):
        raise WarmstartError(f"--quantize {quantize} is not a precision export writes", "use --quantize int8")
    if calibrate is not None and (quantize != "int8" or calibrate < 1):
        raise WarmstartError(
            f"--calibrate {calibrate} needs --quantize int8 and at least 1 row",
            "e.g. --quantize int8 --calibrate 256",
        )


def export_onnx(run, out, overwrite: bool = False, checkpoint: str | None = None, quantize: str | None = None,
                optimize: bool = False, calibrate: int | None = None, head: str | None = None
                ) -> tuple[Path, dict]:  # fmt: skip
    """Write the ONNX directory ``out`` of ``run`` (finetuned: its scores; pretrained: its sentence
    vectors; ``head``: that head of a multitask encoder); (out, what the export measured)."""
    _require_onnx()
    check_precision(quantize, calibrate)
    if calibrate is not None and head is not None:
        raise WarmstartError(
            f"--calibrate reads one dataset's training rows, and --head {head} is one task of a run trained "
            "on several",
            "drop --calibrate (dynamic int8)",
        )
    chosen = choose(warmstart_dir(str(run)) or run, checkpoint).one_task(head)  # transformers: its import
    out, d = Path(out), chosen.path
    check_out(out, overwrite, Path(run), d)
    card = RunCard.read(read_config(d))
    if not card.finetuned and generates(card.arch):
        raise WarmstartError(f"export --to onnx does not export {card.arch} generators", "use --to hf")
    source = _finetuned(d) if card.finetuned else _encoder(d)
    if calibrate is not None and source.task is None:
        raise WarmstartError("--calibrate reads a finetuned run's training data", "drop --calibrate")
    feeds = training_feeds(chosen, *source.task, source.names, calibrate) if calibrate else None
    precision = quantize or "fp32"

    def write(tmp: Path) -> None:
        raw = tmp / "fp32.onnx"
        with fused_attention(source.graph, optimize) as fused:
            names, outputs = trace(source.graph, source.batch, source.names, raw)
        graph = tmp / GRAPH
        if feeds is not None:
            quantize_calibrated(raw, graph, feeds)
        elif quantize == "int8":
            from onnxruntime.quantization import QuantType, quantize_dynamic

            with quiet_logs():
                quantize_dynamic(str(raw), str(graph), weight_type=QuantType.QInt8, per_channel=True)
        else:
            raw.rename(graph)
        raw.unlink(missing_ok=True)
        if optimize:
            _optimize(graph)
        measured.update(_check(source, graph, precision))
        for name in TOKENIZER_FILES:
            if (d / name).is_file():
                shutil.copy2(d / name, tmp / name)
        config = json.loads((d / "config.json").read_text(encoding="utf-8"))
        config["onnx"] = {"precision": precision, "inputs": names, "outputs": outputs, "opset": OPSET,
                          "optimized": optimize, "fused_attention_layers": fused, "calibrated": calibrate,
                          "source": chosen.source, **source.extra}  # fmt: skip
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        (tmp / "README.md").write_text(
            _card(chosen.says(), source, precision, names, measured), encoding="utf-8"
        )
        mark(tmp, "export")

    measured: dict = {}
    return atomic_dir(out, write), measured


def _finetuned(d: Path) -> Source:
    unit, task, tokenizer, labels = load_finetuned(d)
    if getattr(unit, "word_reader", None) is not None or not hasattr(unit, score_method(unit)):
        raise WarmstartError(f"export --to onnx does not export this {task.name} model yet", "use --to hf")
    batch = sample_batch(task, tokenizer, labels)
    names = [n for n in INPUTS if isinstance(batch.get(n), torch.Tensor)]
    pieces = (task, tokenizer, labels)
    return Source(Graph(unit, names), batch, names, f"{task.name} model", PREDICTS, {}, pieces)


def _encoder(d: Path) -> Source:
    """A pretrained encoder as sentence vectors: the pooling, normalization and length it declares (recorded
    at import, or read from the directory it came from), else the [CLS] state as is."""
    encoder, tokenizer, config_json = load_encoder(d)
    check_encoder(encoder, f"{d}'s encoder")
    card = RunCard.read(config_json)
    said = card.sections.get("sentence") or declared(card.imported_from) or {}
    limit = getattr(encoder.config, "max_length", None) or 512
    options = {"pooling": said.get("pooling", "cls"), "normalize": bool(said.get("normalize", False)),
               "max_length": min(said.get("max_length") or limit, limit)}  # fmt: skip
    graph = Sentences(encoder.eval(), options["pooling"], options["normalize"])
    batch = sample_inputs(tokenizer, options["max_length"])
    with torch.inference_mode():
        options["dimensions"] = int(graph(*(batch[n] for n in NAMES)).shape[-1])
    return Source(graph, batch, NAMES, "sentence encoder", ENCODES, {"sentence": options}, None)


def _optimize(graph: Path) -> None:
    """onnxruntime's graph optimizations (constant folding, fusions) applied once and saved in place."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    done = graph.with_name("optimized.onnx")
    options.optimized_model_filepath = str(done)
    ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    done.replace(graph)


def _check(source: Source, graph: Path, precision: str) -> dict:
    """The largest difference of the graph's outputs from PyTorch's on the sample batch; fp32 must be within
    1e-4 (finite scores only: QA's masked positions are -inf-like on both sides)."""
    with torch.inference_mode():
        want = source.graph(*(source.batch[n] for n in source.names))
    want = [w.float().numpy() for w in (want if isinstance(want, tuple | list) else [want])]
    got = session(graph).run(None, {n: source.batch[n].numpy() for n in source.names})
    gap = 0.0
    for w, g in zip(want, got, strict=True):
        finite = np.isfinite(w) & (np.abs(w) < 1e4)
        gap = max(gap, float(np.max(np.abs(w[finite] - g[finite]), initial=0.0)))
    if precision == "fp32" and gap > 1e-4:
        raise WarmstartError(f"the ONNX graph's outputs differ from PyTorch's by {gap:.1e}", "this is a bug")
    return {"max_abs_difference": gap}


def _card(said: str, source: Source, precision: str, names: list[str], measured: dict) -> str:
    gap = measured.get("max_abs_difference", 0.0)
    return (
        f"# ONNX export of {said}\n\nA {source.what} as an ONNX graph ({precision}; inputs "
        f"{', '.join(names)}), with its tokenizer and config.json (the run card and label map). It answers "
        f"as the PyTorch model does: {source.uses}. On the export's sample input its outputs differ from "
        f"PyTorch's by at most {gap:.1e}.\n"
    )
