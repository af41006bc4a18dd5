"""Hidden states as features: choose layers (``--layer``) and pool them (``cls``, ``mean`` or ``max``).

Layer spec: ``last``, ``second_to_last``, ``sum_last4``, ``concat_last4``, ``average`` (of all), or an index
into [embeddings, layer 1, ..., layer L] (0 = the embedding output, -1 = the last layer)."""

from __future__ import annotations

import torch

from warmstart.errors import WarmstartError

NAMED_LAYERS = ("last", "second_to_last", "sum_last4", "concat_last4", "average")


POOLING = ("cls", "mean", "max")


def check_layer(spec: str, num_layers: int) -> None:
    if spec in NAMED_LAYERS:
        if spec.endswith("last4") and num_layers < 4:
            raise WarmstartError(
                f"--layer {spec} needs 4 layers, the model has {num_layers}", "pick an index"
            )
        return
    try:
        index = int(spec)
    except ValueError:
        raise WarmstartError(
            f"unknown layer '{spec}'", f"use one of {', '.join(NAMED_LAYERS)} or an index 0..{num_layers}"
        ) from None
    if not -(num_layers + 1) <= index <= num_layers:
        raise WarmstartError(
            f"layer {index} does not exist (0 = embeddings, 1..{num_layers} = blocks)",
            f"use an index from {-(num_layers + 1)} to {num_layers}",
        )


def select(states: list[torch.Tensor], spec: str) -> torch.Tensor:
    """One (B, T, D) tensor from the list [embeddings, layer 1, ..., layer L] by the layer spec."""
    if spec == "last":
        return states[-1]
    if spec == "second_to_last":
        return states[-2]
    if spec == "sum_last4":
        return torch.stack(states[-4:]).sum(0)
    if spec == "concat_last4":
        return torch.cat(states[-4:], dim=-1)
    if spec == "average":  # every layer, the embeddings' (ELMo: the token layer) included, weighted alike
        return torch.stack(states).mean(0)
    return states[int(spec)]


def cls_at_end(model) -> bool:
    """Whether a model's class token closes the text (XLNet declares ``cls_at_end``) instead of opening it."""
    return bool(getattr(model, "cls_at_end", False))


def last_real(attention_mask: torch.Tensor) -> torch.Tensor:
    """(B,) the index of each row's last real token (padding on either side)."""
    return attention_mask.shape[1] - 1 - attention_mask.flip(1).long().argmax(1)


def pool(
    hidden: torch.Tensor, attention_mask: torch.Tensor, how: str, cls_at_end: bool = False
) -> torch.Tensor:
    """``cls``: the class token's state, first (BERT) or, ``cls_at_end`` (XLNet), the last real token's
    (padding on either side); ``mean`` and ``max`` over the real tokens."""
    if how == "cls" and cls_at_end:
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last_real(attention_mask)]
    if how == "cls":
        return hidden[:, 0]
    if how == "mean":
        m = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1)
    if how == "max":  # over the real tokens (padding set below every value, as sentence-transformers does)
        return hidden.masked_fill(attention_mask.unsqueeze(-1) == 0, -1e9).amax(1)
    raise WarmstartError(f"unknown pooling '{how}'", f"use one of {', '.join(POOLING)}")
