"""The families `warmstart import` / `warmstart export` convert, and how each maps to transformers: config
fields (the same names; options without an equivalent are refused), weight names (each model file's key map
plus the heads outside the base model) and the tensors transformers saves twice or keeps as buffers.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch

from warmstart.errors import WarmstartError
from warmstart.models import bart, bert, gpt2, t5
from warmstart.models.keymap import from_hf_map, to_hf_map
from warmstart.nn.mlp import ACTIVATIONS

SUPPORTED = ("bert", "gpt2", "t5", "bart")
TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
# heads of other transformers classes: never part of the base model, dropped on import with a warning
DROPPED = ("cls.seq_relationship.", "classifier.", "qa_outputs.", "score.", "classification_head.")
TOP_LEVEL = ("cls.", "lm_head.", "final_logits_bias", *DROPPED)  # names outside the base model's prefix
BUFFERS = re.compile(  # saved by some transformers versions, recomputed by every model
    r"(bert\.)?embeddings\.position_ids|transformer\.h\.\d+\.attn\.(masked_)?bias|model\.(en|de)coder\.version"
    r"|decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight"
)
ACT_ALIASES = {"swish": "silu", "gelu_pytorch_tanh": "gelu_new"}
BERT_HF_FIELDS = {
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "max_position_embeddings", "type_vocab_size", "hidden_act", "hidden_dropout_prob",
    "attention_probs_dropout_prob", "layer_norm_eps", "initializer_range",
}  # fmt: skip


@dataclass(frozen=True)
class Family:
    objective: str  # the warmstart pretraining unit an import builds
    prefix: str  # the base model's prefix inside the transformers LM class
    unit: str  # the model's prefix inside the warmstart unit
    hf_class: str
    groups: Callable  # model config -> [(keys, fused, layers)], see warmstart.models.keymap
    act: str | None = None  # the activation field
    heads: tuple = ()  # (unit name, full HF name) outside the base model
    tied: tuple = ()  # (HF duplicate, the HF tensor it equals): dropped on import
    transposed: tuple = ()
    only_ours: frozenset = frozenset()  # config fields transformers does not have


def _bert_groups(c):
    keys = bert.HF_KEYS + (bert.HF_POOLER_KEYS if c.pooler else [])
    return [(keys, bert.HF_FUSED, c.num_hidden_layers)]


_MLM_HEAD = tuple(
    (f"head.{ours}.{p}", f"cls.predictions.transform.{theirs}.{p}")
    for ours, theirs in (("dense", "dense"), ("norm", "LayerNorm"))
    for p in ("weight", "bias")
) + (("head.bias", "cls.predictions.bias"),)
FAMILIES = {
    "bert": Family(
        "mlm", "bert.", "encoder.", "BertForMaskedLM", _bert_groups, "hidden_act",
        heads=_MLM_HEAD,
        tied=(("cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"),
              ("cls.predictions.decoder.bias", "cls.predictions.bias")),
        only_ours=frozenset(f.name for f in dataclasses.fields(bert.BertConfig)) - BERT_HF_FIELDS,
    ),
    "gpt2": Family(
        "clm", "transformer.", "model.", "GPT2LMHeadModel", lambda c: [(gpt2.HF_KEYS, [], c.n_layer)],
        "activation_function", tied=(("lm_head.weight", "transformer.wte.weight"),),
        transposed=gpt2.HF_TRANSPOSED,
    ),
    "t5": Family(
        "span_corruption", "", "model.", "T5ForConditionalGeneration", t5.hf_key_map,
        tied=tuple((f"{name}.weight", "shared.weight")
                   for name in ("encoder.embed_tokens", "decoder.embed_tokens", "lm_head")),
        only_ours=frozenset({"max_length"}),
    ),
    "bart": Family(
        "denoising", "model.", "model.", "BartForConditionalGeneration", bart.hf_key_map,
        "activation_function", heads=(("model.final_logits_bias", "final_logits_bias"),),
        tied=(("model.encoder.embed_tokens.weight", "model.shared.weight"),
              ("model.decoder.embed_tokens.weight", "model.shared.weight"),
              ("lm_head.weight", "model.shared.weight")),
        only_ours=frozenset({"layer_norm_eps"}),
    ),
}  # fmt: skip


def family(arch, where) -> Family:
    if arch not in FAMILIES:
        raise WarmstartError(
            f"{where} holds a model_type '{arch}' model, which warmstart cannot convert",
            f"supported model types: {', '.join(SUPPORTED)}",
        )
    return FAMILIES[arch]


def refuse(bad: bool, what: str, fix: str = "warmstart's model has no such option") -> None:
    """Raise WarmstartError(what, fix) when ``bad``."""
    if bad:
        raise WarmstartError(what, fix)


# ---------------------------------------------------------------------------------------------- configs
def _activation(name: str) -> str:
    name = ACT_ALIASES.get(name, name)
    refuse(name not in ACTIVATIONS, f"activation '{name}' has no warmstart equivalent",
           f"warmstart's models run {', '.join(sorted(ACTIVATIONS))}")  # fmt: skip
    return name


def _odd(hf: dict, flags, what: str) -> None:
    """Refuse a config that sets any of ``flags`` (name -> the value warmstart's model needs)."""
    odd = [f"{k}={hf[k]}" for k, want in flags.items() if k in hf and hf[k] is not None and hf[k] != want]
    refuse(bool(odd), f"{what} with {', '.join(odd)} cannot be imported")


def _bert_in(hf: dict, kw: dict, state: dict) -> None:
    flags = {"position_embedding_type": "absolute", "is_decoder": False, "add_cross_attention": False}
    _odd(hf, flags, "a BERT")
    kw["pooler"] = "bert.pooler.dense.weight" in state


def _gpt2_in(hf: dict, kw: dict, state: dict) -> None:
    flags = {
        "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False,
        "add_cross_attention": False,
    }
    _odd(hf, flags, "a GPT-2")


def _t5_in(hf: dict, kw: dict, state: dict) -> None:
    ff = hf.get("feed_forward_proj", "relu")
    act = "gelu_new" if ff == "gated-gelu" else ACT_ALIASES.get(ff.split("-")[-1], ff.split("-")[-1])
    name = {v: k for k, v in t5.FEED_FORWARD.items()}.get((act, ff.startswith("gated-")))
    refuse(name is None, f"T5 feed_forward_proj '{ff}' has no warmstart equivalent",
           "warmstart's T5 runs relu, gelu_new, gated-gelu or gated-silu")  # fmt: skip
    kw["feed_forward_proj"] = name
    # transformers 5 writes scale_decoder_outputs (v1.0: scaled and tied); 4.x only tie_word_embeddings
    kw["tie_word_embeddings"] = bool(hf.get("scale_decoder_outputs", hf.get("tie_word_embeddings", True)))
    if not kw["tie_word_embeddings"] and "shared.weight" in state:
        state.setdefault("lm_head.weight", state["shared.weight"])  # an unscaled head tied to the embedding


def _bart_in(hf: dict, kw: dict, state: dict) -> None:
    flags = {"normalize_before": False, "add_final_layer_norm": False, "static_position_embeddings": False,
             "add_bias_logits": False, "normalize_embedding": True, "tie_word_embeddings": True}  # fmt: skip
    _odd(hf, flags, "a BART")


def _bert_out(cfg, out: dict) -> None:
    odd = [k for k in ("pre_ln", "share_layers", "relative_attention") if getattr(cfg, k)]
    odd += [] if cfg.embedding_size in (None, cfg.hidden_size) else ["embedding_size"]
    odd += [] if cfg.position_biased_input else ["position_biased_input=false"]
    refuse(bool(odd), f"transformers' BERT has no equivalent of model.{', model.'.join(odd)}",
           "export a plain BERT (post-LN, absolute positions, unshared layers)")  # fmt: skip


def _t5_out(cfg, out: dict) -> None:
    act, gated = t5.FEED_FORWARD[cfg.feed_forward_proj]
    out["feed_forward_proj"] = ("gated-gelu" if act == "gelu_new" else f"gated-{act}") if gated else act
    out.update(tie_word_embeddings=cfg.tie_word_embeddings, scale_decoder_outputs=cfg.tie_word_embeddings)
    out["is_encoder_decoder"] = True


def _bart_out(cfg, out: dict) -> None:
    refuse(cfg.layer_norm_eps != 1e-5, f"transformers' BART has LayerNorm eps 1e-5, not {cfg.layer_norm_eps}")
    out.update(is_encoder_decoder=True, forced_eos_token_id=None, forced_bos_token_id=None)


IMPORT_FIX = {"bert": _bert_in, "gpt2": _gpt2_in, "t5": _t5_in, "bart": _bart_in}
EXPORT_FIX = {"bert": _bert_out, "gpt2": lambda cfg, out: None, "t5": _t5_out, "bart": _bart_out}


def config_from_hf(arch: str, hf: dict, state: dict):
    """The warmstart model config of an HF config.json. ``state`` (canonical HF names) says what the config
    does not: whether BERT has a pooler, T5 v1.1's head (it may be added to ``state``)."""
    from warmstart.registry import MODELS

    config_cls, _ = MODELS[arch]
    fam = FAMILIES[arch]
    names = {f.name for f in dataclasses.fields(config_cls)} - fam.only_ours
    kw = {k: hf[k] for k in names if k in hf}
    if fam.act in kw:
        kw[fam.act] = _activation(kw[fam.act])
    IMPORT_FIX[arch](hf, kw, state)
    return config_cls(**kw)


def config_to_hf(arch: str, cfg, run_config: dict, hf_class: str) -> dict:
    """transformers' config.json of a warmstart model config (token ids from the run's config.json)."""
    out = {"model_type": arch, "architectures": [hf_class], "tie_word_embeddings": True}
    out.update({k: v for k, v in dataclasses.asdict(cfg).items() if k not in FAMILIES[arch].only_ours})
    EXPORT_FIX[arch](cfg, out)
    out.update({k: run_config[k] for k in TOKEN_IDS if k in run_config})
    return out


# ---------------------------------------------------------------------------------------------- weights
def to_hf_state(fam: Family, cfg, unit_state: dict) -> dict:
    """A warmstart unit's tensors under transformers' names (fused projections split, Conv1D transposed)."""
    model = {k[len(fam.unit) :]: v for k, v in unit_state.items() if k.startswith(fam.unit)}
    out = to_hf_map(model, fam.groups(cfg), fam.prefix, fam.transposed)
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
    dropped = sorted(k for k in state if k.startswith(DROPPED))
    known = expected.keys() | {a for a, _ in fam.tied} | set(dropped)
    unexpected = [k for k in state if k not in known and not BUFFERS.fullmatch(k)]
    refuse(bool(unexpected), f"{where} has {len(unexpected)} weights a {fam.hf_class} does not: "
           f"{_first(unexpected)}", "check model_type and the sizes in config.json")  # fmt: skip
    converted = from_hf_map(state, fam.groups(cfg), fam.prefix, fam.transposed)
    out = {fam.unit + k: v for k, v in converted.items()}
    fresh = []
    for ours, theirs in fam.heads:
        if theirs in state:
            out[ours] = state[theirs].reshape(unit_state[ours].shape)
        else:
            fresh.append(ours)
    return out, fresh, dropped
