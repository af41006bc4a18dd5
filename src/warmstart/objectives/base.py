"""The objective protocol: what every pretraining objective declares, so that the pretrain command, the
run card and the hub bridge ask it instead of testing its name.

An objective is a training unit (``nn.Module``) wrapping a model: ``forward(batch) -> (loss, stats)``.
Its class declares:

- ``sections``: the config sections it reads, name -> dataclass; `warmstart pretrain` exposes them as
  ``NAME.*`` keys and passes them to ``data`` and the constructor in this order;
- ``families``: the model families it trains (registry.MODELS keys);
- ``data_kind``: what its batches are made of, ``"windows"`` (packed token windows) or ``"sentence_pairs"``
  (two segments of documents, for the next-sentence and sentence-order tasks);
- ``hf_architecture``: the transformers class of the pretraining model (config.json's architectures);
- ``shape_sections``: the sections that shape the unit's weights (recorded in the run card, read back when
  a run continues or is imported);
- ``data(shards, seq_len, tokenizer, *sections) -> (windows, collate)``: its batches;
- ``check_tokenizer(tokenizer)``: refuse a tokenizer it cannot train with (one clear error);
- ``check_model(model_cfg)``: refuse a model config it cannot train (ELMo without LSTM layers);
- ``decoder_start_id(tokenizer)`` (encoder-decoders) and ``summarize(metrics)`` (e.g. perplexity);
- ``recorded(cfg)``: the sections config.json's run card keeps (default: the shape sections);
- ``text_pairs(seq_len, tokenizer, *sections)``: the objective as (input, output) token pairs, for a corpus
  trained beside text-to-text tasks (``--task multitask``); None where the outputs are not a text (MLM);
- multi-term objectives add ``counts(batch)`` and take ``forward(batch, norms=...)`` (train/step.py).
"""

from __future__ import annotations

import dataclasses

from torch import nn


class Objective(nn.Module):
    sections: dict[str, type] = {}
    families: tuple[str, ...] = ("bert",)
    data_kind: str = "windows"
    hf_architecture: str = ""
    shape_sections: tuple[str, ...] = ()
    decoder_start_id = None  # a staticmethod (tokenizer -> int) on encoder-decoder objectives

    @staticmethod
    def check_tokenizer(tokenizer) -> None:
        """Refuse a tokenizer this objective cannot train with (default: any will do)."""

    @staticmethod
    def check_model(model_cfg) -> None:
        """Refuse a model config this objective cannot train (default: any of its families will do)."""

    @staticmethod
    def summarize(metrics: dict) -> dict:
        return metrics

    @classmethod
    def recorded(cls, cfg) -> dict[str, dict]:
        """What config.json's run card records of the pretraining config ``cfg``: the shape sections."""
        return {s: dataclasses.asdict(getattr(cfg, s)) for s in cls.shape_sections}

    @classmethod
    def data(cls, shards, seq_len: int, tokenizer, *sections):
        raise NotImplementedError

    @classmethod
    def text_pairs(cls, seq_len: int, tokenizer, *sections):
        """(window, make): raw token windows of ``window`` tokens become ``make(ids, generator) -> (inputs,
        outputs)``, 1-D id tensors laid out as text-to-text finetuning lays out a pair (encoder input and
        labels; a decoder's prompt and completion), the input at most ``seq_len`` long. None: the objective
        has no such form."""
        return None
