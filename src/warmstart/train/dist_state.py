"""State dicts across processes: the whole unit's weights and optimizer state from DDP or FSDP (saved by the
first process), and loaded back into either."""

from __future__ import annotations

import torch
from torch import nn

from warmstart.train.distributed import is_main, sharded


def full_state(unit: nn.Module) -> dict:
    """The unit's state dict as full tensors on rank 0 ({} on the others; FSDP gathers the shards)."""
    if sharded(unit):
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(unit, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return unit.state_dict() if is_main() else {}


def load_state(unit: nn.Module, state: dict, strict: bool = True):
    """Load full tensors (every rank read the file): FSDP keeps each rank's shard."""
    if sharded(unit):
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        options = StateDictOptions(full_state_dict=True, strict=strict)
        return set_model_state_dict(unit, state, options=options)
    return unit.load_state_dict(state, strict=strict)


def _names(unit: nn.Module, opt: torch.optim.Optimizer) -> list[str]:
    """The parameter name of every optimizer index (indices run over the groups in order)."""
    names = {id(p): n for n, p in unit.named_parameters()}
    return [names[id(p)] for g in opt.param_groups for p in g["params"]]


def optimizer_state(unit: nn.Module | None, opt: torch.optim.Optimizer) -> dict:
    """``opt.state_dict()``, indexed by position as a single process has it (FSDP: gathered, rank 0)."""
    if unit is None or not sharded(unit):
        return opt.state_dict() if is_main() else {}
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

    full = get_optimizer_state_dict(
        unit, opt, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
    )
    if not is_main():
        return {}
    index = {n: i for i, n in enumerate(_names(unit, opt))}
    groups = [{**g, "params": [index[n] for n in g["params"]]} for g in full["param_groups"]]
    return {"state": {index[n]: s for n, s in full["state"].items()}, "param_groups": groups}


def load_optimizer_state(unit: nn.Module | None, opt: torch.optim.Optimizer, sd: dict) -> None:
    if unit is None or not sharded(unit):
        opt.load_state_dict(sd)
        return
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    names = _names(unit, opt)
    full = {
        "state": {names[int(i)]: s for i, s in sd["state"].items()},
        "param_groups": [{**g, "params": [names[i] for i in g["params"]]} for g in sd["param_groups"]],
    }
    set_optimizer_state_dict(unit, opt, full, options=StateDictOptions(full_state_dict=True))
