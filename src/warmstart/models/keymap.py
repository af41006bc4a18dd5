"""Translate weight names between warmstart and Hugging Face layouts, fusing or splitting projections.

A model file declares ``KEYS`` (pairs of warmstart and HF name patterns, ``{i}`` = layer index) and
``FUSED`` (one warmstart tensor = the concatenation of several HF tensors along dim 0, e.g. Q, K, V).
``transposed`` names the warmstart keys (by suffix) whose HF tensor is stored (in, out) (GPT-2's Conv1D).
"""

from __future__ import annotations

import torch

from warmstart.errors import WarmstartError


def _expand(pairs, layers: int):
    for ours, theirs in pairs:
        if "{i}" in ours:
            yield from ((ours.format(i=i), theirs.format(i=i)) for i in range(layers))
        else:
            yield ours, theirs


def _expand_fused(fused, layers: int):
    for ours, parts in fused:
        for i in range(layers) if "{i}" in ours else [None]:
            yield ours.format(i=i), [p.format(i=i) for p in parts]


def _flip(name: str, tensor, transposed):
    return tensor.t().contiguous() if name.endswith(tuple(transposed)) and transposed else tensor


def from_hf(state: dict, keys, fused, layers: int, prefix: str = "", transposed=()) -> dict:
    """HF state dict -> warmstart names; raises naming the first missing keys."""
    out, missing = {}, []
    for ours, theirs in _expand(keys, layers):
        if prefix + theirs in state:
            out[ours] = _flip(ours, state[prefix + theirs], transposed)
        else:
            missing.append(prefix + theirs)
    for ours, parts in _expand_fused(fused, layers):
        found = [state.get(prefix + p) for p in parts]
        if any(t is None for t in found):
            missing += [prefix + p for p, t in zip(parts, found) if t is None]
        else:
            out[ours] = torch.cat(found, dim=0)
    if missing:
        raise WarmstartError(
            f"the checkpoint lacks {len(missing)} weights, e.g. {', '.join(missing[:3])}",
            "check that it is the model family and size you asked for",
        )
    return out


def to_hf(state: dict, keys, fused, layers: int, prefix: str = "", transposed=()) -> dict:
    """warmstart state dict -> HF names (fused tensors split into equal parts)."""
    out = {}
    for ours, theirs in _expand(keys, layers):
        if ours in state:
            out[prefix + theirs] = _flip(ours, state[ours], transposed)
    for ours, parts in _expand_fused(fused, layers):
        if ours in state:
            for p, t in zip(parts, state[ours].chunk(len(parts), dim=0)):
                out[prefix + p] = t.contiguous()
    return out


def from_hf_map(state: dict, groups, prefix: str = "", transposed=()) -> dict:
    """``from_hf`` over a model's key map: [(keys, fused, layers)], one group per stack of blocks."""
    out = {}
    for keys, fused, layers in groups:
        out.update(from_hf(state, keys, fused, layers, prefix, transposed))
    return out


def to_hf_map(state: dict, groups, prefix: str = "", transposed=()) -> dict:
    out = {}
    for keys, fused, layers in groups:
        out.update(to_hf(state, keys, fused, layers, prefix, transposed))
    return out
