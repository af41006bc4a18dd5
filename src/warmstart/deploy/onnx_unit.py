"""An ONNX model directory as a finetuned unit: the task's own ``predict`` (decoding, labels, QA spans) on a
shell of the unit built on the meta device (its options, no weights), whose scoring method runs the graph
in onnxruntime. predict, evaluate, serve and ``warmstart.load`` take it as they take a PyTorch model."""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from warmstart.deploy.onnx_graph import score_method
from warmstart.deploy.shell import task_shell
from warmstart.errors import WarmstartError

GRAPH = "model.onnx"


def is_onnx_dir(path: str | Path) -> bool:
    """Whether ``path`` is a directory `warmstart export --to onnx` wrote."""
    return (Path(path) / GRAPH).is_file() and (Path(path) / "config.json").is_file()


def session(path: Path, threads: int | None = None):
    """An onnxruntime session of ``path`` on the CPU (all graph optimizations on)."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise WarmstartError(
            f"{path.parent} is an ONNX model and onnxruntime is not installed",
            'pip install "warmstart[onnx]"',
        ) from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or int(os.environ.get("WARMSTART_ONNX_THREADS", 0))
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


@contextmanager
def quiet_logs():
    """onnxruntime's quantizer warns on the root logger (to pre-process the graph before quantizing, which
    the export needs not): kept off the user's terminal while inside."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


class OnnxUnit:
    """What inference/ asks of a unit (``predict``, ``to``, a call for evaluation; the mode switches and the
    rest go to the shell), the scores from onnxruntime."""

    def __init__(self, shell: torch.nn.Module, run):
        self.shell, self.run = shell, run
        self.names = [i.name for i in run.get_inputs()]
        setattr(shell, score_method(shell), self.scores)  # the unit's own predict calls it

    def scores(self, batch: dict):
        feed = {n: _numpy(batch[n]) for n in self.names}
        out = [torch.from_numpy(np.asarray(o)) for o in self.run.run(None, feed)]
        return out[0] if len(out) == 1 else tuple(out)

    def predict(self, batch: dict) -> list[dict]:
        return self.shell.predict(batch)

    def __call__(self, batch: dict, **kwargs):  # (loss, stats), as evaluation asks a unit
        return self.shell(batch, **kwargs)

    def __getattr__(self, name: str):  # the rest (training, modules, summarize, labels...) is the shell's
        return getattr(self.shell, name)

    def to(self, *args, **kwargs) -> OnnxUnit:  # the graph runs where onnxruntime runs it
        return self


def _numpy(value) -> np.ndarray:
    array = value.cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
    return array


def load_onnx_finetuned(d: Path):
    """(unit, task, tokenizer, labels) of an ONNX model directory, as checkpoints/load.py's
    ``load_finetuned`` gives them for a PyTorch one."""
    shell, task, tokenizer, labels = task_shell(d, "meta", "--to onnx")
    return OnnxUnit(shell, session(d / GRAPH)), task, tokenizer, labels
