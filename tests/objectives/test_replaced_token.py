"""ELECTRA: discriminator labels, the shared embeddings, the generator's shape, training on real text."""

import json

import torch
from safetensors.torch import load_file

from tests.helpers.shapes import TINY_MODEL, tiny_bert_config
from warmstart.checkpoints.load import load_encoder
from warmstart.commands.pretrain import pretrain
from warmstart.models.bert import BertModel
from warmstart.objectives.mlm import IGNORE, MLMConfig
from warmstart.objectives.replaced_token import (
    ElectraConfig,
    ReplacedTokenDetection,
    generator_config,
    replace_tokens,
    sample,
)


def test_a_sample_equal_to_the_original_counts_as_original():
    original = torch.tensor([[10, 11, 12, 13, 14]])
    masked = torch.tensor([[10, 3, 3, 13, 3]])  # positions 1, 2, 4 were masked
    labels = torch.tensor([[IGNORE, 11, 12, IGNORE, 14]])
    positions = torch.tensor([1, 2, 4])
    sampled = torch.tensor([11, 99, 14])  # the generator got 1 and 4 right, 2 wrong
    corrupted, replaced = replace_tokens(masked, labels, positions, sampled)
    assert corrupted.tolist() == [[10, 11, 99, 13, 14]]
    assert replaced.tolist() == [[False, False, True, False, False]]
    assert not replace_tokens(masked, labels, positions, original[0, [1, 2, 4]])[1].any()


def test_sampling_follows_the_distribution_and_temperature():
    logits = torch.log(torch.tensor([[0.7, 0.2, 0.1]])).repeat(20000, 1)
    g = torch.Generator().manual_seed(0)
    freq = torch.bincount(sample(logits, 1.0, g), minlength=3).float() / 20000
    assert torch.allclose(freq, torch.tensor([0.7, 0.2, 0.1]), atol=0.015)
    cold = torch.bincount(sample(logits, 0.05, g), minlength=3).float() / 20000
    assert cold[0] > 0.999


def test_generator_shares_the_discriminator_embeddings_and_is_smaller():
    torch.manual_seed(0)
    shape = dict(hidden_size=64, num_attention_heads=4, intermediate_size=128)
    disc = BertModel(tiny_bert_config(**shape, position_init="sinusoidal"))  # the generator reads it too
    unit = ReplacedTokenDetection(disc, MLMConfig(), ElectraConfig())
    g = unit.generator.config
    assert (g.hidden_size, g.num_attention_heads, g.intermediate_size) == (16, 1, 32)
    assert unit.generator.word_embeddings is disc.word_embeddings
    assert unit.generator_head.tied[0] is disc.word_embeddings
    names = list(unit.state_dict())
    assert not any(n.startswith("generator.embeddings") for n in names)  # stored once, under encoder.
    assert len({p.data_ptr() for p in unit.parameters()}) == len(list(unit.parameters()))
    assert generator_config(disc.config, ElectraConfig(generator_size=1.0)).hidden_size == 64


def test_discriminator_gradient_reaches_the_shared_embeddings_from_both_losses():
    torch.manual_seed(0)
    unit = ReplacedTokenDetection(BertModel(tiny_bert_config()), MLMConfig(), ElectraConfig())
    ids = torch.randint(5, 1000, (4, 24))
    labels = torch.full_like(ids, IGNORE)
    labels[:, ::4] = ids[:, ::4]
    batch = {"input_ids": torch.where(labels != IGNORE, 4, ids), "labels": labels}
    loss, stats = unit(batch)
    gen_only = float(stats["mlm_loss"][0]) / stats["mlm_loss"][1]
    rtd = float(stats["rtd_loss"][0]) / float(stats["rtd_loss"][1])
    assert abs(float(loss.detach()) - (gen_only + 50 * rtd)) < 1e-3
    loss.backward()
    assert unit.encoder.word_embeddings.weight.grad.abs().sum() > 0
    assert unit.generator.layers[0].attn.qkv.weight.grad.abs().sum() > 0
    unit.eval()  # evaluation samples the same replacements every time
    with torch.no_grad():
        assert float(unit(batch)[0]) == float(unit(batch)[0])


def test_electra_pretrains_and_the_discriminator_is_what_finetuning_loads(small_shards, tmp_path):
    out = tmp_path / "electra"
    overrides = TINY_MODEL + ["train.batch_size=8", "train.eval_every=20", "train.eval_batches=2"]
    overrides += ["train.progress=false", "train.lr=2e-3", "model.embedding_size=16"]
    result = pretrain(
        None,
        None,
        {
            "out": str(out),
            "objective": "electra",
            "data": {"shards": str(small_shards)},
            "train": {"steps": 40},
        },
        overrides,
    )
    log = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in log if r.get("split") == "validation"]
    assert val[-1]["rtd_loss"] < val[0]["rtd_loss"] and val[-1]["mlm_loss"] < val[0]["mlm_loss"]
    assert result["metrics"]["replaced"] > 0.0
    config = json.loads((out / "final" / "config.json").read_text())
    assert config["architectures"] == ["ElectraForPreTraining"]
    encoder, _, _ = load_encoder(out)
    state = load_file(str(out / "final" / "model.safetensors"))
    assert torch.equal(encoder.layers[0].attn.qkv.weight, state["encoder.layers.0.attn.qkv.weight"])
    assert encoder.config.hidden_size == 32  # the discriminator, not the generator
