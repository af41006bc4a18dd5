"""A LoRA run's adapters in PEFT's format, beside the merged model `warmstart export` writes.

A run finetuned with ``strategy=lora`` keeps its base weights frozen; RUN/best and RUN/final hold the merged
model (``W + (alpha / r) B A``), step checkpoints the unit with its adapters apart (merged here for export
with the alpha of the run's config.yaml). Export writes the merged model as any finetune, and:

- OUT/base/: the run's ``--init`` model as the same transformers task class (its encoder, with this run's
  head), the model the adapters apply to;
- OUT/adapter/: ``adapter_config.json`` + ``adapter_model.safetensors`` with PEFT's key names
  (``base_model.model.<module>.lora_A.weight``), one adapter per transformers projection (``query``, ``key``
  and ``value`` each, ``attention.output.dense``, ``intermediate.dense``, ``output.dense``), the trained head
  (and the exported pooler) in ``modules_to_save``, ``base_model_name_or_path`` = OUT/base. So
  ``PeftModel.from_pretrained(AutoModelFor...from_pretrained("OUT/base"), "OUT/adapter")`` computes what the
  merged export computes.

The factors are taken from the weights: each projection's update ``merged - init`` is split by an SVD into
rank-r factors ``B A`` (PEFT's ``scaling = alpha / r`` divided out). warmstart's fused ``qkv`` adapter shares
``A`` between q, k and v, so each block's update has rank r at most and the split is exact up to float
rounding; a larger remainder, or weights outside the adapters that differ from ``--init``, mean the run is
not ``--init`` plus adapters (re-initialised layers, another --init): refused, with ``--no-adapter`` to export
the merged model alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from warmstart.checkpoints.load import resolve_checkpoint
from warmstart.errors import WarmstartError
from warmstart.hub.families.base import Family, refuse
from warmstart.models.keymap import to_hf_map
from warmstart.registry import TASKS
from warmstart.train.checkpoint import read_tensors

NO_ADAPTER = "pass --no-adapter to export the merged model alone"
REMAINDER = 1e-4  # the largest singular value an SVD may drop, relative to the largest adapted weight


@dataclass(frozen=True)
class Lora:
    rank: int
    alpha: float
    dropout: float
    targets: tuple[str, ...]
    init: str  # the run's --init, as its config.yaml records it


def lora_of(run_config: dict, root: Path | None) -> Lora | None:
    """The LoRA settings of the run ``root``'s config.yaml (None: another strategy, or no config.yaml)."""
    strategy = run_config.get("strategy") or {}
    if not isinstance(strategy, dict) or strategy.get("strategy") != "lora":
        return None
    return Lora(
        int(strategy.get("lora_rank", 8)),
        float(strategy.get("lora_alpha", 16.0)),
        float(strategy.get("lora_dropout", 0.0)),
        tuple(strategy.get("lora_targets") or ("qkv", "out")),
        where_trained(str(run_config.get("init") or ""), str(run_config.get("out") or ""), root),
    )


def where_trained(init: str, out: str, root: Path | None) -> str:
    """``init`` as config.yaml records it; a relative one that is not found from here is looked for where
    the run was started (the directory its relative ``out`` was relative to)."""
    path, parts = Path(init), Path(out).parts
    if not init or path.is_absolute() or path.exists() or root is None or not out or Path(out).is_absolute():
        return init
    run = root.resolve().parent if root.name.startswith("seed-") else root.resolve()
    if run.parts[-len(parts) :] != parts:
        return init
    started = Path(*run.parts[: -len(parts)])
    return str(started / path) if (started / path).exists() else init


def merge_adapters(state: dict, lora: Lora | None, where: Path) -> dict:
    """``state`` with each LoRA layer (``X.base.weight``, ``X.lora_a``, ``X.lora_b``) merged into ``X.weight``
    as ``nn.lora.LoRALinear.merged`` does; a state without adapters is returned as it is."""
    wrapped = [k.removesuffix(".lora_a") for k in state if k.endswith(".lora_a")]
    if not wrapped:
        return state
    refuse(lora is None, f"{where} holds LoRA adapters but its run's config.yaml does not say their alpha",
           "export RUN/best or RUN/final, which hold the merged model")  # fmt: skip
    out = dict(state)
    for name in wrapped:
        a, b, weight = out.pop(f"{name}.lora_a"), out.pop(f"{name}.lora_b"), out.pop(f"{name}.base.weight")
        delta = (b.float() @ a.float()) * (lora.alpha / a.shape[0])
        out[f"{name}.weight"] = (weight.float() + delta).to(weight.dtype)
        if f"{name}.base.bias" in out:
            out[f"{name}.bias"] = out.pop(f"{name}.base.bias")
    return out


def _init_encoder(lora: Lora, prefix: str) -> dict:
    try:
        d = resolve_checkpoint(lora.init)
    except WarmstartError:
        raise WarmstartError(
            f"the LoRA run's --init {lora.init or '(none recorded)'} is not there to take its adapters apart",
            f"run export where {lora.init} can be found, or {NO_ADAPTER}",
        ) from None
    return {k: v for k, v in read_tensors(d / "model.safetensors").items() if k.startswith(prefix)}


def _targets(state: dict, lora: Lora, prefix: str) -> list[str]:
    return [k for k, v in state.items() if k.startswith(prefix) and k.endswith(".weight") and v.dim() == 2
            and k.rsplit(".", 2)[-2] in lora.targets]  # fmt: skip


def base_state(state: dict, lora: Lora, fam: Family, where: Path) -> tuple[dict, dict, float]:
    """(the run's unit tensors with the --init encoder in place of its own, the updates of the LoRA targets
    under unit names, the singular value below which a remainder is float rounding); refused when the
    weights outside the adapters are not --init's."""
    init = _init_encoder(lora, fam.unit)
    targets = set(_targets(state, lora, fam.unit))
    encoder = {k for k in state if k.startswith(fam.unit)}
    other = sorted(k for k in encoder - targets if k not in init or not torch.equal(init[k], state[k]))
    other += sorted(k for k in targets if k not in init or init[k].shape != state[k].shape)
    refuse(
        bool(other) or not targets,
        f"{where} is not --init {lora.init} plus LoRA adapters "
        f"({', '.join(other[:2]) or 'no adapted layer'} differs from --init)",
        f"export from the run's own --init model, or {NO_ADAPTER}",
    )
    deltas = {k: state[k].double() - init[k].double() for k in sorted(targets)}
    tolerance = REMAINDER * max(float(state[k].abs().max()) for k in targets)
    return {**{k: v for k, v in state.items() if k not in encoder}, **init}, deltas, tolerance


def _factors(name: str, delta: torch.Tensor, lora: Lora, tolerance: float) -> tuple:
    """(lora_A, lora_B) of one projection's update: B A * alpha / r = delta up to float rounding."""
    u, s, vh = torch.linalg.svd(delta, full_matrices=False)
    r = min(lora.rank, s.numel())
    dropped = float(s[r]) if s.numel() > r else 0.0
    refuse(dropped > tolerance,
           f"the update of {name} has rank above lora_rank {lora.rank} (singular value {dropped:.2e} left)",
           f"export from the run's own --init model, or {NO_ADAPTER}")  # fmt: skip
    root = s[:r].sqrt()
    return (root[:, None] * vh[:r]).float(), (u[:, :r] * root / (lora.alpha / lora.rank)).float()


def adapter_files(deltas: dict, tolerance: float, head: dict, lora: Lora, fam: Family, cfg, task_name: str,
                  base_path: str) -> tuple[dict, dict]:  # fmt: skip
    """(adapter_config.json, adapter_model.safetensors tensors) in PEFT's format: the LoRA factors of each
    transformers projection (``deltas``: their updates under unit names) and the exported ``head`` tensors."""
    inner = {k.removeprefix(fam.unit): v for k, v in deltas.items()}
    hf = to_hf_map(inner, fam.groups(cfg), fam.prefix, fam.transposed)
    tensors, modules = {}, []
    for name, delta in sorted(hf.items()):
        module = name.removesuffix(".weight")
        a, b = _factors(name, delta, lora, tolerance)
        tensors[f"base_model.model.{module}.lora_A.weight"] = a
        tensors[f"base_model.model.{module}.lora_B.weight"] = b
        modules.append(module)
    saved = []
    for key, value in head.items():
        tensors[f"base_model.model.{key}"] = value
        parts = key.split(".")
        top = ".".join(parts[:2]) if key.startswith(fam.prefix) else parts[0]
        saved.append(top)
    config = {
        "peft_type": "LORA",
        "task_type": TASKS[task_name].peft_task_type if task_name in TASKS else None,
        "base_model_name_or_path": base_path,
        "r": lora.rank,
        "lora_alpha": lora.alpha,
        "lora_dropout": lora.dropout,
        "target_modules": modules,
        "modules_to_save": list(dict.fromkeys(saved)),
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "init_lora_weights": True,
        "use_rslora": False,
        "use_dora": False,
    }
    return config, {k: v.contiguous() for k, v in tensors.items()}
