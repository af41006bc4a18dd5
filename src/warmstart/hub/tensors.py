"""Tensors between a warmstart unit and a transformers checkpoint: the base model's key map (fused projections
split, Conv1D transposed) plus the heads outside it, RoBERTa's position offset and ALBERT's identity
projection; on import, every tensor checked against what config.json says."""

from __future__ import annotations

import dataclasses

import torch

from warmstart.hub.families.base import BUFFERS, DROPPED, POSITIONS, Family, refuse
from warmstart.models.keymap import from_hf_map, to_hf_map


def padded(fam: Family, pad) -> Family:
    """The family with its position offset for padding id ``pad`` (RoBERTa: positions start at pad + 1)."""
    if not fam.position_offset:
        return fam
    refuse(not isinstance(pad, int), f"a {fam.hf_class} needs pad_token_id (its positions start after it)",
           "add pad_token_id to config.json (RoBERTa's is 1)")  # fmt: skip
    return dataclasses.replace(fam, position_offset=pad + 1)


def to_hf_state(fam: Family, cfg, unit_state: dict) -> dict:
    """A warmstart unit's tensors under transformers' names (fused projections split, Conv1D transposed)."""
    model = {k[len(fam.unit) :]: v for k, v in unit_state.items() if k.startswith(fam.unit)}
    out = to_hf_map(model, fam.groups(cfg), fam.prefix, fam.transposed)
    if fam.position_offset and fam.prefix + POSITIONS in out:
        table = out[fam.prefix + POSITIONS]
        out[fam.prefix + POSITIONS] = torch.cat([table.new_zeros(fam.position_offset, table.shape[1]), table])
    if fam.identity and "embed_project.weight" not in model:  # ALBERT without factorized embeddings
        eye = torch.eye(cfg.hidden_size, dtype=model["embeddings.word.weight"].dtype)
        out.update(
            {f"{fam.prefix}{fam.identity}.weight": eye, f"{fam.prefix}{fam.identity}.bias": eye[0] * 0}
        )
    for ours, theirs in fam.heads:
        if ours in unit_state:
            value = unit_state[ours]
            out[theirs] = value.reshape(1, -1) if theirs == "final_logits_bias" else value
    return out


def _first(items) -> str:
    return ", ".join(items[:3]) + (f" (and {len(items) - 3} more)" if len(items) > 3 else "")


def from_hf_state(fam: Family, cfg, state: dict, unit_state: dict, where) -> tuple[dict, list, list]:
    """(unit tensors, unit heads left fresh, HF head tensors dropped) of the canonical HF ``state``; a
    tensor of the wrong shape, a missing one or an unknown one is a WarmstartError naming the first few."""
    expected = to_hf_state(fam, cfg, unit_state)
    shapes = [f"{k} is {tuple(state[k].shape)}, config.json says {tuple(v.shape)}"
              for k, v in expected.items() if k in state and state[k].shape != v.shape]  # fmt: skip
    refuse(bool(shapes), f"{where}: weights do not fit config.json: {_first(shapes)}",
           "pass the config.json saved with these weights")  # fmt: skip
    heads = {theirs for _, theirs in fam.heads}
    any_head = any(h in state for h in heads)
    missing = [k for k in expected if k not in state and (any_head or k not in heads)]
    refuse(bool(missing), f"{where} lacks {len(missing)} of the model's weights: {_first(missing)}",
           f"pass a complete {fam.hf_class} checkpoint (or its base model)")  # fmt: skip
    untied = [a for a, b in fam.tied if a in state and a not in expected and b in state
              and not torch.equal(state[a], state[b])]  # fmt: skip
    refuse(bool(untied), f"{where}: {_first(untied)} differs from the embedding it is tied to in warmstart",
           "untied checkpoints of this family cannot be imported")  # fmt: skip
    tied = {a for a, _ in fam.tied}
    dropped = sorted(k for k in state if k.startswith(DROPPED) and k not in expected and k not in tied)
    known = expected.keys() | tied | set(dropped)
    unexpected = [k for k in state if k not in known and not BUFFERS.fullmatch(k)]
    refuse(bool(unexpected), f"{where} has {len(unexpected)} weights a {fam.hf_class} does not: "
           f"{_first(unexpected)}", "check model_type and the sizes in config.json")  # fmt: skip
    if fam.position_offset and fam.prefix + POSITIONS in state:
        state = {**state, fam.prefix + POSITIONS: state[fam.prefix + POSITIONS][fam.position_offset :]}
    converted = from_hf_map(state, fam.groups(cfg), fam.prefix, fam.transposed)
    out = {fam.unit + k: v for k, v in converted.items()}
    fresh = []
    for ours, theirs in fam.heads:
        if theirs in state:
            out[ours] = state[theirs].reshape(unit_state[ours].shape)
        else:
            fresh.append(ours)
    return out, fresh, dropped
