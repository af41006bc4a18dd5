"""Gradient checkpointing: a stack of blocks keeps only each block's input for the backward pass and runs the
block again there to get what its gradients need, trading one more forward pass for the activations of
every block (attention probabilities, feed-forward widths, LSTM gates) held between the passes.

A module whose forward loops over blocks mixes in ``Checkpointing`` and calls each block through
``self.run_block(block, *args)``; ``gradient_checkpointing_enable()`` (transformers' name) switches it on
for the module and every such module inside it (an objective's or task's unit, ELECTRA's two encoders).
It acts only while training with gradients on: evaluation and generation run the blocks as they are.

``torch.utils.checkpoint`` runs non-reentrant (``use_reentrant=False``): the torch RNG state is restored for
the recomputation, so dropout (warmstart's seeds its masks from torch's generator: dropout.py) draws the
same masks and the gradients equal the plain pass's; blocks may take and return any structure (KV caches,
XLNet's layout).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Checkpointing:
    """Mixin of an ``nn.Module`` that runs a stack of blocks (see the module docstring)."""

    gradient_checkpointing = False

    def gradient_checkpointing_enable(self) -> None:
        set_checkpointing(self, True)

    def gradient_checkpointing_disable(self) -> None:
        set_checkpointing(self, False)

    def run_block(self, block, *args, **kwargs):
        """``block(*args, **kwargs)``, recomputed in the backward pass when checkpointing is on, the module
        is training and gradients are being recorded."""
        if self.gradient_checkpointing and self.training and torch.is_grad_enabled():
            return checkpoint(block, *args, use_reentrant=False, **kwargs)
        return block(*args, **kwargs)


def set_checkpointing(module: nn.Module, on: bool) -> int:
    """Switch gradient checkpointing on or off in every block stack of ``module`` (itself included); the
    number of stacks found."""
    stacks = [m for m in module.modules() if isinstance(m, Checkpointing)]
    for stack in stacks:
        stack.gradient_checkpointing = on
    return len(stacks)
