"""Finetuning strategies: which parameters of a pretrained encoder train, how they start, and at what LR.

A training unit is an ``nn.Module`` with an ``encoder`` (a BertModel: ``embeddings``, ``layers``, optional
``final_norm`` and ``pooler``) and head modules as its other children. The head (every parameter not under
``encoder.``) always trains. ``apply_strategy`` changes the unit in place, in this order:

1. ``reinit_top_k``: re-initialise the top k encoder layers, and the pooler, with the model's own init
   (normal(0, initializer_range) weights, zero biases, unit LayerNorms); Zhang et al. 2021 show that the
   top layers of BERT are too specialised to pretraining for small finetuning sets. Works with any strategy.
2. LoRA adapters (strategy ``lora``) on the chosen projections (``nn.lora``).
3. Freezing: ``requires_grad=False`` on every encoder parameter the strategy does not train; the optimizer
   (``train.optim``) only ever sees trainable parameters.

Layer-wise LR decay (``lr_scales``) is not applied in place: pass its result to ``train.optim.adamw``.
"""

from __future__ import annotations

import copy
import difflib
import re
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.nn.init import init_weights
from warmstart.nn.lora import add_lora, merge_lora

LORA_TARGETS = ("qkv", "out", "up", "down")
_LAYER = re.compile(r"^layers\.(\d+)\.")


@dataclass
class StrategyConfig:
    strategy: str = opt(
        "full",
        "what trains: full (everything), frozen (head only: linear probe), top_k (top layers + head), "
        "layernorm (LayerNorm weights and biases + head), bitfit (biases + head), lora (adapters + head)",
    )
    top_k: int = opt(
        2, "top_k strategy: how many of the top encoder layers train (with final norm and pooler)"
    )
    reinit_top_k: int = opt(
        0, "re-initialise the top k encoder layers and the pooler before finetuning (0 = off; any strategy)"
    )
    layer_lr_decay: float = opt(
        1.0,
        "layer-wise LR decay: head and top layer x1, each layer below x this, embeddings x this^L (1 = off)",
    )
    lora_rank: int = opt(8, "lora strategy: rank r of each adapter")
    lora_alpha: float = opt(16.0, "lora strategy: the adapter's output is scaled by alpha / r")
    lora_dropout: float = opt(0.0, "lora strategy: dropout on the adapter's input")
    lora_targets: list[str] = opt(
        ["qkv", "out"],
        "lora strategy: projections that get adapters: qkv (fused q, k, v), out (attention), up, down (FFN)",
    )


# Which encoder parameters train, by strategy: (name under the encoder, context) -> bool.
def _top_k(name: str, ctx: dict) -> bool:
    m = _LAYER.match(name)
    if m:
        return int(m.group(1)) >= ctx["layers"] - ctx["cfg"].top_k
    return not name.startswith("embeddings.")  # final_norm and pooler sit above the layers


STRATEGIES = {
    "full": lambda name, ctx: True,
    "frozen": lambda name, ctx: False,
    "top_k": _top_k,
    "layernorm": lambda name, ctx: name in ctx["norm_params"],
    "bitfit": lambda name, ctx: name.rsplit(".", 1)[-1] == "bias",
    "lora": lambda name, ctx: name.rsplit(".", 1)[-1] in ("lora_a", "lora_b"),
}


QKV_NAMES = ("q", "k", "v", "query", "key", "value", "q_proj", "k_proj", "v_proj")  # other libraries' names


def _unknown(what: str, bad: str, valid) -> WarmstartError:
    close = ["qkv"] if bad in QKV_NAMES else difflib.get_close_matches(bad, list(valid), n=2, cutoff=0.5)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    return WarmstartError(f"unknown {what} '{bad}'", f"{hint}choose one of {', '.join(valid)}")


def check(cfg: StrategyConfig, layers: int, shared: bool = False) -> None:
    """Raise a WarmstartError for a config that cannot apply to an encoder with ``layers`` layers
    (``shared``: one block of weights used by every layer, as in ALBERT)."""
    if cfg.strategy not in STRATEGIES:
        raise _unknown("finetuning strategy", cfg.strategy, STRATEGIES)
    per_layer = cfg.strategy == "top_k" or cfg.reinit_top_k or cfg.layer_lr_decay != 1.0
    if shared and per_layer:
        raise WarmstartError(
            "top_k, reinit_top_k and layer_lr_decay act on separate layers, but this encoder's layers "
            "share one set of weights (ALBERT)",
            "use strategy full, frozen, layernorm, bitfit or lora with this model",
        )
    for key in ("top_k", "reinit_top_k"):
        k = getattr(cfg, key)
        if (key == "reinit_top_k" or cfg.strategy == "top_k") and not 0 <= k <= layers:
            raise WarmstartError(
                f"{key}={k} but the encoder has {layers} layers", f"set {key} between 0 and {layers}"
            )
    if not 0 < cfg.layer_lr_decay <= 1:
        raise WarmstartError(
            f"layer_lr_decay={cfg.layer_lr_decay} is out of range", "use a factor in (0, 1]; 1 turns it off"
        )
    if cfg.strategy != "lora":
        return
    for t in cfg.lora_targets:
        if t not in LORA_TARGETS:
            raise _unknown("LoRA target", t, LORA_TARGETS)
    if not cfg.lora_targets:
        raise WarmstartError("lora_targets is empty", f"name at least one of {', '.join(LORA_TARGETS)}")
    if cfg.lora_rank < 1:
        raise WarmstartError(f"lora_rank={cfg.lora_rank} is below 1", "use a rank of 1 or more (8 is common)")
    if not 0 <= cfg.lora_dropout < 1:
        raise WarmstartError(f"lora_dropout={cfg.lora_dropout} is out of range", "use a value in [0, 1)")


def no_dropout(module: nn.Module) -> int:
    """Set every dropout in ``module`` (nn.Dropout and attention dropout) to 0; returns how many."""
    n = 0
    for m in module.modules():
        if isinstance(m, nn.Dropout):
            m.p, n = 0.0, n + 1
        elif isinstance(getattr(m, "dropout", None), float):
            m.dropout, n = 0.0, n + 1
    return n


def reinit_top(encoder: nn.Module, k: int) -> None:
    """Re-initialise the top ``k`` layers and the pooler (when there is one) with the model's own init."""
    if k <= 0:
        return
    std = encoder.config.initializer_range
    for layer in list(encoder.layers)[-k:]:
        init_weights(layer, std)
    if getattr(encoder, "pooler", None) is not None:
        init_weights(encoder.pooler, std)


def _features_encoder(unit: nn.Module, encoder: nn.Module, cfg: StrategyConfig) -> dict:
    """An encoder whose task part (``TASK_PARAMETERS``: ELMo's layer mix and task biLSTM) always trains:
    ``frozen`` keeps the rest as pretrained (and without dropout), ``full`` trains everything."""
    if cfg.strategy not in ("frozen", "full") or cfg.reinit_top_k or cfg.layer_lr_decay != 1.0:
        raise WarmstartError(
            f"an ELMo run finetunes with strategy frozen (the biLM as features) or full, not {cfg.strategy} "
            "(nor with reinit_top_k or layer_lr_decay)",
            "use --strategy frozen (the default for ELMo) or --strategy full",
        )
    for name, p in unit.named_parameters():
        inner = name.removeprefix("encoder.")
        p.requires_grad_(cfg.strategy == "full" or inner == name or inner.startswith(encoder.TASK_PARAMETERS))
    if cfg.strategy == "frozen":
        no_dropout(encoder.bilm)
    trainable = sum(p.numel() for p in unit.parameters() if p.requires_grad)
    return {
        "strategy": cfg.strategy,
        "trainable": trainable,
        "total": sum(p.numel() for p in unit.parameters()),
    }


def apply_strategy(unit: nn.Module, cfg: StrategyConfig, seed: int = 0) -> dict:
    """Re-init, add LoRA and freeze ``unit`` in place; returns counts for the run log and ``describe``.

    Random draws (re-init, LoRA's A) come from ``seed`` in a forked RNG, so turning an option on or off does
    not shift the random stream of the rest of the run (dropout, data order).
    """
    if not hasattr(unit, "encoder"):
        return _whole_model(unit, cfg)
    encoder = unit.encoder
    if hasattr(encoder, "TASK_PARAMETERS"):  # ELMo's task encoder: a frozen biLM, or all of it
        return _features_encoder(unit, encoder, cfg)
    layers = len(encoder.layers)
    check(cfg, layers, shared=getattr(encoder.config, "share_layers", False))
    report: dict[str, Any] = {"strategy": cfg.strategy}
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        reinit_top(encoder, cfg.reinit_top_k)
        if cfg.strategy == "lora":
            n = add_lora(encoder, cfg.lora_targets, cfg.lora_rank, cfg.lora_alpha, cfg.lora_dropout)
            if n == 0:  # e.g. XLNet, whose attention projections are (d_model, heads, d_head) tensors
                raise WarmstartError(
                    f"no linear layer of this {encoder.config.model_type} model is named by lora_targets "
                    f"({', '.join(cfg.lora_targets)})",
                    "name its feed-forward layers: strategy.lora_targets=[up,down]",
                )
            report.update(lora_modules=n, lora_rank=cfg.lora_rank)
    norm_params = {
        f"{m_name}.{p_name}".lstrip(".")
        for m_name, m in encoder.named_modules()
        if isinstance(m, nn.LayerNorm)
        for p_name, _ in m.named_parameters(recurse=False)
    }
    ctx = {"cfg": cfg, "layers": layers, "norm_params": norm_params}
    trains = STRATEGIES[cfg.strategy]
    for name, p in unit.named_parameters():
        inner = name.removeprefix("encoder.")
        p.requires_grad_(inner == name or trains(inner, ctx))  # inner == name: not under encoder, a head
    if cfg.strategy == "frozen":  # a feature extractor: the frozen encoder runs without dropout
        report["encoder_dropout_off"] = no_dropout(encoder)
    # a pooler the task does not read (cls or mean pooling) gets no gradient: not counted as training (it
    # stays in the optimizer, which skips a parameter without a gradient, so a resumed run is unchanged)
    idle = getattr(unit, "pooling", "pooler") != "pooler"
    report["trainable"] = sum(
        p.numel()
        for n, p in unit.named_parameters()
        if p.requires_grad and not (idle and ".pooler." in f".{n}")
    )
    report["total"] = sum(p.numel() for p in unit.parameters())
    if cfg.strategy == "top_k":
        report["top_k"] = cfg.top_k
    if cfg.reinit_top_k:
        report["reinit_top_k"] = cfg.reinit_top_k
    if cfg.layer_lr_decay != 1.0:
        report["layer_lr_decay"] = cfg.layer_lr_decay
    return report


def _whole_model(unit: nn.Module, cfg: StrategyConfig) -> dict:
    """Units without a BERT-style encoder (text-to-text on T5, BART, GPT-2) train every weight."""
    if cfg.strategy != "full" or cfg.reinit_top_k or cfg.layer_lr_decay != 1.0:
        raise WarmstartError(
            f"strategy {cfg.strategy} (and re-init / layer-wise LR) act on an encoder's layers; text-to-text "
            "finetuning trains the whole model",
            "use strategy full (the default) with text_to_text",
        )
    n = sum(p.numel() for p in unit.parameters())
    return {"strategy": "full", "trainable": n, "total": n}


def lr_scales(unit: nn.Module, decay: float) -> dict[str, float]:
    """Parameter name -> LR factor for layer-wise decay (Clark et al. 2020, ELECTRA; Sun et al. 2019).

    The head, final_norm, pooler and the top layer get 1, layer i of L gets ``decay**(L-1-i)`` and the
    embeddings ``decay**L``. ``decay=1`` gives 1 everywhere.
    """
    layers = len(unit.encoder.layers)
    scales = {}
    for name, _ in unit.named_parameters():
        inner = name.removeprefix("encoder.")
        m = _LAYER.match(inner)
        if inner == name:
            depth = 0  # head
        elif m:
            depth = layers - 1 - int(m.group(1))
        else:
            depth = layers if inner.startswith("embeddings.") else 0
        scales[name] = float(decay**depth)
    return scales


def _layers(k: int) -> str:
    return f"{k} layer" if k == 1 else f"{k} layers"


def describe(report: dict) -> str:
    """One line, e.g. "strategy full: 4,386,306 of 4,386,306 parameters trainable (100.00%)"."""
    share = 100.0 * report["trainable"] / max(report["total"], 1)
    line = f"strategy {report['strategy']}: {report['trainable']:,} of {report['total']:,} parameters "
    line += f"trainable ({share:.2f}%)"
    extras = []
    if "top_k" in report:
        extras.append(f"top {_layers(report['top_k'])} train")
    if "lora_modules" in report:
        extras.append(f"LoRA rank {report['lora_rank']} on {report['lora_modules']} projections")
    if "reinit_top_k" in report:
        extras.append(f"top {_layers(report['reinit_top_k'])} and pooler re-initialised")
    if "layer_lr_decay" in report:
        extras.append(f"layer LR decay {report['layer_lr_decay']:g}")
    return line + "".join(f"; {e}" for e in extras)


def merged_state(unit: torch.nn.Module) -> dict:
    """The unit's weights with LoRA adapters merged into plain layers (the unit itself is untouched)."""
    if not any("lora_" in name for name, _ in unit.named_parameters()):
        return unit.state_dict()
    twin = copy.deepcopy(unit)
    merge_lora(twin)
    return twin.state_dict()
