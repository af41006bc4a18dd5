"""Static int8 (`export --to onnx --quantize int8 --calibrate N`): onnxruntime's ``quantize_static``, the
activations' ranges calibrated (min/max) on the first N training rows of the run, encoded by its task as
`finetune` encoded them; the matmul and linear weights int8 per channel, in QDQ form."""

from __future__ import annotations

import os
from itertools import islice
from pathlib import Path

from warmstart.config import WORKDIR
from warmstart.data.options import FinetuneDataConfig, open_finetune_data
from warmstart.deploy.onnx_unit import quiet_logs
from warmstart.errors import WarmstartError
from warmstart.hub.runs import run_config

BATCH = 16  # rows per calibration batch
QUANTIZED = ["MatMul", "Gemm"]  # the weights' ops: the rest (softmax, layer norm, gelu) stays in float


def training_feeds(chosen, task, tokenizer, labels, names: list[str], n: int) -> list[dict]:
    """The first ``n`` training rows of the run ``chosen`` came from, as graph inputs (numpy, ``names``)."""
    cfg = run_config(chosen.root)
    data = cfg.get("data") if isinstance(cfg.get("data"), dict) else None
    if data is None:
        raise WarmstartError(
            f"--calibrate reads the run's training data, and {chosen.path} has no run config.yaml beside it",
            "export the run directory itself, or drop --calibrate (dynamic int8)",
        )
    known = FinetuneDataConfig.__dataclass_fields__
    fields = {k: _here(v, cfg.get(WORKDIR)) for k, v in data.items() if k in known}
    dataset = open_finetune_data(FinetuneDataConfig(**fields), task.kind)
    rows = task.prepare(list(islice(dataset.records("train"), n)), dataset.kind, f"{dataset.name} (train)")
    if not rows:
        raise WarmstartError(f"the train split of {dataset.name} is empty", "drop --calibrate")
    features = task.encode(rows, tokenizer, labels, f"{dataset.name} (train)")
    return [{k: b[k].numpy() for k in names} for b in features.eval_batches(BATCH)]


def _here(value, workdir):
    """A relative path the run recorded, joined to the directory it ran in when it is not found from here."""
    relative = isinstance(value, str) and value and not os.path.isabs(value)
    if relative and workdir and not os.path.exists(value):
        there = os.path.join(workdir, value)
        return there if os.path.exists(there) else value
    return value


def quantize_calibrated(raw: Path, out: Path, feeds: list[dict]) -> None:
    """``raw`` (fp32 ONNX) statically quantized to ``out``, calibrated on ``feeds``."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter(feeds)

        def get_next(self):
            return next(self.feeds, None)

    with quiet_logs():
        quantize_static(
            str(raw), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, op_types_to_quantize=QUANTIZED,
        )  # fmt: skip
