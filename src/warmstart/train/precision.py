"""Mixed precision: the autocast dtype of the forward pass (``train.bf16`` or ``train.fp16``) and, for
float16, the loss scaler.

float16 holds magnitudes up to 65504 and down to about 6e-8, so small gradients vanish unless the loss is
multiplied by a large scale before the backward pass (``torch.amp.GradScaler``). The scaler divides the
gradients back before clipping (``train.clip_norm`` then limits the true norm), skips the optimizer step
when a gradient overflowed to inf or NaN (halving its scale), and doubles the scale after
``growth_interval`` steps without overflow. Such a skip is the scaler searching for the largest safe scale,
not a bad step of the NaN guard (guards.py): it is counted (``scaler_skipped``) and logged with the scale
(``loss_scale``), and the run goes on. The scaler's state is part of the checkpoint's trainer state, so a
resumed run scales and skips exactly as an uninterrupted one. bfloat16 has float32's range: no scaler.
"""

from __future__ import annotations

import contextlib

import torch

from warmstart.errors import WarmstartError


def autocast_dtype(cfg) -> torch.dtype | None:
    """The forward pass's autocast dtype of a TrainConfig: bfloat16, float16, or None (float32)."""
    if cfg.bf16 and cfg.fp16:
        raise both_error()
    return torch.bfloat16 if cfg.bf16 else torch.float16 if cfg.fp16 else None


def both_error() -> WarmstartError:
    return WarmstartError(
        "train.fp16 and train.bf16 are both on; the forward pass runs in one of them",
        "keep one: train.bf16=true (CPUs, A100/H100-class GPUs) or train.fp16=true (V100/T4-class GPUs)",
    )


def autocast(device: torch.device, dtype: torch.dtype | bool | None):
    """The autocast context of ``dtype`` on ``device`` (None or False: one that does nothing; True:
    bfloat16, what callers that passed ``train.bf16`` meant)."""
    if dtype is True:
        dtype = torch.bfloat16
    if dtype is None or dtype is False:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


class LossScaler:
    """``train.fp16``'s gradient scaler and the count of the steps it skipped; without fp16 every method
    passes through (``scale`` returns the loss, ``step`` steps the optimizer)."""

    def __init__(self, enabled: bool, device: torch.device, sharded: bool, state: dict):
        if enabled and sharded:  # FSDP: each process holds shards; an overflow anywhere skips everywhere
            from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

            self.scaler = ShardedGradScaler(device.type)
        else:
            self.scaler = torch.amp.GradScaler(device.type, enabled=enabled)
        self.enabled = enabled
        if enabled and state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        self.skipped = int(state.get("scaler_skipped", 0))
        self.overflowed = False  # the last step was skipped by the scaler

    def scale(self, loss: torch.Tensor) -> torch.Tensor:
        return self.scaler.scale(loss)

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        """Divide the gradients by the scale (before clipping) and note whether any overflowed."""
        if self.enabled:
            self.scaler.unscale_(optimizer)

    def step(self, optimizer: torch.optim.Optimizer) -> None:
        """The optimizer's step; none when a gradient overflowed (fp16)."""
        if self.enabled:
            self.scaler.step(optimizer)
        else:
            optimizer.step()

    def update(self, counted: bool = True) -> bool:
        """After every step, taken or not: the scale shrinks after an overflow and grows after
        ``growth_interval`` good steps. True when the step overflowed; counted as a scaler skip when
        ``counted`` (a step the NaN guard skipped is its bad step, not the scaler's)."""
        if not self.enabled:
            return False
        before = self.scaler.get_scale()
        self.scaler.update()
        self.overflowed = counted and self.scaler.get_scale() < before
        self.skipped += int(self.overflowed)
        return self.overflowed

    @property
    def searching(self) -> bool:
        """Whether an overflowed gradient is the scaler's to skip: fp16 with a scale of at least 1. A gradient
        that overflows even below that is not float16's range but a broken step: the NaN guard's bad step
        (without this, a NaN gradient under a finite loss would be skipped forever, the scale halving)."""
        return self.enabled and self.loss_scale >= 1.0

    @property
    def loss_scale(self) -> float:
        return float(self.scaler.get_scale())

    def record(self) -> dict:
        """What a train record adds: the scale and the steps skipped so far ({} without fp16)."""
        return {"loss_scale": self.loss_scale, "scaler_skipped": self.skipped} if self.enabled else {}

    def state(self) -> dict:
        """The trainer state's part (JSON: the scale is a power of two, the rest small numbers)."""
        if not self.enabled:
            return {}
        return {"scaler": dict(self.scaler.state_dict()), "scaler_skipped": self.skipped}
