"""DeBERTa's enhanced mask decoder (mlm.emd): absolute positions added before the MLM head, through the last
block again; no weights of its own; exact resume with it on."""

import functools
import json

import pytest
import torch

from tests.helpers.models import count
from tests.helpers.runs import assert_resumes_exactly, run_args
from tests.helpers.shapes import tiny_bert_config
from warmstart.commands.pretrain import pretrain
from warmstart.errors import WarmstartError
from warmstart.models.bert import BertModel
from warmstart.objectives.mlm import IGNORE, MaskedLM, MLMConfig
from warmstart.objectives.nsp_sop import NextSentenceLM, NSPConfig
from warmstart.objectives.replaced_token import ElectraConfig, ReplacedTokenDetection

DEBERTA = dict(
    relative_attention=True, position_biased_input=False, position_buckets=8, max_relative_positions=32
)


def unit(emd: bool, passes: int = 2, seed: int = 0, **config):
    torch.manual_seed(seed)
    return MaskedLM(
        BertModel(tiny_bert_config(**{**DEBERTA, **config})), MLMConfig(emd=emd, emd_passes=passes)
    )


def head_logits(u, ids, mask=None):
    """The MLM head's logits at every position, in evaluation mode (no dropout)."""
    with torch.no_grad():
        hidden, _ = u.encode({"input_ids": ids, "attention_mask": mask})
        return u.head(hidden)


def shifted(ids, by: int):
    """``ids`` moved ``by`` positions to the right behind masked-out padding (id 0): the same tokens, the same
    distances between them, other absolute positions."""
    pad = torch.zeros(ids.shape[0], by, dtype=ids.dtype)
    mask = torch.cat([torch.zeros_like(pad), torch.ones_like(ids)], 1)
    return torch.cat([pad, ids], 1), mask


@pytest.mark.parametrize("emd", [False, True])
def test_with_emd_the_logits_depend_on_absolute_position_without_it_they_do_not(emd):
    u = unit(emd).eval()
    ids = torch.randint(5, 1000, (2, 12))
    here = head_logits(u, ids, torch.ones_like(ids))
    moved_ids, mask = shifted(ids, 5)
    there = head_logits(u, moved_ids, mask)[:, 5:]
    gap = (here - there).abs().max().item()
    if emd:
        assert gap > 1e-2  # the same tokens 5 positions on: the decoder's absolute positions tell them apart
    else:
        assert gap < 1e-4  # relative attention only: a shift behind padding changes nothing


def test_the_decoder_reads_the_position_table_and_the_plain_head_does_not():
    ids = torch.randint(5, 1000, (2, 10))
    for emd in (False, True):
        u = unit(emd).eval()
        before = head_logits(u, ids)
        with torch.no_grad():
            u.encoder.embeddings.position.weight.normal_()
        assert torch.equal(head_logits(u, ids), before) is not emd


def test_position_table_gets_gradient_only_with_emd_and_no_parameters_are_added():
    ids = torch.randint(5, 1000, (3, 20))
    labels = torch.full_like(ids, IGNORE)
    labels[:, 2::3] = ids[:, 2::3]
    grads = {}
    for emd in (False, True):
        u = unit(emd).train()
        loss, _ = u({"input_ids": ids, "labels": labels})
        loss.backward()
        grads[emd] = u.encoder.embeddings.position.weight.grad
        assert count(u) == count(unit(not emd))  # the passes share the last block; the table was there
    assert grads[False] is None
    rows = grads[True].abs().sum(-1) > 0
    # a query row reaches only its own output: the rows of the masked positions, and no other
    assert torch.equal(rows[:20], (labels != IGNORE).any(0)) and not rows[20:].any()


@pytest.mark.parametrize(
    "shape", [DEBERTA, {**DEBERTA, "pre_ln": True}, {}], ids=["deberta", "pre-ln", "bert"]
)
def test_one_pass_with_a_zero_position_table_is_the_plain_last_layer(shape):
    """I = H + 0 and one pass: the last block reads H as queries, keys and values, as the encoder does (a
    BERT input reads the zero table too; with the table back the decoder adds its rows once more)."""
    torch.manual_seed(0)
    encoder = BertModel(tiny_bert_config(**shape)).eval()
    plain = MaskedLM(encoder, MLMConfig())
    emd = MaskedLM(encoder, MLMConfig(emd=True, emd_passes=1))
    emd.head = plain.head
    ids = torch.randint(5, 1000, (2, 16))
    table = encoder.embeddings.position.weight
    start = table.detach().clone()
    with torch.no_grad():
        table.zero_()
    torch.testing.assert_close(head_logits(emd, ids), head_logits(plain, ids), atol=2e-5, rtol=1e-5)
    with torch.no_grad():
        table.copy_(start)
    assert not torch.allclose(head_logits(emd, ids), head_logits(plain, ids), atol=1e-3)


def test_two_passes_differ_from_one_and_nsp_pools_the_encoders_last_layer():
    ids = torch.randint(5, 1000, (2, 12))
    assert not torch.allclose(head_logits(unit(True, 1).eval(), ids), head_logits(unit(True, 2).eval(), ids))
    torch.manual_seed(0)
    nsp = NextSentenceLM(BertModel(tiny_bert_config(**DEBERTA)), MLMConfig(emd=True), NSPConfig()).eval()
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    with torch.no_grad():
        decoded, last = nsp.encode(batch, last=True)
        assert torch.equal(last, nsp.encoder(ids, batch["attention_mask"]))
        assert not torch.allclose(decoded, last, atol=1e-3)


def test_emd_is_refused_where_it_cannot_run():
    with pytest.raises(WarmstartError, match="embedding_size"):
        MaskedLM(BertModel(tiny_bert_config(embedding_size=16)), MLMConfig(emd=True))
    with pytest.raises(WarmstartError, match="mlm.emd"):
        ReplacedTokenDetection(BertModel(tiny_bert_config()), MLMConfig(emd=True), ElectraConfig())
    with pytest.raises(WarmstartError, match="emd_passes"):
        MLMConfig(emd=True, emd_passes=0)


def emd_args(shards, out):
    args = run_args(shards, out)
    deberta = ["model.relative_attention=true", "model.position_biased_input=false", "mlm.emd=true"]
    return {**args, "overrides": args["overrides"] + deberta}


def test_exact_resume_holds_with_emd(small_shards, tmp_path):
    pretrain(**emd_args(small_shards, tmp_path / "full"))
    card = json.loads((tmp_path / "full" / "final" / "config.json").read_text())["warmstart"]
    assert card["emd"] == {"passes": 2}  # recorded: fill-mask reads the decoder, export says it drops it
    assert_resumes_exactly(
        functools.partial(emd_args, small_shards), tmp_path / "full", tmp_path / "cut", stop=14, steps=16
    )
