"""Gradient checkpointing (nn/checkpointing.py) in every family of the registry and the BERT-style variants:
the blocks really run twice (forward, then again in the backward pass), and the gradients equal those of
the plain pass within 1e-5 with dropout on (the recomputation replays the same RNG). In evaluation or
without gradients the blocks run once."""

import inspect

import pytest
import torch

from tests.helpers.models import preset_model_config, real_ids
from warmstart import registry
from warmstart.models.tiny import tiny
from warmstart.nn.checkpointing import Checkpointing, set_checkpointing

TOL = 1e-5
VARIANTS = ["albert-mini", "deberta-mini", "electra-mini", "roberta-mini"]  # BERT's config, other shapes


def families() -> list[str]:
    return sorted(registry.MODELS)  # the shared tester's list: a family added later is checked too


def tiny_model(name: str, vocab_size: int):
    """(config, model) of the family's tiny config (warmstart.models.tiny), its dropout kept, seed 0."""
    config_cls, model_cls = registry.MODELS[name]
    torch.manual_seed(0)
    cfg = tiny(config_cls, vocab_size=vocab_size)
    return cfg, model_cls(cfg)


def encoder_decoder(model_cls) -> bool:
    return "decoder_input_ids" in inspect.signature(model_cls.forward).parameters


def blocks(model) -> list[torch.nn.Module]:
    """The modules each stack runs as one block: BERT's layers, GPT-2's, T5's and BART's encoder and
    decoder blocks, XLNet's layers, ELMo's LSTMs."""
    found = []
    for stack in (m for m in model.modules() if isinstance(m, Checkpointing)):
        for name in ("layers", "encoder_layers", "decoder_layers"):
            found += list(getattr(stack, name, None) or [])
    return found


def gradients(model, ids, checkpointing: bool) -> tuple[dict, int]:
    """({name: gradient} of the sum of squared outputs, block forward calls), dropout drawn from seed 1."""
    if checkpointing:
        model.gradient_checkpointing_enable()
    else:
        model.gradient_checkpointing_disable()
    model.train().zero_grad()
    calls = []
    hooks = [b.register_forward_pre_hook(lambda *_: calls.append(1)) for b in blocks(model)]
    torch.manual_seed(1)
    kw = {"decoder_input_ids": ids[:, :9]} if encoder_decoder(type(model)) else {}
    model(ids, attention_mask=torch.ones_like(ids), **kw).pow(2).mean().backward()
    for h in hooks:
        h.remove()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}, len(calls)


def check(model, ids, counted: bool = True) -> None:
    """Equal gradients; ``counted``: and every block ran again in the backward pass."""
    plain, once = gradients(model, ids, checkpointing=False)
    saved, twice = gradients(model, ids, checkpointing=True)
    if counted:
        assert once > 0 and twice == 2 * once
    assert plain.keys() == saved.keys() and len(plain) > 0
    worst = max((plain[k] - saved[k]).abs().max().item() for k in plain)
    assert worst <= TOL, f"largest gradient difference {worst:.3g}"


@pytest.mark.parametrize("name", families())
def test_checkpointed_gradients_equal_the_plain_pass(name, tokenizer, wiki_extracts):
    _, model = tiny_model(name, tokenizer.vocab_size)
    check(model, real_ids(tokenizer, wiki_extracts[:2], 20))


@pytest.mark.parametrize("preset", VARIANTS)
def test_bert_variants_checkpoint_too(preset, tokenizer, wiki_extracts):
    from warmstart.models.bert import BertModel

    torch.manual_seed(0)
    check(
        BertModel(preset_model_config(preset, vocab_size=tokenizer.vocab_size)),
        real_ids(tokenizer, wiki_extracts[:2], 20),
    )


def test_elmo_with_clipped_cells_checkpoints_its_step_loop(tokenizer, wiki_extracts):
    from warmstart.models.elmo import ElmoConfig, ElmoModel

    torch.manual_seed(0)
    model = ElmoModel(tiny(ElmoConfig, vocab_size=tokenizer.vocab_size, token_representation="embeddings",
                           cell_clip=3.0, proj_clip=3.0))  # fmt: skip
    check(model, real_ids(tokenizer, wiki_extracts[:2], 12), counted=False)  # the loop reads the weights


@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_evaluation_and_no_grad_run_each_block_once(name, tokenizer, wiki_extracts):
    _, model = tiny_model(name, tokenizer.vocab_size)
    model.gradient_checkpointing_enable()
    ids = real_ids(tokenizer, wiki_extracts[:2], 16)
    calls = []
    for b in blocks(model):
        b.register_forward_pre_hook(lambda *_: calls.append(1))
    model.eval()
    model(ids).pow(2).mean().backward()  # eval mode: gradients, no recomputation
    with torch.no_grad():
        model.train()(ids)
    assert len(calls) == 2 * len(blocks(model))


def test_a_unit_switches_every_stack_inside_it():
    """An objective's unit reaches its encoders: ELECTRA's generator and discriminator are two stacks."""
    from tests.helpers.shapes import tiny_bert_config
    from warmstart.models.bert import BertModel

    unit = torch.nn.ModuleDict(
        {"generator": BertModel(tiny_bert_config()), "disc": BertModel(tiny_bert_config())}
    )
    assert set_checkpointing(unit, True) == 2
    assert all(m.gradient_checkpointing for m in unit.values())
    assert set_checkpointing(torch.nn.Linear(2, 2), True) == 0


# ------------------------------------------------------------------------------- whole runs (train.*)
def records(run) -> list[dict]:
    import json

    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["split"], r["loss"]) for r in rows if r["split"] in ("train", "validation")]


def assert_same_run(a, b) -> None:
    """Every logged loss within 1e-5, and the final weights too."""
    from tests.helpers.runs import final_weights

    ra, rb = records(a), records(b)
    assert [r[:2] for r in ra] == [r[:2] for r in rb] and len(ra) > 4
    assert all(abs(x[2] - y[2]) <= TOL for x, y in zip(ra, rb))
    wa, wb = final_weights(a), final_weights(b)
    assert wa.keys() == wb.keys()
    assert max((wa[k].float() - wb[k].float()).abs().max().item() for k in wa) <= TOL


def test_pretraining_with_checkpointing_matches_the_plain_run(small_shards, tmp_path):
    from tests.helpers.runs import run_args
    from warmstart.commands.pretrain import pretrain

    pretrain(**run_args(small_shards, tmp_path / "plain"))
    args = run_args(small_shards, tmp_path / "saved")
    args["overrides"] = [*args["overrides"], "train.gradient_checkpointing=true"]
    pretrain(**args)
    assert_same_run(tmp_path / "plain", tmp_path / "saved")


def test_an_encoder_decoder_pretrains_with_checkpointing(bpe_shards, tmp_path):
    """BART's denoising run (encoder and decoder stacks, cross-attention) gives the plain run's losses."""
    from tests.helpers.runs import pretrain_family

    log = ["train.log_every=1"]
    pretrain_family("bart", bpe_shards, tmp_path / "plain", steps=6, extra=log)
    pretrain_family(
        "bart", bpe_shards, tmp_path / "saved", steps=6, extra=[*log, "train.gradient_checkpointing=true"]
    )
    assert_same_run(tmp_path / "plain", tmp_path / "saved")
