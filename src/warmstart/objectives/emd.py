"""DeBERTa's enhanced mask decoder (He et al. 2021, section 3.2): absolute positions enter at the top.

Disentangled attention sees only relative positions, yet some predictions need absolute ones: in "a new
store opened beside the new mall" the two masked nouns have the same local context, and which one is the
subject depends on where it stands in the sentence. The decoder adds them just before the masked-LM head:

    H = the states entering the last block        I = H + P   (P: the absolute position embeddings)
    for each of n passes:  I = last_block(queries from I, keys and values from H)
    the MLM head reads I

P is the encoder's own position table, which a DeBERTa input (``position_biased_input=false``) leaves unread;
the n passes share the last block's weights (the paper: n = 2), so the decoder has no weights of its own.
This is how microsoft/DeBERTa's ``EnhancedMaskDecoder`` builds it (I = H + P, the last layer run twice on the
second-to-last layer's states). The encoder's ordinary last layer is not what the head reads; finetuning
and the transformers export read the encoder as it is, without the decoder, as the paper finetunes.
"""

from __future__ import annotations

from warmstart.errors import WarmstartError


def emd_states(encoder, batch: dict, passes: int, last: bool = False):
    """(the decoder's states for the MLM head, the encoder's last layer or None): the last layer is computed
    only when ``last`` (a pooled [CLS] head reads it: NSP, SOP); otherwise the encoder stops one block short,
    since the decoder's passes replace its last one."""
    ids, mask, types = batch["input_ids"], batch.get("attention_mask"), batch.get("token_type_ids")
    n = encoder.config.num_hidden_layers
    if last:
        states = encoder.hidden_states(ids, mask, types)
        entering, top = states[-2], states[-1]
    else:
        entering, top = encoder.hidden_states(ids, mask, types, keep=False, layers=n - 1)[-1], None
    query = entering + encoder.positions(ids.shape[1]).to(entering.dtype)
    return encoder.requery(entering, query, mask, passes), top


def check_emd(encoder) -> None:
    """Refuse an encoder the decoder cannot run on (its positions must be as wide as its hidden states)."""
    c = encoder.config
    if not hasattr(encoder, "requery"):
        raise WarmstartError("mlm.emd needs a bert-family encoder", "drop mlm.emd=true")
    if (c.embedding_size or c.hidden_size) != c.hidden_size:
        raise WarmstartError(
            f"mlm.emd adds the position embeddings ({c.embedding_size} wide) to the hidden states "
            f"({c.hidden_size} wide)",
            "drop model.embedding_size (or mlm.emd=true)",
        )
