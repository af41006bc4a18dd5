"""Hidden states as features: choose layers, pool (as a sentence-transformers model declares, when it does),
normalize; the per-layer features of linear probes.

Layer spec (``--layer``): ``last``, ``second_to_last``, ``sum_last4``, ``concat_last4``, or an index into
[embeddings, layer 1, ..., layer L] (0 = the embedding output, -1 = the last layer). Pooling: ``cls`` (the
first token's state) or ``mean`` (the mean over non-padding tokens). Batches run on the device the encoder's
weights are on; the features come back as numpy arrays on the CPU.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from warmstart.checkpoints.load import check_length
from warmstart.checkpoints.sentence import declared
from warmstart.errors import WarmstartError
from warmstart.nn.pooling import check_layer, cls_at_end, pool, select
from warmstart.tasks.base import encoder_inputs
from warmstart.tokenization.open_words import reading


@torch.no_grad()
def layer_features(
    encoder,
    tokenizer,
    texts: list[str],
    max_length: int,
    batch_size: int = 64,
    pairs: list[str] | None = None,
) -> Iterator:
    """For each batch of texts: (indices, states list [emb, l1..lL], attention_mask), longest first, in
    eval mode, on the encoder's device. ``pairs``: each text's second text, encoded as the model's pair
    input (segment B)."""

    check_length(encoder.config, max_length, "--max-length")
    for key, value, good in (("--max-length", max_length, 128), ("batch_size", batch_size, 32)):
        if value < 1:  # else a tokenizer's or range()'s own error
            raise WarmstartError(f"{key} must be at least 1, got {value}", f"e.g. {key} {good}")
    if not texts:
        raise WarmstartError("no texts to encode", "give at least one text")
    encoder.eval()
    # a character model (ELMo) reads every word's characters
    tokenizer = reading(encoder, tokenizer, texts if pairs is None else [*texts, *pairs])
    ids, types = tokenizer.encode_pairs(texts, pairs, max_length)
    order = np.argsort([-len(x) for x in ids], kind="stable")  # similar lengths together: less padding
    device = next((p.device for p in encoder.parameters()), torch.device("cpu"))
    for start in range(0, len(ids), batch_size):
        idx = order[start : start + batch_size]
        batch = encoder_inputs([ids[i] for i in idx], [types[i] for i in idx], tokenizer.pad_id)
        batch = {k: v.to(device) for k, v in batch.items()}
        states = encoder.hidden_states(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        yield idx, states, batch["attention_mask"]


def embed(
    encoder,
    tokenizer,
    texts: list[str],
    layer: str,
    pooling: str,
    max_length: int,
    batch_size: int = 64,
    progress: bool = False,
    pairs: list[str] | None = None,
) -> np.ndarray:
    """(len(texts), D) float32 features, in the order of ``texts``; ``progress``: a bar over the batches;
    ``pairs``: each text's second text (one vector per pair)."""
    check_layer(layer, encoder.config.num_hidden_layers)
    out: np.ndarray | None = None
    batches = layer_features(encoder, tokenizer, texts, max_length, batch_size, pairs)
    if progress:
        from tqdm.auto import tqdm

        batches = tqdm(batches, total=-(-len(texts) // batch_size), desc="encode", unit="batch")
    for idx, states, mask in batches:
        vectors = pool(select(states, layer), mask, pooling, cls_at_end(encoder)).float().cpu().numpy()
        if out is None:
            out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        out[idx] = vectors
    return out if out is not None else np.zeros((0, 0), dtype=np.float32)


def all_layer_features(encoder, tokenizer, texts, pooling: str, max_length: int) -> np.ndarray:
    """(L + 1, len(texts), H): pooled features of the embeddings and of every layer."""
    out = None
    for idx, states, mask in layer_features(encoder, tokenizer, texts, max_length):
        pooled = (
            torch.stack([pool(s, mask, pooling, cls_at_end(encoder)) for s in states]).float().cpu().numpy()
        )
        if out is None:
            out = np.zeros((len(states), len(texts), pooled.shape[-1]), dtype=np.float32)
        out[:, idx] = pooled
    return out


def sentence_options(card, pooling: str | None, normalize: bool | None) -> tuple[str, bool, int | None]:
    """(pooling, normalize, max_length): the ones asked for, else what the model declares (recorded in its
    run card at import, or read from the directory it was imported from), else [CLS], as is, None."""
    said = card.sections.get("sentence") or declared(card.imported_from) or {}
    pooling = pooling or said.get("pooling", "cls")
    return pooling, said.get("normalize", False) if normalize is None else normalize, said.get("max_length")


def unit_length(vectors):
    """Rows scaled to length 1 (sentence-transformers' Normalize)."""
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def sentence_vectors(
    encoder,
    tokenizer,
    card,
    texts: list[str],
    layer: str = "last",
    pooling: str | None = None,
    normalize: bool | None = None,
    max_length: int | None = None,
    batch_size: int = 64,
    progress: bool = False,
    pairs: list[str] | None = None,
) -> tuple[np.ndarray, str, bool]:
    """(vectors, pooling, normalize) of ``texts`` (`warmstart embed`, ``Model.encode``): ``pooling`` and
    ``normalize`` None are what the model declares (``sentence_options``); ``max_length`` None is the
    declared length, else the model's positions, at most 512. ``pairs``: each text's second text, the pair
    encoded as the model's pair input into one vector."""
    if hasattr(encoder, "sentence_vectors"):  # an ONNX export: its pooling and normalization in the graph
        if pairs is not None:
            raise WarmstartError("sentence pairs are not encoded by an ONNX export", "embed with the run")
        return encoder.sentence_vectors(tokenizer, texts, layer, pooling, normalize, max_length, batch_size)
    pooling, normalize, declared_length = sentence_options(card, pooling, normalize)
    if max_length is None:
        limit = getattr(encoder.config, "max_length", None) or 512  # None: no learned positions
        max_length = min(declared_length or limit, limit)
    vectors = embed(encoder, tokenizer, texts, layer, pooling, max_length, batch_size, progress, pairs)
    return (unit_length(vectors) if normalize else vectors), pooling, normalize
