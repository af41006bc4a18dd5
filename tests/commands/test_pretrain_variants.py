"""Every encoder variant pretrains through `warmstart pretrain` on real wiki text and its loss falls."""

import json

import pytest

from tests.helpers.shapes import TINY_MODEL
from warmstart.commands.pretrain import pretrain

VARIANTS = {
    "bert mlm+nsp": ["objective=mlm+nsp"],
    "albert mlm+sop": ["objective=mlm+sop", "model.share_layers=true", "model.embedding_size=16"],
    "electra": ["objective=electra", "model.embedding_size=16", "model.pooler=false"],
    "deberta attention": ["model.relative_attention=true", "model.position_biased_input=false"],
    "roberta (no segments)": ["model.type_vocab_size=1"],
    "whole-word masking 30%": ["mlm.masking=whole_word", "mlm.mask_prob=0.3"],
    "span masking": ["mlm.masking=span"],
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_variant_pretrains_and_its_loss_falls(name, small_shards, tmp_path):
    out = tmp_path / "run"
    overrides = TINY_MODEL + VARIANTS[name]
    overrides += ["train.batch_size=8", "train.eval_every=30", "train.eval_batches=3", "train.progress=false"]
    overrides += ["train.lr=2e-3", "train.save_every=0"]
    pretrain(
        None,
        None,
        {"out": str(out), "data": {"shards": str(small_shards)}, "train": {"steps": 30}},
        overrides,
    )
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in records if r["split"] == "validation"]
    key = "mlm_loss" if "mlm_loss" in val[0] else "loss"
    assert val[-1][key] < val[0][key] - 0.2, (val[0], val[-1])
    config = json.loads((out / "final" / "config.json").read_text())
    objective = next((o.split("=")[1] for o in VARIANTS[name] if o.startswith("objective=")), "mlm")
    assert config["warmstart"]["objective"] == objective
