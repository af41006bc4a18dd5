"""What T5 and BART share: an encoder stack, a causal decoder stack with cross-attention, a shared token
embedding and a language-model head. Each family says how tokens are embedded (``embed``) and which
position bias the attention gets (``position_bias``); the stacking, masks and KV cache live here once.

``forward`` looks the encoder's and the decoder's tokens up in one call of the shared embedding: its backward
then builds one dense (V, H) gradient (a zero fill and a scatter) where two lookups built two and summed
them, two passes over the vocabulary's rows per step (t5-small: 16.4M of its 60M parameters).
"""

from __future__ import annotations

import torch
from torch import nn

from warmstart.nn.attention import decoder_mask, encoder_mask, padding_mask
from warmstart.nn.block import cache_length
from warmstart.nn.checkpointing import Checkpointing


class EncoderDecoder(Checkpointing, nn.Module):
    """``forward(input_ids, attention_mask, decoder_input_ids, decoder_attention_mask=None)`` -> decoder
    states (B, T, H); ``lm_logits(hidden)`` -> (B, T, V). For generation: ``encode`` once, then ``decode``
    step by step with the cache it returns (cross-attention keys/values of the encoder output included)."""

    encoder_layers: nn.ModuleList
    decoder_layers: nn.ModuleList
    encoder_norm: nn.Module | None
    decoder_norm: nn.Module | None
    drop: nn.Module

    def embed(self, ids: torch.Tensor, decoder: bool, offset: int = 0, tokens=None) -> torch.Tensor:
        """The input states of ``ids``; ``tokens``: their rows of the shared embedding, looked up already."""
        raise NotImplementedError

    def token_rows(self, *ids: torch.Tensor) -> list[torch.Tensor]:
        """The shared embedding's rows of each of ``ids``, from one lookup (see the module)."""
        flat = self.shared(torch.cat([i.reshape(-1) for i in ids]))
        return [rows.view(*i.shape, -1) for rows, i in zip(flat.split([i.numel() for i in ids]), ids)]

    def position_bias(self, decoder: bool, query_len: int, key_len: int, offset: int = 0):
        return None

    def forward(self, input_ids, attention_mask=None, decoder_input_ids=None, decoder_attention_mask=None):
        source, target = self.token_rows(input_ids, decoder_input_ids)
        memory = self.encode(input_ids, attention_mask, tokens=source)
        return self.decode(decoder_input_ids, memory, attention_mask, None, decoder_attention_mask, target)[0]

    def encode(self, input_ids, attention_mask=None, tokens=None) -> torch.Tensor:
        t = input_ids.shape[1]
        x = self.embed(input_ids, decoder=False, tokens=tokens)
        mask = encoder_mask(attention_mask, self.position_bias(False, t, t), dtype=x.dtype)
        for block in self.encoder_layers:
            x, _ = self.run_block(block, x, mask)
        return self._finish(x, self.encoder_norm)

    def decode(self, ids, memory, memory_mask=None, past=None, attention_mask=None, tokens=None):
        """(hidden, present). ``memory``: encoder output (B, S, H) and ``memory_mask`` its (B, S) padding;
        ``attention_mask``: (B, past + T) decoder padding or None; ``past``: an earlier ``present``;
        ``tokens``: the rows of ``ids`` in the shared embedding, when looked up already."""
        t = ids.shape[1]
        past_len = cache_length(past)
        x = self.embed(ids, decoder=True, offset=past_len, tokens=tokens)
        bias = self.position_bias(True, t, past_len + t, past_len)
        mask = decoder_mask(t, attention_mask, past_len, bias, dtype=x.dtype)
        cross_mask = padding_mask(memory_mask)
        present = []
        for i, block in enumerate(self.decoder_layers):
            past_i = past[i] if past else None
            x, kv = self.run_block(block, x, mask, past_i, memory, cross_mask, is_causal=past_len == 0)
            present.append(kv)
        return self._finish(x, self.decoder_norm), present

    def _finish(self, x, norm):
        return self.drop(norm(x)) if norm is not None else x

    @property
    def word_embeddings(self) -> nn.Embedding:
        return self.shared
