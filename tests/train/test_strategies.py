"""Finetuning strategies: what trains (counted independently from each strategy's definition), what moves
under AdamW (exactly that, everything else bitwise unchanged), re-init, LoRA, layer-wise LR decay, errors."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from warmstart.config import field_help, from_dict
from warmstart.errors import WarmstartError
from warmstart.models.bert import BertConfig, BertModel
from warmstart.nn.lora import LoRALinear, merge_lora
from warmstart.train.optim import adamw
from warmstart.train.strategies import StrategyConfig, apply_strategy, describe, lr_scales

H, L, I, V, P, T, C = 32, 4, 64, 200, 64, 2, 3  # hidden, layers, inner, vocab, positions, types, classes


def config(**extra) -> BertConfig:
    return BertConfig(
        vocab_size=V,
        hidden_size=H,
        num_hidden_layers=L,
        num_attention_heads=2,
        intermediate_size=I,
        max_position_embeddings=P,
        **extra,
    )


class Unit(nn.Module):
    """Encoder + linear head on the pooled [CLS] state, as a task would build it."""

    def __init__(self, encoder: BertModel):
        super().__init__()
        self.encoder = encoder
        self.classifier = nn.Linear(H, C)

    def logits(self, batch):
        return self.classifier(self.encoder.pool(self.encoder(batch["input_ids"], batch["attention_mask"])))

    def forward(self, batch):
        return F.cross_entropy(self.logits(batch), batch["labels"]), {}


def make_unit(seed: int = 0, **extra) -> Unit:
    """A unit whose encoder looks pretrained: no exact zeros and ones left from the init."""
    torch.manual_seed(seed)
    unit = Unit(BertModel(config(**extra)))
    with torch.no_grad():
        for p in unit.encoder.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return unit


def batch(seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(8, 16, dtype=torch.long)
    mask[:4, 12:] = 0
    return {
        "input_ids": torch.randint(0, V, (8, 16), generator=g),
        "attention_mask": mask,
        "labels": torch.randint(0, C, (8,), generator=g),
    }


def train(unit, steps=3, lr=1e-2, scales=None):
    optimizer = adamw(unit, lr, 0.01, (0.9, 0.999), 1e-8, lr_scales=scales)
    unit.train()
    for step in range(steps):
        for group in optimizer.param_groups:  # the fit loop's rule
            group["lr"] = lr * group.get("lr_scale", 1.0)
        loss, _ = unit(batch(step))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return optimizer


def snapshot(module) -> dict:
    return {k: v.detach().clone() for k, v in module.named_parameters()}


# Parameter counts from the architecture, written out by hand (not from the code under test).
EMB = V * H + P * H + T * H + 2 * H
QKV, OUT, UP, DOWN = 3 * H * H + 3 * H, H * H + H, H * I + I, I * H + H
NORMS = 2 * (2 * H)
LAYER = QKV + OUT + UP + DOWN + NORMS
POOLER, HEAD = H * H + H, H * C + C
TOTAL = EMB + L * LAYER + POOLER + HEAD
LAYER_BIASES = 3 * H + H + I + H + 2 * H  # qkv, out, up, down, norm1, norm2
RANK = 4
LORA = L * ((RANK * H + 3 * H * RANK) + (RANK * H + H * RANK))  # qkv: A r x H, B 3H x r; out: H x r

EXPECTED = {
    "full": (TOTAL, TOTAL),
    "frozen": (HEAD, TOTAL),
    "top_k": (2 * LAYER + POOLER + HEAD, TOTAL),
    "layernorm": ((1 + 2 * L) * 2 * H + HEAD, TOTAL),
    "bitfit": (H + L * LAYER_BIASES + H + HEAD, TOTAL),
    "lora": (LORA + HEAD, TOTAL + LORA),
}


def trains(strategy: str, name: str) -> bool:
    """The strategy's definition, by parameter name (independent of finetuning.py)."""
    if not name.startswith("encoder.") or strategy == "full":
        return True
    leaf = name.rsplit(".", 1)[-1]
    return {
        "frozen": False,
        "top_k": name.startswith(("encoder.layers.2.", "encoder.layers.3.", "encoder.pooler.")),
        "layernorm": ".norm" in name,
        "bitfit": leaf == "bias",
        "lora": leaf in ("lora_a", "lora_b"),
    }[strategy]


@pytest.mark.parametrize("strategy", list(EXPECTED))
def test_strategy_trains_exactly_its_parameters(strategy):
    unit = make_unit()
    cfg = StrategyConfig(strategy=strategy, top_k=2, lora_rank=RANK, lora_targets=["qkv", "out"])
    report = apply_strategy(unit, cfg, seed=0)
    assert (report["trainable"], report["total"]) == EXPECTED[strategy]
    assert sum(p.numel() for n, p in unit.named_parameters() if trains(strategy, n)) == EXPECTED[strategy][0]
    assert report["strategy"] == strategy and describe(report).startswith(f"strategy {strategy}: ")

    before = snapshot(unit)
    optimizer = train(unit)
    in_optimizer = {id(p) for g in optimizer.param_groups for p in g["params"]}
    for name, p in unit.named_parameters():
        assert p.requires_grad == trains(strategy, name), name
        assert (id(p) in in_optimizer) == trains(strategy, name), name
        if trains(strategy, name):
            assert not torch.equal(p, before[name]), f"{name} should have changed"
        else:
            assert torch.equal(p, before[name]), f"{name} should be bitwise unchanged"


def test_top_k_on_pre_ln_trains_the_final_norm():
    unit = make_unit(pre_ln=True, pooler=False)
    report = apply_strategy(unit, StrategyConfig(strategy="top_k", top_k=1), seed=0)
    assert report["trainable"] == LAYER + 2 * H + HEAD
    assert unit.encoder.final_norm.weight.requires_grad
    assert not unit.encoder.layers[2].mlp.up.weight.requires_grad


def test_describe_full_reads_as_one_line():
    report = {"strategy": "full", "trainable": 4386306, "total": 4386306}
    assert describe(report) == "strategy full: 4,386,306 of 4,386,306 parameters trainable (100.00%)"


def test_reinit_top_2_resets_top_layers_and_pooler_only():
    unit = make_unit(initializer_range=0.03)
    before = snapshot(unit)
    report = apply_strategy(unit, StrategyConfig(strategy="frozen", reinit_top_k=2), seed=1)
    assert report["reinit_top_k"] == 2 and "re-initialised" in describe(report)
    for name, p in unit.named_parameters():
        top = name.startswith(("encoder.layers.2.", "encoder.layers.3.", "encoder.pooler."))
        assert torch.equal(p, before[name]) != top, name
    enc = unit.encoder
    for layer in enc.layers[2:]:
        for linear in (layer.attn.qkv, layer.attn.out, layer.mlp.up, layer.mlp.down):
            assert abs(linear.weight.std().item() - 0.03) < 0.003
            assert abs(linear.weight.mean().item()) < 0.003
            assert torch.count_nonzero(linear.bias) == 0
        for norm in (layer.norm1, layer.norm2):
            assert torch.all(norm.weight == 1) and torch.count_nonzero(norm.bias) == 0
    assert abs(enc.pooler.weight.std().item() - 0.03) < 0.003
    # the same seed gives the same re-initialisation, and the caller's RNG stream is untouched
    again = make_unit(initializer_range=0.03)
    state = torch.get_rng_state()
    apply_strategy(again, StrategyConfig(strategy="frozen", reinit_top_k=2), seed=1)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(again.encoder.layers[3].attn.qkv.weight, enc.layers[3].attn.qkv.weight)


def test_lora_starts_at_base_trains_b_and_merges_exactly():
    unit = make_unit()
    plain = copy.deepcopy(unit).eval()
    cfg = StrategyConfig(strategy="lora", lora_rank=RANK, lora_targets=["qkv", "out", "up", "down"])
    report = apply_strategy(unit, cfg, seed=0)
    assert report["lora_modules"] == 4 * L
    unit.eval()
    with torch.no_grad():
        assert torch.equal(unit.logits(batch(9)), plain.logits(batch(9)))

    train(unit, steps=3)
    unit.eval()
    wrapped = [m for m in unit.encoder.modules() if isinstance(m, LoRALinear)]
    assert all(torch.count_nonzero(m.lora_b) > 0 for m in wrapped)
    with torch.no_grad():
        unmerged = unit.logits(batch(9))
        assert merge_lora(unit.encoder) == 4 * L
        merged = unit.logits(batch(9))
    assert (merged - unmerged).abs().max().item() < 1e-5
    assert not any(isinstance(m, LoRALinear) for m in unit.modules())
    fresh = BertModel(config())
    fresh.load_state_dict(unit.encoder.state_dict(), strict=True)
    assert "layers.0.attn.qkv.weight" in unit.encoder.state_dict()


def test_layer_lr_decay_gives_each_layer_its_lr():
    unit = make_unit()
    apply_strategy(unit, StrategyConfig(strategy="full", layer_lr_decay=0.5), seed=0)
    scales = lr_scales(unit, 0.5)
    lr = 1e-3
    optimizer = train(unit, steps=1, lr=lr, scales=scales)
    group_lr = {id(p): g["lr"] for g in optimizer.param_groups for p in g["params"]}

    def expected(name):
        for i in range(L):
            if name.startswith(f"encoder.layers.{i}."):
                return lr * 0.5 ** (L - 1 - i)
        return lr * 0.5**L if name.startswith("encoder.embeddings.") else lr  # pooler and head: top

    for name, p in unit.named_parameters():
        assert group_lr[id(p)] == pytest.approx(expected(name), rel=1e-12), name
    assert group_lr[id(unit.encoder.layers[3].attn.qkv.weight)] == lr
    assert group_lr[id(unit.encoder.embeddings.word.weight)] == pytest.approx(lr / 16)


def test_layer_lr_decay_with_top_k_leaves_frozen_layers_out():
    unit = make_unit()
    apply_strategy(unit, StrategyConfig(strategy="top_k", top_k=2, layer_lr_decay=0.8), seed=0)
    optimizer = adamw(unit, 1e-3, 0.01, (0.9, 0.999), 1e-8, lr_scales=lr_scales(unit, 0.8))
    assert sorted({g["lr_scale"] for g in optimizer.param_groups}) == [pytest.approx(0.8), 1.0]
    assert sum(p.numel() for g in optimizer.param_groups for p in g["params"]) == 2 * LAYER + POOLER + HEAD


@pytest.mark.parametrize(
    "fields,says",
    [
        ({"strategy": "lorra"}, "did you mean lora"),
        ({"strategy": "bitfitt"}, "bitfit"),
        ({"strategy": "lora", "lora_targets": ["qvk"]}, "did you mean qkv"),
        ({"strategy": "lora", "lora_targets": ["qkv", "query"]}, "did you mean qkv"),
        ({"strategy": "lora", "lora_rank": 0}, "lora_rank=0"),
        ({"strategy": "top_k", "top_k": 5}, "top_k=5 but the encoder has 4 layers"),
        ({"strategy": "full", "reinit_top_k": 5}, "reinit_top_k=5"),
        ({"strategy": "full", "layer_lr_decay": 0.0}, "layer_lr_decay"),
    ],
)
def test_bad_settings_raise_warmstart_error(fields, says):
    unit = make_unit()
    before = snapshot(unit)
    with pytest.raises(WarmstartError, match=says):
        apply_strategy(unit, StrategyConfig(**fields), seed=0)
    assert all(torch.equal(p, before[n]) and p.requires_grad for n, p in unit.named_parameters())


def test_config_reads_from_dicts_and_documents_every_field():
    cfg = from_dict(StrategyConfig, {"strategy": "lora", "lora_targets": "qkv,up", "lora_alpha": 8})
    assert cfg.lora_targets == ["qkv", "up"] and cfg.lora_alpha == 8.0
    assert StrategyConfig().lora_targets == ["qkv", "out"] and StrategyConfig().lora_targets is not (
        StrategyConfig().lora_targets
    )
    assert all(help_text for _, _, _, help_text in field_help(StrategyConfig))


def test_frozen_encoder_runs_without_dropout():
    unit = make_unit()
    report = apply_strategy(unit, StrategyConfig(strategy="frozen"))
    assert report["encoder_dropout_off"] > 0
    unit.train()
    x = torch.randint(0, 200, (2, 10))
    assert torch.equal(unit.encoder(x), unit.encoder(x))  # deterministic features in training mode
    assert unit.classifier.weight.requires_grad


@pytest.mark.parametrize(
    "fields", [{"strategy": "top_k", "top_k": 1}, {"reinit_top_k": 1}, {"layer_lr_decay": 0.9}]
)
def test_per_layer_strategies_refuse_shared_layers(fields):
    unit = make_unit(share_layers=True)
    with pytest.raises(WarmstartError, match="share one set of weights"):
        apply_strategy(unit, StrategyConfig(**fields), seed=0)
    report = apply_strategy(unit, StrategyConfig(strategy="bitfit"), seed=0)  # not per layer: fine
    assert 0 < report["trainable"] < report["total"]
