"""A sentence encoder as an ONNX graph: token ids in, sentence vectors out, with the pooling and unit-length
normalization the model declares (all-MiniLM-L6-v2: mean, then unit length; else the [CLS] state as is)
inside the graph; batch and length dynamic. Loaded back, it answers ``warmstart.load(DIR).encode`` and
`warmstart embed` as the PyTorch encoder does (inference/encode.py hands it the texts)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from torch import nn

from warmstart.checkpoints.resolve import read_config
from warmstart.deploy.onnx_unit import GRAPH, session
from warmstart.errors import WarmstartError
from warmstart.nn.pooling import cls_at_end, pool
from warmstart.tasks.base import encoder_inputs
from warmstart.tokenization.tokenizer import Tokenizer

NAMES = ["input_ids", "attention_mask", "token_type_ids"]
SAMPLE = ["A warm, funny film.", "Slow and dull for most of two hours, it never finds a story at all."]


class Sentences(nn.Module):
    """``encoder``'s last layer pooled (``pooling``: cls, mean or max), then (``normalize``) of length 1."""

    outputs = ("embeddings",)

    def __init__(self, encoder: nn.Module, pooling: str, normalize: bool):
        super().__init__()
        self.encoder, self.pooling, self.normalize = encoder, pooling, normalize

    def forward(self, input_ids, attention_mask, token_type_ids):
        hidden = self.encoder.hidden_states(input_ids, attention_mask, token_type_ids)[-1]
        vectors = pool(hidden, attention_mask, self.pooling, cls_at_end(self.encoder)).float()
        return nn.functional.normalize(vectors, dim=-1, eps=1e-12) if self.normalize else vectors


def sample_inputs(tokenizer, max_length: int) -> dict:
    """A padded batch of SAMPLE, as encoding pads it (two lengths)."""
    ids, types = tokenizer.encode_pairs(SAMPLE, None, max_length)
    return encoder_inputs(ids, types, tokenizer.pad_id)


class OnnxEncoder:
    """An encoder export as inference/encode.py asks for it: ``sentence_vectors`` (the graph's pooling and
    normalization), ``eval`` and ``to`` (nothing to do: onnxruntime runs it on the CPU)."""

    def __init__(self, run, options: dict):
        self.run, self.options = run, options

    def _same(self, *args, **kwargs) -> OnnxEncoder:
        return self

    eval = to = _same  # the mode and the device are onnxruntime's

    def __getattr__(self, name: str):  # what a PyTorch encoder does beyond sentence vectors (fill-mask...)
        if name.startswith("__"):
            raise AttributeError(name)
        self()

    def __call__(self, *args, **kwargs):
        raise WarmstartError(
            "this ONNX export of an encoder gives sentence vectors only (encode, embed)",
            "fill masks, probe or take hidden states with the run it was exported from",
        )

    def sentence_vectors(self, tokenizer, texts, layer, pooling, normalize, max_length, batch_size):
        """(vectors, pooling, normalize) as inference/encode.py's ``sentence_vectors``: the graph's pooling
        (another is refused), its normalization (unit length may be added, not taken away)."""
        own, unit = self.options["pooling"], self.options["normalize"]
        asked = [f"layer {layer}"] if layer != "last" else []
        asked += [f"pooling {pooling}"] if pooling not in (None, own) else []
        asked += ["normalize False"] if normalize is False and unit else []
        if asked:
            raise WarmstartError(
                f"this ONNX encoder computes the last layer, {own} pooling{', unit length' if unit else ''} "
                f"in its graph, not {', '.join(asked)}",
                "leave layer, pooling and normalize as they are, or encode with the run it was exported from",
            )
        length = max_length or self.options.get("max_length") or 512
        ids, types = tokenizer.encode_pairs(list(texts), None, length)
        order = np.argsort([-len(x) for x in ids], kind="stable")  # similar lengths together: less padding
        out = np.zeros((len(texts), self.options["dimensions"]), dtype=np.float32)
        for start in range(0, len(ids), batch_size):
            idx = order[start : start + batch_size]
            batch = encoder_inputs([ids[i] for i in idx], [types[i] for i in idx], tokenizer.pad_id)
            out[idx] = self.run.run(None, {n: batch[n].numpy() for n in NAMES})[0]
        if normalize and not unit:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out, own, bool(normalize or unit)


def is_onnx_encoder(config_json: dict) -> bool:
    """Whether an ONNX directory's config.json is an encoder's (sentence vectors, not a task's scores)."""
    return isinstance(config_json.get("onnx", {}).get("sentence"), dict)


def load_onnx_encoder(d: Path) -> tuple[OnnxEncoder, Tokenizer, dict]:
    """(encoder, tokenizer, config.json) of an encoder's ONNX directory, as checkpoints/load.py's
    ``load_encoder`` gives them for a PyTorch one."""
    config_json = read_config(d)
    return OnnxEncoder(session(d / GRAPH), config_json["onnx"]["sentence"]), Tokenizer.load(d), config_json


def check_encoder(encoder: nn.Module, what: str) -> None:
    """Refuse an encoder whose inputs are not token ids alone (ELMo reads each word's characters)."""
    if any(getattr(m, "reads_characters", False) for m in encoder.modules()):
        raise WarmstartError(f"export --to onnx does not export {what} (it reads characters)", "use --to hf")
