"""`warmstart export RUN --to torch --quantize int8`: a finetuned unit with torch.ao's dynamic quantization
(every ``nn.Linear`` weight int8 per output channel, activations quantized per batch at run time, CPU only),
written as safetensors (the int8 weights with their scales and zero points; nothing pickled) beside the
tokenizer and config.json, whose ``quantized`` block says the format and precision. predict, evaluate,
serve and ``warmstart.load`` take the directory as they take an ONNX one (inference/load.py)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn

from warmstart.checkpoints.load import load_finetuned
from warmstart.deploy.onnx_graph import sample_batch, score_method
from warmstart.deploy.shell import task_shell
from warmstart.errors import WarmstartError
from warmstart.hub.convert import check_out
from warmstart.hub.runs import choose
from warmstart.outputs import mark
from warmstart.train.checkpoint import atomic_dir, read_tensors

WEIGHTS = "model.int8.safetensors"
PARTS = ("weight", "weight_scales", "weight_zero_points", "bias")  # of each linear layer
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def is_torch_int8_dir(path: str | Path) -> bool:
    """Whether ``path`` is a directory `warmstart export --to torch --quantize int8` wrote."""
    return (Path(path) / WEIGHTS).is_file() and (Path(path) / "config.json").is_file()


def quantized(unit: nn.Module) -> nn.Module:
    """``unit`` (in place) with every ``nn.Linear`` dynamically quantized: int8 weights per output channel."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():  # torch.ao's notes that it moves to torchao
        warnings.simplefilter("ignore")
        return quantize_dynamic(unit.eval(), {nn.Linear: per_channel_dynamic_qconfig}, inplace=True)


def _linears(unit: nn.Module) -> dict[str, nn.Module]:
    from torch.ao.nn.quantized.dynamic import Linear

    return {name: m for name, m in unit.named_modules() if isinstance(m, Linear)}


def int8_tensors(unit: nn.Module) -> dict[str, torch.Tensor]:
    """A quantized unit's state as plain tensors: each linear layer's int8 weight, its per-channel scales and
    zero points and its bias; every other weight as it is."""
    linears = _linears(unit)
    out = {k: v for k, v in unit.state_dict().items() if k.rpartition(".")[0] not in linears}
    out = {k: v for k, v in out.items() if isinstance(v, torch.Tensor) and "_packed_params" not in k}
    for name, m in linears.items():
        weight, bias = m.weight(), m.bias()
        out[f"{name}.weight"] = weight.int_repr().contiguous()
        out[f"{name}.weight_scales"] = weight.q_per_channel_scales().contiguous()
        out[f"{name}.weight_zero_points"] = weight.q_per_channel_zero_points().contiguous()
        if bias is not None:
            out[f"{name}.bias"] = bias.detach().contiguous()
    return {k: v.contiguous() for k, v in out.items()}


def load_torch_int8(d: Path):
    """(unit, task, tokenizer, labels) of an int8 directory: the unit built, its float weights loaded, then
    quantized and its linear layers given the saved int8 weights (checked: each one the unit has)."""
    unit, task, tokenizer, labels = task_shell(d, "cpu", "--to torch --quantize int8")
    state = read_tensors(d / WEIGHTS)
    names = {k.removesuffix(".weight_scales") for k in state if k.endswith(".weight_scales")}
    int8 = {f"{n}.{part}": state.pop(f"{n}.{part}", None) for n in names for part in PARTS}
    missing, unexpected = unit.load_state_dict(state, strict=False)
    missing = [k for k in missing if k.rpartition(".")[0] not in names]
    unit = quantized(unit)
    missing += [f"{n}.weight" for n in _linears(unit) if n not in names]
    if missing or unexpected:
        raise WarmstartError(
            f"the weights in {d / WEIGHTS} do not fit its config.json: missing {missing[:3]}, "
            f"unexpected {unexpected[:3]}",
            "export the run again",
        )
    for name, m in _linears(unit).items():
        weight, scales, zeros, bias = (int8[f"{name}.{part}"] for part in PARTS)
        m.set_weight_bias(torch._make_per_channel_quantized_tensor(weight, scales, zeros, 0), bias)
    return CpuUnit(unit), task, tokenizer, labels


class CpuUnit:
    """A quantized unit as inference/ asks for it: it stays on the CPU (``to`` does nothing) and takes its
    batches there; the rest is the unit's."""

    def __init__(self, unit: nn.Module):
        self.unit = unit

    def predict(self, batch: dict) -> list[dict]:
        return self.unit.predict(_cpu(batch))

    def __call__(self, batch: dict, **kwargs):
        return self.unit(_cpu(batch), **kwargs)

    def to(self, *args, **kwargs) -> CpuUnit:
        return self

    def __getattr__(self, name: str):
        return getattr(self.unit, name)


def _cpu(batch: dict) -> dict:
    return {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def export_torch_int8(run, out, overwrite: bool = False, checkpoint: str | None = None,
                      head: str | None = None) -> tuple[Path, dict]:  # fmt: skip
    """Write the int8 directory ``out`` of the finetuned ``run`` (``head``: that head of a multitask encoder);
    (out, what the export measured: the largest difference of its scores from fp32's on the sample batch)."""
    chosen = choose(run, checkpoint).one_task(head)
    out, d = Path(out), chosen.path
    check_out(out, overwrite, Path(run), d)
    unit, task, tokenizer, labels = load_finetuned(d)
    batch = sample_batch(task, tokenizer, labels)
    method = score_method(unit)
    with torch.inference_mode():
        want = getattr(unit, method)(batch)
        unit = quantized(unit)
        got = getattr(unit, method)(batch)
    pairs = zip(*(x if isinstance(x, tuple | list) else [x] for x in (want, got)), strict=True)
    gap = max(float((w.float() - g.float()).abs().clamp(max=1e4).max()) for w, g in pairs)

    def write(tmp: Path) -> None:
        save_file(int8_tensors(unit), str(tmp / WEIGHTS))
        for name in TOKENIZER_FILES:
            if (d / name).is_file():
                shutil.copy2(d / name, tmp / name)
        config = json.loads((d / "config.json").read_text(encoding="utf-8"))
        config["quantized"] = {"format": "torch", "precision": "int8", "method": "dynamic (torch.ao)",
                               "weights": "nn.Linear, int8 per output channel",
                               "source": chosen.source}  # fmt: skip
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        (tmp / "README.md").write_text(
            f"# int8 export of {chosen.says()}\n\nA {task.name} model with torch.ao's dynamic quantization "
            f"(nn.Linear weights int8 per output channel; CPU). `warmstart predict DIR`, `evaluate`, `serve` "
            f"and `warmstart.load(DIR)` take it. On the export's sample input its scores differ from fp32's "
            f"by at most {gap:.1e}.\n",
            encoding="utf-8",
        )
        mark(tmp, "export")

    return atomic_dir(out, write), {"max_abs_difference": gap}
