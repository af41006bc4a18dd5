"""Masked LM corruption proportions and the sparse loss against a dense reference."""

import torch
import torch.nn.functional as F

from warmstart.models.bert import BertConfig, BertModel
from warmstart.objectives.mlm import IGNORE, MaskedLM, MLMCollator, MLMConfig, mask_tokens

VOCAB, CLS, SEP, PAD, MASK, UNK = 1000, 2, 3, 0, 4, 1
SPECIAL = torch.tensor([PAD, UNK, CLS, SEP, MASK])


def batch_with_specials(n_rows=400, width=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (n_rows, width), generator=g)
    ids[:, 0], ids[:, -1] = CLS, SEP
    ids[::3, width * 2 // 3 :] = PAD  # padded rows
    ids[:, width // 6] = SEP
    return ids


def test_proportions_on_over_100k_tokens():
    ids = batch_with_specials()
    normal = ~torch.isin(ids, SPECIAL)
    assert normal.sum() > 100_000
    inputs, labels = mask_tokens(ids, MLMConfig(), MASK, VOCAB, SPECIAL, torch.Generator().manual_seed(1))
    selected = labels != IGNORE
    rate = selected.sum() / normal.sum()
    assert abs(rate - 0.15) < 0.005
    n = selected.sum().item()
    as_mask = (inputs[selected] == MASK).sum().item() / n
    unchanged = (inputs[selected] == ids[selected]).sum().item() / n
    random = 1 - as_mask - unchanged
    assert abs(as_mask - 0.8) < 0.01
    assert abs(unchanged - 0.1) < 0.01 + 1 / VOCAB  # a random pick can equal the original
    assert abs(random - 0.1) < 0.01
    # unselected positions are untouched, labels hold the original ids
    assert torch.equal(inputs[~selected], ids[~selected])
    assert torch.equal(labels[selected], ids[selected])


def test_special_and_pad_never_selected_or_sampled():
    ids = batch_with_specials()
    inputs, labels = mask_tokens(
        ids, MLMConfig(mask_prob=0.9), MASK, VOCAB, SPECIAL, torch.Generator().manual_seed(2)
    )
    special = torch.isin(ids, SPECIAL)
    assert (labels[special] == IGNORE).all()
    assert torch.equal(inputs[special], ids[special])
    randomised = (labels != IGNORE) & (inputs != MASK) & (inputs != ids)
    assert randomised.any()
    assert not torch.isin(inputs[randomised], SPECIAL).any()


def test_masks_are_a_function_of_the_generator_seed():
    ids = batch_with_specials(20, 64)
    a = mask_tokens(ids, MLMConfig(), MASK, VOCAB, SPECIAL, torch.Generator().manual_seed(5))
    b = mask_tokens(ids, MLMConfig(), MASK, VOCAB, SPECIAL, torch.Generator().manual_seed(5))
    c = mask_tokens(ids, MLMConfig(), MASK, VOCAB, SPECIAL, torch.Generator().manual_seed(6))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])


def test_sparse_loss_equals_dense_reference():
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    unit = MaskedLM(BertModel(cfg), MLMConfig()).eval()
    collate = MLMCollator(MLMConfig(), MASK, VOCAB, SPECIAL.tolist())
    batch = collate(batch_with_specials(8, 40), torch.Generator().manual_seed(3))
    loss, stats = unit(batch)
    hidden = unit.encoder(batch["input_ids"])
    dense_logits = unit.head(hidden)  # every position through the full vocabulary projection
    ref = F.cross_entropy(dense_logits.reshape(-1, VOCAB), batch["labels"].reshape(-1), ignore_index=IGNORE)
    assert torch.allclose(loss, ref, atol=1e-5)
    assert stats["loss"][1] == (batch["labels"] != IGNORE).sum()
    # the decoder is the word embedding matrix itself
    assert unit.head.tied[0].weight is unit.encoder.embeddings.word.weight


def test_training_takes_the_fused_head_with_the_same_loss_and_gradients():
    """In training (dropout off) the loss and every gradient, the decoder bias's included, equal the
    evaluation path's plain head on the same batch; evaluations alone report accuracy."""
    torch.manual_seed(1)
    shape = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
    cfg = BertConfig(vocab_size=VOCAB, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **shape)
    unit = MaskedLM(BertModel(cfg), MLMConfig())
    torch.nn.init.normal_(unit.head.bias, std=0.5)  # zero at the start: make it count
    batch = MLMCollator(MLMConfig(), MASK, VOCAB, SPECIAL.tolist())(
        batch_with_specials(6, 30), torch.Generator().manual_seed(4)
    )
    grads = []
    for training in (True, False):
        unit.train(training)
        unit.zero_grad()
        loss, stats = unit(batch)
        loss.backward()
        assert ("accuracy" in stats) is not training
        grads.append(
            (float(loss), {n: p.grad.clone() for n, p in unit.named_parameters() if p.grad is not None})
        )
    (fused, fused_grads), (plain, plain_grads) = grads
    assert abs(fused - plain) < 1e-5 and fused_grads.keys() == plain_grads.keys()
    for name, g in plain_grads.items():
        torch.testing.assert_close(fused_grads[name], g, rtol=1e-4, atol=1e-6, msg=name)
    assert plain_grads["head.bias"].abs().sum() > 0
