"""How a task head reads a decoder (GPT-2) or an encoder-decoder (T5, BART): as transformers' task classes do.

- GPT-2 (``*ForSequenceClassification``, ``*ForTokenClassification``, ``*ForQuestionAnswering``): the states
  of its one causal stack; a sequence is read at its last real token (transformers: the last token that is
  not padding).
- T5 and BART: the decoder fed the input shifted right (the decoder start token first, as transformers does
  when no decoder input is given), reading the encoder's output; a sequence is read at the decoder's state of
  the input's last eos token. T5's token classifier reads the encoder alone (T5ForTokenClassification wraps
  a T5EncoderModel). BART has no token classifier, and none of the three a multiple-choice class.

``HEADS`` lists the tasks each family has a transformers class for; the others are refused when the task
binds, before any data is read. A head's dropout is the family's own field (``DROPOUT``), its init the
family's (``head_std``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from warmstart.errors import WarmstartError
from warmstart.nn.pooling import last_real, pool

# family -> task -> (transformers class, prefix of its base model, prefix of the tensors it lacks)
HEADS = {
    "gpt2": {
        "classification": ("GPT2ForSequenceClassification", "transformer.", ""),
        "tagging": ("GPT2ForTokenClassification", "transformer.", ""),
        "extractive_qa": ("GPT2ForQuestionAnswering", "transformer.", ""),
    },
    "t5": {
        "classification": ("T5ForSequenceClassification", "transformer.", ""),
        "tagging": ("T5ForTokenClassification", "transformer.", "transformer.decoder."),
        "extractive_qa": ("T5ForQuestionAnswering", "", ""),
    },
    "bart": {
        "classification": ("BartForSequenceClassification", "model.", ""),
        "extractive_qa": ("BartForQuestionAnswering", "model.", ""),
    },
}
DROPOUT = {"gpt2": "resid_pdrop", "t5": "dropout_rate", "bart": "dropout"}  # the head's dropout field
BASE = {"gpt2": "GPT2", "t5": "T5", "bart": "Bart"}  # the prefix of the family's transformers classes
SUFFIX = {"classification": "ForSequenceClassification", "tagging": "ForTokenClassification",
          "extractive_qa": "ForQuestionAnswering", "multiple_choice": "ForMultipleChoice"}  # fmt: skip


@dataclass(frozen=True)
class TokenIds:
    """The ids a head on a generative model reads with (from the run's config.json, as its export says)."""

    pad: int
    eos: int | None
    start: int | None  # the decoder's first token (encoder-decoders)


def generative(model) -> bool:
    """Whether ``model`` is a decoder or an encoder-decoder (its family writes text)."""
    return bool(getattr(model, "generates", False))


def bind_heads(task: str, tokenizer, config_json: dict, family) -> TokenIds | None:
    """The token ids of a task head on a generating ``family`` (None for encoders); a task the family has
    no transformers class for is refused in one line."""
    if family is None or not family.model.generates:
        return None
    have = HEADS.get(family.name, {})
    if task not in have:
        tasks = ", ".join([*have, "text_to_text"])
        raise WarmstartError(
            f"task {task} has no head on a {family.name} model (transformers has no "
            f"{BASE.get(family.name, family.name)}{SUFFIX.get(task, '')} class)",
            f"use --task {tasks} with this run, or an encoder run (bert) for {task}",
        )
    pad = config_json.get("pad_token_id", tokenizer.pad_id)
    eos = config_json.get("eos_token_id", tokenizer.eos_id)
    return TokenIds(pad if pad is not None else 0, eos, config_json.get("decoder_start_token_id", pad))


def head_dropout(config) -> float:
    """The dropout a head puts before its linear layer: the family's own field."""
    return float(getattr(config, DROPOUT[config.model_type]))


def head_std(config) -> float:
    """The std of a head's initial weights, as the family initialises its own layers."""
    if config.model_type == "t5":
        return config.initializer_factor * config.d_model**-0.5
    return config.init_std if config.model_type == "bart" else config.initializer_range


def shift_right(ids: torch.Tensor, start: int, pad: int) -> torch.Tensor:
    """The decoder input transformers makes of ``ids``: the start token, then ``ids`` less their last."""
    out = torch.full_like(ids, pad)
    out[:, 0] = start
    out[:, 1:] = ids[:, :-1]
    return out


def token_states(model, batch: dict, ids: TokenIds, encoder_only: bool = False) -> torch.Tensor:
    """(B, T, H) states aligned with ``batch["input_ids"]``: a decoder's, or an encoder-decoder's decoder
    fed the shifted input (``encoder_only``: its encoder's)."""
    x, mask = batch["input_ids"], batch.get("attention_mask")
    if model.decoder_only:
        return model(x, mask)
    if encoder_only:
        return model.encode(x, mask)
    return model(x, mask, shift_right(x, ids.start, ids.pad))


def sequence_state(model, hidden: torch.Tensor, batch: dict, pooling: str, ids: TokenIds) -> torch.Tensor:
    """(B, H) one state per row: with ``pooling`` cls, a decoder's last real token, an encoder-decoder's
    state of the last eos (the last real token in a row without one); mean or max over the real tokens."""
    x, mask = batch["input_ids"], batch.get("attention_mask")
    mask = torch.ones_like(x) if mask is None else mask
    if pooling != "cls":
        return pool(hidden, mask, pooling)
    at = last_real(mask)
    if not model.decoder_only and ids.eos is not None:
        eos = x == ids.eos
        last_eos = x.shape[1] - 1 - eos.flip(1).long().argmax(1)
        at = torch.where(eos.any(1), last_eos, at)
    return hidden[torch.arange(x.shape[0], device=x.device), at]
