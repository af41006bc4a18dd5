"""Sizes checked before memory is spent: a model is first built on the ``meta`` device (shapes, no storage),
its bytes compared with the memory this machine has free, and its tensors' shapes with the weights file's
header, so that a config asking for a 51 GB tensor, or one edited away from its weights, is one clear line
instead of an allocator error, a machine swapping to a halt, or a state-dict traceback."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from warmstart.errors import WarmstartError

PREFIXES = ("", "encoder.", "model.")  # how a unit's files name a bare model's tensors


def available_memory() -> int | None:
    """Bytes of memory free for a new allocation (Linux MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def planned_shapes(build: Callable[[], torch.nn.Module]) -> dict[str, tuple[tuple[int, ...], int]]:
    """{tensor name: (shape, bytes)} of the module ``build()`` makes, found without allocating it."""
    with torch.device("meta"):
        shell = build()
    return {k: (tuple(v.shape), v.numel() * v.element_size()) for k, v in shell.state_dict().items()}


def build_within_memory(build: Callable[[], torch.nn.Module], source: str, fix: str) -> torch.nn.Module:
    """``build()``, after checking that the module fits in free memory; ``source`` names what set its
    sizes (a config.json, a run's config) and ``fix`` says what to change."""
    need = sum(nbytes for _, nbytes in planned_shapes(build).values())
    free = available_memory()
    if free is not None and need > free:
        raise WarmstartError(
            f"{source} describes a model of {need / 1e9:,.1f} GB, more than the {free / 1e9:,.1f} GB of "
            "memory free here",
            fix,
        )
    return build()


def tensor_shapes(path: str | os.PathLike) -> dict[str, tuple[int, ...]]:
    """{name: shape} from a safetensors file's header, without reading its tensors."""
    if not Path(path).is_file():
        raise WarmstartError(f"{path} is missing", "pass a complete run or checkpoint directory")
    try:
        with safe_open(str(path), "pt") as fh:
            return {k: tuple(fh.get_slice(k).get_shape()) for k in fh.keys()}
    except (SafetensorError, OSError) as exc:
        raise WarmstartError(
            f"{path} is damaged or not a safetensors file ({exc})",
            "use another checkpoint, or write it again",
        ) from None


def check_shapes(build: Callable[[], torch.nn.Module], weights: Path, source: str) -> None:
    """Refuse weights whose shapes differ from those of the module that ``source`` (the config) builds:
    the first difference, named, before anything is allocated."""
    saved = tensor_shapes(weights)
    for name, (shape, _) in planned_shapes(build).items():
        key = next((p + name for p in PREFIXES if p + name in saved), None)
        if key is not None and saved[key] != shape:
            raise WarmstartError(
                f"{source} does not match the weights in {weights}: {key} is {list(saved[key])} there, "
                f"the config makes it {list(shape)}",
                f"restore the {Path(source).name} the weights were saved with, or use another checkpoint",
            )
