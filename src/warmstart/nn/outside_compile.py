"""``outside_compile``: ``torch.compiler.disable`` made when torch.compile first meets the function, not at
import. The decorator itself imports ``torch._dynamo`` (1.7 s), which every command paid at start-up
(`warmstart --help` included) for the two functions that must run outside a compiled graph (the numba
dropout mask, the fused cross-entropy). Eager calls go straight to the function; a call being traced by
torch.compile goes through its disabled version, a graph break, as the decorator gave."""

from __future__ import annotations

import functools

import torch


def outside_compile(fn):
    disabled = []

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if torch.compiler.is_compiling():
            if not disabled:
                disabled.append(torch.compiler.disable(fn))
            return disabled[0](*args, **kwargs)
        return fn(*args, **kwargs)

    return call
