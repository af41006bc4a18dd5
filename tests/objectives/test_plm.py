"""XLNet's permutation LM: the targets (their share over > 100k tokens, spans, never a special token), the
factorisation order the masks encode (brute force through a random XLNet: a target's query stream moves
with every token before it in the order and with no other, its own included), the loss against a dense
reference and against transformers' XLNetLMHeadModel on the same weights and batch, and pretraining that
lowers the validation loss and resumes bit for bit."""

import functools

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from tests.helpers.runs import assert_resumes_exactly, validation_records
from warmstart.commands.pretrain import pretrain
from warmstart.errors import WarmstartError
from warmstart.models.tiny import tiny
from warmstart.models.xlnet import XLNetConfig, XLNetModel
from warmstart.objectives.lm_loss import IGNORE
from warmstart.objectives.plm import PermutationLM, PLMCollator, PLMConfig

SPECIAL = (0, 1, 2)


def batch_of(b, t, seed=0, cfg=None):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 500, (b, t), generator=g)
    ids[:, ::37] = 1  # document separators inside packed windows
    return PLMCollator(cfg or PLMConfig(), SPECIAL)(ids, g)


def targets_of(batch) -> torch.Tensor:
    """(B, T) bool: the positions target_mapping picks."""
    return batch["target_mapping"].sum(1).bool()


@pytest.mark.parametrize("p", [1 / 6, 0.3])
def test_the_share_of_targets_is_the_setting_over_100k_tokens(p):
    batch = batch_of(64, 1600, cfg=PLMConfig(plm_probability=p))  # 102,400 tokens
    eligible = ~torch.isin(batch["input_ids"], torch.tensor(SPECIAL))
    share = float(targets_of(batch).sum()) / float(eligible.sum())
    assert abs(share - p) < 0.002, share


def test_targets_are_spans_of_real_tokens_and_labels_are_their_tokens():
    batch = batch_of(16, 256, cfg=PLMConfig(max_span_length=5))
    targets = targets_of(batch)
    assert not (targets & torch.isin(batch["input_ids"], torch.tensor(SPECIAL))).any()
    starts = targets & ~torch.cat([torch.zeros(16, 1, dtype=torch.bool), targets[:, :-1]], 1)
    assert 1.5 < float(targets.sum()) / float(starts.sum()) < 5  # runs of several tokens, not single ones
    one = PLMCollator(PLMConfig(max_span_length=1), SPECIAL)(batch["input_ids"], torch.Generator())
    runs = targets_of(one).sum() / (targets_of(one) & ~F.pad(targets_of(one)[:, :-1], (1, 0))).sum()
    assert float(runs) < 1.3  # max_span_length 1: spans meet only by chance
    rows = batch["target_mapping"].argmax(-1)
    used = batch["labels"] != IGNORE
    assert torch.equal(used, batch["target_mapping"].sum(-1).bool())
    assert torch.equal(batch["labels"][used], batch["input_ids"].gather(1, rows)[used])


def test_the_masks_encode_one_order_with_the_context_first():
    batch = batch_of(8, 64)
    for perm, tgt in zip(batch["perm_mask"].bool(), targets_of(batch)):
        assert not perm[:, ~tgt].any()  # the context is visible to all
        assert perm[~tgt][:, tgt].all()  # the context sees no target
        sees = (~perm[tgt][:, tgt]).long()  # target i sees target j: j is before i
        rank = sees.sum(1)
        assert sorted(rank.tolist()) == list(range(int(tgt.sum())))  # a strict total order
        assert torch.equal(sees.bool(), rank[None, :] < rank[:, None])


def test_bad_settings_are_refused():
    with pytest.raises(WarmstartError, match="plm_probability"):
        PLMConfig(plm_probability=1.0)
    with pytest.raises(WarmstartError, match="max_span_length"):
        PLMConfig(max_span_length=0)


def tiny_xlnet(vocab=500, **kw):
    torch.manual_seed(0)
    model = XLNetModel(tiny(XLNetConfig, vocab_size=vocab, dropout=0.0, **kw)).double().eval()
    with torch.no_grad():
        for w in model.parameters():
            w.normal_(0, 0.3) if w.dim() > 1 else w.add_(torch.randn_like(w) * 0.1)
    return model


def query(model, batch, ids):
    with torch.no_grad():
        out = model.streams(
            ids, None, perm_mask=batch["perm_mask"].double(), target_mapping=batch["target_mapping"].double()
        )
    return out.query


def test_a_query_stream_sees_exactly_the_tokens_before_it_in_the_order():
    model = tiny_xlnet()
    batch = batch_of(1, 16, seed=3, cfg=PLMConfig(plm_probability=0.4))
    ids, perm = batch["input_ids"], batch["perm_mask"][0].bool()
    base = query(model, batch, ids)[0]
    rows = batch["target_mapping"][0].argmax(-1)[batch["labels"][0] != IGNORE]
    for j in range(16):
        changed = ids.clone()
        changed[0, j] = 3 + (int(ids[0, j]) + 1) % 497
        moved = (query(model, batch, changed)[0] - base).abs().amax(-1) > 1e-9
        for r, i in enumerate(rows.tolist()):
            before = not perm[i, j] and i != j  # j is context, or a target earlier in the order
            assert bool(moved[r]) == before, (i, j)


def test_the_loss_equals_a_dense_reference_and_transformers():
    model = tiny_xlnet().float()
    unit = PermutationLM(model, PLMConfig())
    batch = batch_of(3, 24, seed=1, cfg=PLMConfig(plm_probability=0.25))
    unit.train()
    fused = unit(batch)[0].detach()
    unit.eval()
    with torch.no_grad():
        loss, stats = unit(batch)
        q = model.streams(batch["input_ids"], None, perm_mask=batch["perm_mask"],
                          target_mapping=batch["target_mapping"]).query  # fmt: skip
        dense = F.cross_entropy(
            model.lm_logits(q).flatten(0, 1), batch["labels"].flatten(), ignore_index=IGNORE
        )
    assert abs(float(loss) - float(dense)) < 1e-5 and abs(float(fused) - float(dense)) < 1e-4
    unit.train()
    unit(batch)[0].backward()
    fused_grad = model.lm_bias.grad.clone()
    model.lm_bias.grad = None
    q = model.streams(batch["input_ids"], None, perm_mask=batch["perm_mask"],
                      target_mapping=batch["target_mapping"]).query  # fmt: skip
    F.cross_entropy(
        model.lm_logits(q).flatten(0, 1), batch["labels"].flatten(), ignore_index=IGNORE
    ).backward()
    assert fused_grad.abs().max() > 0 and torch.allclose(fused_grad, model.lm_bias.grad, atol=1e-6)
    assert stats["loss"][1] == int((batch["labels"] != IGNORE).sum())
    transformers = pytest.importorskip("transformers")
    from warmstart.hub.families import FAMILIES
    from warmstart.hub.families.configs import config_to_hf
    from warmstart.hub.tensors import to_hf_state

    fam = FAMILIES["xlnet"]
    hf = transformers.XLNetLMHeadModel(
        transformers.XLNetConfig(**config_to_hf("xlnet", model.config, {}, fam.hf_class))
    ).eval()
    missing, unexpected = hf.load_state_dict(to_hf_state(fam, model.config, unit.state_dict()), strict=False)
    assert not unexpected and set(missing) <= {"lm_loss.weight"}
    assert sum(p.numel() for p in unit.parameters()) == sum(p.numel() for p in hf.parameters())  # bias trains
    with torch.no_grad():
        ref = hf(**{k: batch[k] for k in ("input_ids", "perm_mask", "target_mapping", "labels")}).loss
    assert abs(float(ref) - float(dense)) < 1e-4


MINI = ["data.tokenizer_kind=wordpiece", "model.d_model=32",
        "model.n_layer=2", "model.n_head=4", "model.d_inner=64", "data.seq_len=32",
        "train.batch_size=8", "train.eval_batches=2", "train.progress=false"]  # fmt: skip


def run_args(shards, out):
    flags = {"out": str(out), "data": {"shards": str(shards)}, "train": {"steps": 16}}
    extra = ["train.save_every=8", "train.eval_every=8", "train.lr=3e-3", "train.log_every=1"]
    return dict(preset="xlnet-mini", config_file=None, flags=flags, overrides=MINI + extra)


def test_pretraining_lowers_the_loss_and_resumes_exactly(small_shards, tmp_path):
    pretrain(**run_args(small_shards, tmp_path / "full"))
    evals = validation_records(tmp_path / "full")
    assert evals[0]["step"] == 0 and evals[-1]["step"] == 16
    assert evals[-1]["perplexity"] < 0.8 * evals[0]["perplexity"], (evals[0], evals[-1])
    assert (
        load_file(str(tmp_path / "full" / "final" / "model.safetensors"))["encoder.lm_bias"].abs().max() > 0
    )
    args = functools.partial(run_args, small_shards)
    assert_resumes_exactly(args, tmp_path / "full", tmp_path / "cut", stop=12, steps=16)
