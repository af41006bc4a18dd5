"""T5's and BART's forward look up the encoder's and the decoder's tokens in one call of the shared embedding
(models/encoder_decoder.py): one dense gradient built in backward instead of two summed. The gradients are
those of two lookups, the outputs equal bit for bit."""

import pytest
import torch

from warmstart.models.bart import BartConfig, BartModel
from warmstart.models.t5 import T5Config, T5Model

MODELS = {
    "t5": lambda: T5Model(T5Config(vocab_size=97, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4)),
    "bart": lambda: BartModel(
        BartConfig(
            vocab_size=97,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=64,
        )
    ),  # fmt: skip
}


def _two_lookups(model, src, src_mask, tgt):
    memory = model.encode(src, src_mask)
    return model.decode(tgt, memory, src_mask)[0]


def _lookups(loss) -> int:
    seen, todo, found = set(), [loss.grad_fn], 0
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        found += type(node).__name__.startswith("EmbeddingBackward")
        todo.extend(next_fn for next_fn, _ in node.next_functions)
    return found


@pytest.mark.parametrize("family", MODELS)
def test_one_lookup_gives_the_gradients_of_two(family):
    torch.manual_seed(0)
    model = MODELS[family]().eval()  # no dropout: the two paths see the same numbers
    src, tgt = torch.randint(3, 97, (3, 11)), torch.randint(3, 97, (3, 7))
    tgt[:, 0] = src[:, 0]  # a token in both: its row gets gradient from both sides
    src_mask = torch.ones_like(src)
    src_mask[0, -3:] = 0
    grads, outs = [], []
    for forward in (lambda: model(src, src_mask, tgt), lambda: _two_lookups(model, src, src_mask, tgt)):
        model.zero_grad()
        out = forward()
        loss = model.lm_logits(out).logsumexp(-1).sum()
        outs.append((out, _lookups(loss)))
        loss.backward()
        grads.append(model.shared.weight.grad.clone())
    assert torch.equal(outs[0][0], outs[1][0])
    assert outs[1][1] - outs[0][1] == 1  # one lookup fewer (T5's position biases are lookups too)
    assert grads[0][src[0, 0]].abs().sum() > 0
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-5, atol=1e-6)
