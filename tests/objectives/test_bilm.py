"""ELMo's biLM objective: its loss equals a dense reference (both directions, through the shared softmax;
the fused training path equals the plain one), pretraining lowers the validation perplexity of both
directions, and an interrupted run resumes bit for bit."""

import functools

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.runs import assert_resumes_exactly, validation_records
from warmstart.commands.pretrain import pretrain
from warmstart.data.shard_writer import prepare_shards
from warmstart.models.elmo import ElmoConfig, ElmoModel
from warmstart.models.tiny import tiny
from warmstart.objectives.bilm import BiLM
from warmstart.tokenization.train import train_tokenizer

pytestmark = pytest.mark.integration

MINI = ["model.projection_dim=32", "model.cell_size=64", "model.filters=[[1,16],[2,16],[3,32]]",
        "data.seq_len=32", "train.batch_size=8", "train.eval_batches=2", "train.progress=false"]  # fmt: skip


@pytest.fixture(scope="module")
def word_shards(wiki_extracts, tmp_path_factory):
    root = tmp_path_factory.mktemp("elmo")
    tok = train_tokenizer(wiki_extracts[:600], "word", 3000, root / "tok", show_progress=False)
    splits = {"train": wiki_extracts[:600], "validation": wiki_extracts[600:660]}
    prepare_shards(splits, tok, root / "shards", show_progress=False)
    return root, tok


def test_the_loss_is_the_dense_mean_of_both_directions(word_shards, wiki_extracts):
    _, tok = word_shards
    torch.manual_seed(0)
    model = ElmoModel(tiny(ElmoConfig, vocab_size=tok.vocab_size, dropout=0.0))
    model.bind(tok)
    unit = BiLM(model)
    ids, _ = tok.encode_pairs(wiki_extracts[10:14], None, 24)
    width = max(map(len, ids))
    batch = torch.tensor([x + [tok.pad_id] * (width - len(x)) for x in ids])
    mask = (torch.arange(width)[None] < torch.tensor([len(x) for x in ids])[:, None]).long()
    unit.eval()
    with torch.no_grad():
        loss, stats = unit({"input_ids": batch, "attention_mask": mask})
        _, fwd, bwd = model.directions(batch, mask)
        logits_f, logits_b = model.softmax(fwd[-1][:, :-1]), model.softmax(bwd[-1][:, 1:])
        real = mask[:, 1:].bool()
        ce_f = F.cross_entropy(logits_f[real], batch[:, 1:][real], reduction="sum")
        ce_b = F.cross_entropy(logits_b[real], batch[:, :-1][real], reduction="sum")
    n = int(real.sum())
    assert stats["forward_loss"][1] == stats["backward_loss"][1] == n
    assert abs(float(loss) - float(ce_f + ce_b) / (2 * n)) < 1e-5
    assert abs(float(stats["forward_loss"][0]) - float(ce_f)) < 1e-3
    unit.train()  # the fused cross-entropy (no logits) gives the same loss
    fused, _ = unit({"input_ids": batch, "attention_mask": mask})
    assert abs(float(fused) - float(loss)) < 1e-5


def run_args(root, out):
    flags = {"out": str(out), "data": {"shards": str(root / "shards")}, "train": {"steps": 8}}
    extra = ["train.save_every=4", "train.eval_every=4", "train.lr=3e-3", "train.log_every=1"]
    return dict(preset="elmo-mini", config_file=None, flags=flags, overrides=MINI + extra)


def test_pretraining_lowers_both_perplexities_and_resumes_exactly(word_shards, tmp_path):
    root, _ = word_shards
    pretrain(**run_args(root, tmp_path / "full"))
    evals = validation_records(tmp_path / "full")
    first, last = evals[0], evals[-1]
    assert first["step"] == 0 and last["step"] == 8
    for side in ("forward", "backward"):
        assert last[f"{side}_perplexity"] < 0.8 * first[f"{side}_perplexity"], (side, first, last)
    args = functools.partial(run_args, root)
    assert_resumes_exactly(args, tmp_path / "full", tmp_path / "cut", stop=6, steps=8)
