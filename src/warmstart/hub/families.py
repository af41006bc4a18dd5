"""The families `warmstart import` / `warmstart export` convert, and how each maps to transformers: config
fields (the same names; options without an equivalent are refused), weight names (each model file's key map
plus the heads outside the base model) and the tensors transformers saves twice or keeps as buffers.

roberta, albert and electra are configs of warmstart's one encoder (arch bert): RoBERTa is ``type_vocab_size
1`` whose position table transformers offsets by ``pad_token_id + 1`` (2) rows (import drops them, export puts
zero rows in front); ALBERT is ``embedding_size`` + ``share_layers`` (num_hidden_groups 1; unshared: one group
per layer); ELECTRA is the discriminator (``embedding_size``, no pooler) with its replaced-token head.
``VARIANTS`` are a family's other pretraining classes: BertForPreTraining (mlm+nsp), AlbertForPreTraining
(mlm+sop) and ELECTRA's generator, ElectraForMaskedLM (mlm; beside a discriminator: electra_generator.py).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch

from warmstart.errors import WarmstartError
from warmstart.hub.config_checks import located
from warmstart.models import bart, bert, gpt2, t5, xlnet
from warmstart.nn.mlp import ACTIVATIONS
from warmstart.numbers import check_numbers
from warmstart.registry import MODELS

SUPPORTED = ("bert", "roberta", "albert", "electra", "gpt2", "t5", "bart", "xlnet")
TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
# heads of other transformers classes: never part of the base model, dropped on import with a warning
DROPPED = ("cls.seq_relationship.", "classifier.", "qa_outputs.", "score.", "classification_head.",
           "sop_classifier.", "generator_predictions.", "generator_lm_head.",
           "sequence_summary.")  # fmt: skip
TOP_LEVEL = ("cls.", "lm_head.", "final_logits_bias", "predictions.", "discriminator_predictions.", *DROPPED)
BUFFERS = re.compile(  # saved by some transformers versions, recomputed by every model
    r"(\w+\.)?embeddings\.(position_ids|token_type_ids)|transformer\.h\.\d+\.attn\.(masked_)?bias"
    r"|model\.(en|de)coder\.version|decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight"
)
ACT_ALIASES = {"swish": "silu", "gelu_pytorch_tanh": "gelu_new"}
BERT_HF_FIELDS = {
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "max_position_embeddings", "type_vocab_size", "hidden_act", "hidden_dropout_prob",
    "attention_probs_dropout_prob", "layer_norm_eps", "initializer_range",
}  # fmt: skip
POSITIONS = "embeddings.position_embeddings.weight"


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
    arch: str = "bert"  # the warmstart model
    position_offset: int = 0  # rows in front of transformers' position table (RoBERTa: pad_token_id + 1)
    fresh: tuple = ()  # unit names no transformers checkpoint of this class holds (ELECTRA's generator)
    identity: str = ""  # a projection transformers always has, written as the identity when ours has none


def _bert_groups(c):
    keys = bert.HF_KEYS + (bert.HF_POOLER_KEYS if c.pooler else [])
    return [(keys, bert.HF_FUSED, c.num_hidden_layers)]


def _pairs(ours: str, theirs: str) -> list:
    return [(f"{ours}.{p}", f"{theirs}.{p}") for p in ("weight", "bias")]


def _factorized(c) -> bool:
    return c.embedding_size not in (None, c.hidden_size)


ALBERT_LAYER = {"attention.self.": "attention.", "attention.output.dense": "attention.dense",
                "attention.output.LayerNorm": "attention.LayerNorm", "intermediate.dense": "ffn",
                "output.dense": "ffn_output", "output.LayerNorm": "full_layer_layer_norm"}  # fmt: skip


def _albert(theirs: str) -> str:
    """BERT's name of a block weight -> ALBERT's (block i = layer group i, of one layer)."""
    rest = theirs.removeprefix("encoder.layer.{i}.")
    if rest == theirs:
        return theirs
    old = next(k for k in ALBERT_LAYER if rest.startswith(k))
    return "encoder.albert_layer_groups.{i}.albert_layers.0." + ALBERT_LAYER[old] + rest[len(old) :]


def _albert_groups(c):
    keys = [(o, _albert(t)) for o, t in bert.HF_KEYS]
    keys += _pairs("embed_project", "encoder.embedding_hidden_mapping_in") if _factorized(c) else []
    keys += _pairs("pooler", "pooler") if c.pooler else []
    fused = [(o, [_albert(p) for p in parts]) for o, parts in bert.HF_FUSED]
    return [(keys, fused, 1 if c.share_layers else c.num_hidden_layers)]


def _electra_groups(c):
    keys = bert.HF_KEYS + (_pairs("embed_project", "embeddings_project") if _factorized(c) else [])
    return [(keys, bert.HF_FUSED, c.num_hidden_layers)]


def _mlm_head(dense: str, norm: str, bias: str) -> tuple:
    return (*_pairs("head.dense", dense), *_pairs("head.norm", norm), ("head.bias", bias))


def _tied_head(decoder: str, bias: str, prefix: str) -> tuple:
    return (f"{decoder}.weight", f"{prefix}embeddings.word_embeddings.weight"), (f"{decoder}.bias", bias)


ONLY_BERT = frozenset(f.name for f in dataclasses.fields(bert.BertConfig)) - BERT_HF_FIELDS
_MLM_HEAD = _mlm_head("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                      "cls.predictions.bias")  # fmt: skip
_DISCRIMINATOR = (
    *_pairs("discriminator_head.dense", "discriminator_predictions.dense"),
    *_pairs("discriminator_head.prediction", "discriminator_predictions.dense_prediction"),
)
FAMILIES = {
    "bert": Family(
        "mlm", "bert.", "encoder.", "BertForMaskedLM", _bert_groups, "hidden_act",
        heads=_MLM_HEAD, tied=_tied_head("cls.predictions.decoder", "cls.predictions.bias", "bert."),
        only_ours=ONLY_BERT,
    ),
    "roberta": Family(
        "mlm", "roberta.", "encoder.", "RobertaForMaskedLM", _bert_groups, "hidden_act",
        heads=_mlm_head("lm_head.dense", "lm_head.layer_norm", "lm_head.bias"),
        tied=_tied_head("lm_head.decoder", "lm_head.bias", "roberta."), only_ours=ONLY_BERT,
        position_offset=2,
    ),
    "albert": Family(
        "mlm", "albert.", "encoder.", "AlbertForMaskedLM", _albert_groups, "hidden_act",
        heads=_mlm_head("predictions.dense", "predictions.LayerNorm", "predictions.bias"),
        tied=_tied_head("predictions.decoder", "predictions.bias", "albert."),
        only_ours=ONLY_BERT - {"embedding_size"}, identity="encoder.embedding_hidden_mapping_in",
    ),
    "electra": Family(
        "electra", "electra.", "encoder.", "ElectraForPreTraining", _electra_groups, "hidden_act",
        heads=_DISCRIMINATOR, only_ours=ONLY_BERT - {"embedding_size"},
        fresh=("generator.", "generator_head."),
    ),
    "gpt2": Family(
        "clm", "transformer.", "model.", "GPT2LMHeadModel", lambda c: [(gpt2.HF_KEYS, [], c.n_layer)],
        "activation_function", tied=(("lm_head.weight", "transformer.wte.weight"),),
        transposed=gpt2.HF_TRANSPOSED, arch="gpt2",
    ),
    "t5": Family(
        "span_corruption", "", "model.", "T5ForConditionalGeneration", t5.hf_key_map,
        tied=tuple((f"{name}.weight", "shared.weight")
                   for name in ("encoder.embed_tokens", "decoder.embed_tokens", "lm_head")),
        only_ours=frozenset({"max_length"}), arch="t5",
    ),
    "bart": Family(
        "denoising", "model.", "model.", "BartForConditionalGeneration", bart.hf_key_map,
        "activation_function", heads=(("model.final_logits_bias", "final_logits_bias"),),
        tied=(("model.encoder.embed_tokens.weight", "model.shared.weight"),
              ("model.decoder.embed_tokens.weight", "model.shared.weight"),
              ("lm_head.weight", "model.shared.weight")),
        only_ours=frozenset({"layer_norm_eps"}), arch="bart",
    ),
    "xlnet": Family(
        "plm", "transformer.", "encoder.", "XLNetLMHeadModel", lambda c: [(xlnet.HF_KEYS, [], c.n_layer)],
        "ff_activation", heads=(("encoder.lm_bias", "lm_loss.bias"),),
        tied=(("lm_loss.weight", "transformer.word_embedding.weight"),),
        only_ours=frozenset({"max_length", "pooler"}), arch="xlnet",
    ),
}  # fmt: skip


# the other pretraining classes of a family, by the warmstart objective they hold: import picks one by the
# class config.json names (or, naming none, by its heads), export by the run's objective
_SENTENCE = {"bert": "cls.seq_relationship", "albert": "sop_classifier.classifier"}
VARIANTS = {
    ("bert", "mlm+nsp"): dataclasses.replace(
        FAMILIES["bert"], objective="mlm+nsp", hf_class="BertForPreTraining",
        heads=(*_MLM_HEAD, *_pairs("sentence_head", _SENTENCE["bert"])),
    ),
    ("albert", "mlm+sop"): dataclasses.replace(
        FAMILIES["albert"], objective="mlm+sop", hf_class="AlbertForPreTraining",
        heads=(*FAMILIES["albert"].heads, *_pairs("sentence_head", _SENTENCE["albert"])),
    ),
    ("electra", "mlm"): dataclasses.replace(  # the generator: a masked LM with ELECTRA's embeddings
        FAMILIES["electra"], objective="mlm", hf_class="ElectraForMaskedLM", fresh=(),
        heads=_mlm_head("generator_predictions.dense", "generator_predictions.LayerNorm",
                        "generator_lm_head.bias"),
        tied=(("generator_lm_head.weight", "electra.embeddings.word_embeddings.weight"),),
    ),
}  # fmt: skip


def pretraining_class(name: str, objective: str | None = None, hf: dict | None = None, state=()) -> Family:
    """The family of model type ``name`` for a warmstart ``objective`` (export), or for the transformers
    class of config.json ``hf`` and its tensors ``state`` (import)."""
    names = (hf or {}).get("architectures") or []
    for (n, obj), fam in VARIANTS.items():
        heads = all(theirs in state for _, theirs in fam.heads)
        if n == name and (obj == objective or fam.hf_class in names or hf and not names and heads):
            return fam
    return FAMILIES[name]


def family(arch, where) -> Family:
    arch = arch if isinstance(arch, str) else repr(arch)  # a list or a number in config.json: said as such
    if arch in MODELS and arch not in FAMILIES:  # a warmstart family transformers lacks (ELMo)
        raise WarmstartError(
            f"{where} holds a warmstart {arch} model, and transformers has no {arch} class to export to",
            f"use its features instead: `warmstart embed {where} --data TEXTS --out FEATURES.npy`",
        )
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


ENCODER_FLAGS = {"position_embedding_type": "absolute", "is_decoder": False, "add_cross_attention": False}


def _bert_in(hf: dict, kw: dict, state: dict) -> None:
    _odd(hf, ENCODER_FLAGS, "a BERT")
    kw["pooler"] = "bert.pooler.dense.weight" in state


def _roberta_in(hf: dict, kw: dict, state: dict) -> None:
    _odd(hf, {**ENCODER_FLAGS, "hidden_act": "gelu"}, "a RoBERTa")  # its LM head runs gelu in any case
    kw["max_position_embeddings"] = hf.get("max_position_embeddings", 514) - (hf["pad_token_id"] + 1)
    kw["pooler"] = "roberta.pooler.dense.weight" in state


def _albert_in(hf: dict, kw: dict, state: dict) -> None:
    _odd(hf, {"position_embedding_type": "absolute", "inner_group_num": 1}, "an ALBERT")
    layers, groups = hf.get("num_hidden_layers", 12), hf.get("num_hidden_groups", 1)
    refuse(groups not in (1, layers), f"an ALBERT with num_hidden_groups={groups} of {layers} layers "
           "cannot be imported", "warmstart shares one block by all layers (1 group) or none")  # fmt: skip
    kw.update(share_layers=groups == 1 and layers > 1, pooler="albert.pooler.weight" in state)
    if kw.get("embedding_size", 128) == kw.get("hidden_size", 4096):
        w, b = (state.get(f"albert.encoder.embedding_hidden_mapping_in.{p}") for p in ("weight", "bias"))
        same = w is not None and b is not None and torch.equal(w, torch.eye(len(w))) and not b.any()
        refuse(not same, "an ALBERT whose embedding_size equals hidden_size still projects its "
               "embeddings, which warmstart's encoder does not")  # fmt: skip
        kw["embedding_size"] = None


def _electra_in(hf: dict, kw: dict, state: dict) -> None:
    _odd(hf, ENCODER_FLAGS, "an ELECTRA")
    if "generator_predictions.dense.weight" in state:  # transformers' generator head runs gelu in any case
        _odd(hf, {"hidden_act": "gelu"}, "an ELECTRA generator")
    kw["pooler"] = False  # ELECTRA has none
    if kw.get("embedding_size") == kw.get("hidden_size"):
        kw["embedding_size"] = None


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


def _xlnet_in(hf: dict, kw: dict, state: dict) -> None:
    refuse(hf.get("attn_type", "bi") not in ("bi", "uni"), f"an XLNet with attn_type={hf.get('attn_type')} "
           "cannot be imported", "warmstart's XLNet runs attn_type bi or uni")  # fmt: skip


def _encoder_out(cfg, name: str, allow=()) -> None:
    odd = [k for k in ("pre_ln", "share_layers", "relative_attention") if getattr(cfg, k) and k not in allow]
    odd += ["embedding_size"] if _factorized(cfg) and "embedding_size" not in allow else []
    odd += [] if cfg.position_biased_input else ["position_biased_input=false"]
    refuse(bool(odd), f"transformers' {name} has no equivalent of model.{', model.'.join(odd)}",
           "export a plain BERT (post-LN, absolute positions, unshared layers)")  # fmt: skip


def _roberta_out(cfg, out: dict) -> None:
    _encoder_out(cfg, "RoBERTa")
    refuse(cfg.hidden_act != "gelu", f"transformers' RoBERTa LM head runs gelu, the model {cfg.hidden_act}")
    out["max_position_embeddings"] = cfg.max_position_embeddings + out["pad_token_id"] + 1


def _albert_out(cfg, out: dict) -> None:
    _encoder_out(cfg, "ALBERT", ("share_layers", "embedding_size"))
    out.update(embedding_size=cfg.embedding_size or cfg.hidden_size, inner_group_num=1)
    out["num_hidden_groups"] = 1 if cfg.share_layers else cfg.num_hidden_layers


def _electra_out(cfg, out: dict) -> None:
    _encoder_out(cfg, "ELECTRA", ("embedding_size",))
    refuse(out["architectures"] == ["ElectraForMaskedLM"] and cfg.hidden_act != "gelu",
           f"transformers' ELECTRA generator head runs gelu, the model {cfg.hidden_act}")  # fmt: skip
    out["embedding_size"] = cfg.embedding_size or cfg.hidden_size


def _t5_out(cfg, out: dict) -> None:
    act, gated = t5.FEED_FORWARD[cfg.feed_forward_proj]
    out["feed_forward_proj"] = ("gated-gelu" if act == "gelu_new" else f"gated-{act}") if gated else act
    out.update(tie_word_embeddings=cfg.tie_word_embeddings, scale_decoder_outputs=cfg.tie_word_embeddings)
    out["is_encoder_decoder"] = True


def _bart_out(cfg, out: dict) -> None:
    refuse(cfg.layer_norm_eps != 1e-5, f"transformers' BART has LayerNorm eps 1e-5, not {cfg.layer_norm_eps}")
    out.update(is_encoder_decoder=True, forced_eos_token_id=None, forced_bos_token_id=None)


IMPORT_FIX = {"bert": _bert_in, "roberta": _roberta_in, "albert": _albert_in, "electra": _electra_in,
              "gpt2": _gpt2_in, "t5": _t5_in, "bart": _bart_in, "xlnet": _xlnet_in}  # fmt: skip
EXPORT_FIX = {"bert": lambda cfg, out: _encoder_out(cfg, "BERT"), "roberta": _roberta_out,
              "albert": _albert_out, "electra": _electra_out, "gpt2": lambda cfg, out: None,
              "t5": _t5_out, "bart": _bart_out, "xlnet": lambda cfg, out: None}  # fmt: skip


def given_fields(arch: str, hf: dict) -> tuple[type, dict]:
    """(warmstart config class, the fields of it that config.json ``hf`` sets)."""
    fam = FAMILIES[arch]
    config_cls, _ = MODELS[fam.arch]
    names = {f.name for f in dataclasses.fields(config_cls)} - fam.only_ours
    return config_cls, {k: hf[k] for k in names if k in hf}


def config_from_hf(arch: str, hf: dict, state: dict, where: str = "config.json"):
    """The warmstart model config of an HF config.json (``where``). ``state`` (canonical HF names) says what
    the config does not: whether BERT has a pooler, T5 v1.1's head (it may be added to ``state``)."""

    fam = FAMILIES[arch]
    config_cls, kw = given_fields(arch, hf)
    if fam.act in kw:
        kw[fam.act] = _activation(kw[fam.act])
    IMPORT_FIX[arch](hf, kw, state)
    with located(where):
        cfg = config_cls(**kw)
        check_numbers(cfg)  # what the fixes computed too (RoBERTa's positions less its offset)
    return cfg


def config_to_hf(arch: str, cfg, run_config: dict, hf_class: str) -> dict:
    """transformers' config.json of a warmstart model config (token ids from the run's config.json)."""
    out = {"model_type": arch, "architectures": [hf_class], "tie_word_embeddings": True}
    out.update({k: v for k, v in dataclasses.asdict(cfg).items() if k not in FAMILIES[arch].only_ours})
    out.update({k: run_config[k] for k in TOKEN_IDS if k in run_config})
    EXPORT_FIX[arch](cfg, out)
    return out
