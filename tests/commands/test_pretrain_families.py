"""GPT-2 (causal LM), T5 (span corruption) and BART (denoising) pretrain through `warmstart pretrain` on
real wiki text: the loss falls, the run's config.json says how to rebuild and start decoding the model."""

import json

import pytest

from tests.helpers.runs import FAMILY_TRAIN, pretrain_family
from warmstart.checkpoints.load import load_generator
from warmstart.commands.pretrain import pretrain
from warmstart.errors import WarmstartError

OBJECTIVE = {"gpt2": "clm", "t5": "span_corruption", "bart": "denoising"}
START = {"gpt2": None, "t5": "pad_token_id", "bart": "eos_token_id"}


@pytest.mark.parametrize("arch", ["gpt2", "t5", "bart"])
def test_family_pretrains_with_its_objective_and_loss_falls(arch, bpe_shards, unigram_shards, tmp_path):
    shards = unigram_shards if arch == "t5" else bpe_shards
    pretrain_family(arch, shards, tmp_path / "run")
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in records if r["split"] == "validation"]
    assert val[-1]["loss"] < val[0]["loss"] - 1.0, (val[0], val[-1])
    config = json.loads((tmp_path / "run" / "final" / "config.json").read_text())
    assert config["model_type"] == arch and config["warmstart"]["objective"] == OBJECTIVE[arch]
    if START[arch]:
        assert config["decoder_start_token_id"] == config[START[arch]]
    model, tokenizer, _ = load_generator(tmp_path / "run")
    assert type(model).__name__.lower() == f"{arch}model"
    assert model.word_embeddings.num_embeddings == tokenizer.vocab_size


def test_objective_of_another_family_is_refused_before_any_write(bpe_shards, tmp_path):
    with pytest.raises(WarmstartError, match="objective mlm does not train a gpt2 model") as e:
        pretrain_family("gpt2", bpe_shards, tmp_path / "run", extra=["objective=mlm"])
    assert "--objective clm" in e.value.fix
    assert not (tmp_path / "run").exists()


def test_t5_without_sentinels_is_refused_before_any_write(bpe_shards, tmp_path):
    with pytest.raises(WarmstartError, match="no sentinel tokens"):
        pretrain_family("t5", bpe_shards, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_sequence_longer_than_the_context_names_the_family_key(bpe_shards, tmp_path):
    with pytest.raises(WarmstartError, match="exceeds model.n_positions 64"):
        pretrain_family("gpt2", bpe_shards, tmp_path / "run", extra=["data.seq_len=128"])


def test_model_keys_of_another_family_are_unknown(bpe_shards, tmp_path):
    with pytest.raises(WarmstartError, match="unknown config key 'model.hidden_size'"):
        pretrain_family("gpt2", bpe_shards, tmp_path / "run", extra=["model.hidden_size=32"])


@pytest.mark.parametrize("arch", ["gpt2", "t5"])
def test_continued_pretraining_loads_every_weight(arch, bpe_shards, unigram_shards, tmp_path):
    shards = unigram_shards if arch == "t5" else bpe_shards
    pretrain_family(arch, shards, tmp_path / "first", steps=4)
    flags = {"out": str(tmp_path / "second"), "init": str(tmp_path / "first"), "train": {"steps": 2}}
    flags["data"] = {"shards": str(shards)}
    pretrain(
        None,
        None,
        flags,
        FAMILY_TRAIN + ["model.dropout_rate=0.0" if arch == "t5" else "model.resid_pdrop=0.0"],
    )
    info = json.loads((tmp_path / "second" / "init.json").read_text())
    model, _, _ = load_generator(tmp_path / "first")
    assert info["loaded_tensors"] == len(model.state_dict()) and info["fresh"] == []
