"""AdamW with no weight decay on biases and normalisation weights, and optional per-parameter LR scales.

Only parameters with ``requires_grad`` reach the optimizer, so frozen parts of a model (finetuning
strategies) get neither updates nor weight decay nor optimizer state. Each group carries ``"lr_scale"``; the
fit loop sets ``group["lr"] = lr * group["lr_scale"]`` every step (layer-wise LR decay uses it).

The update is torch's fused AdamW (one kernel over all tensors) where every parameter is a plain CPU or
CUDA floating tensor: on 2 CPU cores it took a small BERT's optimizer step from 13 to 4 ms against the
``foreach`` implementation, which on the CPU loops over tensors op by op; sharded (FSDP) parameters keep
``foreach``. Both compute the same update (within float rounding) and share one state-dict format.

Groups are built in a fixed order (scale from high to low, then decay before no decay, parameters in
``named_parameters`` order within a group): exact resume matches optimizer state to groups by position.
"""

import torch
from torch import nn


def no_decay(name: str, p: torch.Tensor) -> bool:
    """Biases, other vectors and normalisation weights are not decayed."""
    return p.ndim < 2 or "norm" in name.lower()


def param_groups(
    model: nn.Module, weight_decay: float, lr_scales: dict[str, float] | None = None
) -> list[dict]:
    """AdamW groups keyed by (lr scale, decay or not); names missing from ``lr_scales`` get scale 1.0.

    Without ``lr_scales`` this is the classic pair [decay, no decay] (both kept even when one is empty).
    """
    scales = lr_scales or {}
    groups: dict[tuple[float, bool], list] = {}
    if lr_scales is None:
        groups = {(1.0, False): [], (1.0, True): []}
    for name, p in model.named_parameters():
        if p.requires_grad:
            groups.setdefault((float(scales.get(name, 1.0)), no_decay(name, p)), []).append(p)
    return [
        {"params": params, "weight_decay": 0.0 if nd else weight_decay, "lr_scale": scale}
        for (scale, nd), params in sorted(groups.items(), key=lambda kv: (-kv[0][0], kv[0][1]))
    ]


def adamw(
    model: nn.Module,
    lr: float,
    weight_decay: float,
    betas: tuple,
    eps: float,
    lr_scales: dict[str, float] | None = None,
) -> torch.optim.AdamW:
    """AdamW over the trainable parameters of ``model``; ``lr_scales`` maps parameter names to LR factors."""
    groups = param_groups(model, weight_decay, lr_scales)
    for g in groups:
        g["lr"] = lr * g["lr_scale"]  # right from the start, also for callers that do not use the fit loop
    params = [p for g in groups for p in g["params"]]
    fused = bool(params) and all(_fusable(p) for p in params)
    return torch.optim.AdamW(
        groups, lr=lr, betas=betas, eps=eps, **({"fused": True} if fused else {"foreach": True})
    )


def _fusable(p: torch.Tensor) -> bool:
    """A plain (not sharded) floating parameter on the CPU or a CUDA device."""
    return type(p.data) is torch.Tensor and p.device.type in ("cpu", "cuda") and p.is_floating_point()
