"""Tiny model shapes: as config overrides for runs (``TINY_MODEL`` for BERT, ``SHAPES`` for the generative
families) and as a config object for unit tests (``tiny_bert_config``)."""

TINY_MODEL = [
    "model.hidden_size=32",
    "model.num_hidden_layers=2",
    "model.num_attention_heads=2",
    "model.intermediate_size=64",
    "model.max_position_embeddings=64",
    "data.seq_len=64",
]
SHAPES = {
    "gpt2": ["model.n_layer=2", "model.n_embd=32", "model.n_head=2", "model.n_positions=64"],
    "t5": ["model.d_model=32", "model.d_kv=16", "model.d_ff=64", "model.num_layers=2", "model.num_heads=2"],
    "bart": [
        "model.d_model=32", "model.encoder_layers=2", "model.decoder_layers=2",
        "model.encoder_attention_heads=2", "model.decoder_attention_heads=2", "model.encoder_ffn_dim=64",
        "model.decoder_ffn_dim=64", "model.max_position_embeddings=64",
    ],
    "xlnet": ["model.d_model=32", "model.n_layer=2", "model.n_head=2", "model.d_inner=64"],
}  # fmt: skip


def tiny_bert_config(vocab_size: int = 1000, **overrides):
    """The small encoder most unit tests use: 2 layers, hidden 32, 2 heads, FFN 64, 128 positions."""
    from warmstart.models.bert import BertConfig

    shape = dict(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    return BertConfig(vocab_size=vocab_size, **{**shape, **overrides})


def tiny_encoder(vocab: int = 1000):
    """A BERT of ``tiny_bert_config(vocab)``, initialised from seed 0."""
    import torch

    from warmstart.models.bert import BertModel

    torch.manual_seed(0)
    return BertModel(tiny_bert_config(vocab))
