"""The relative weight change per group: a known perturbation shows up in its own layer's row alone, with the
value computed here from the tensors; identical weights give zeros; every family's tensors land in
embeddings, their own layer or a named module; two architectures are refused."""

import math

import pytest
import torch

from tests.helpers.shapes import SHAPES, tiny_encoder
from warmstart.analysis.weight_change import weight_change
from warmstart.config import from_dict
from warmstart.errors import WarmstartError
from warmstart.registry import MODELS


def unit_state(model, head: str) -> dict:
    """A training unit's state dict: the model under ``encoder.``, a head of two tensors beside it."""
    state = {f"encoder.{k}": v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(1)
    state[f"{head}.weight"], state[f"{head}.bias"] = torch.randn(2, 32), torch.randn(2)
    return state


def frobenius(tensors) -> float:
    return math.sqrt(sum(float(t.double().square().sum()) for t in tensors))


def test_a_perturbed_tensor_moves_its_layer_alone_by_the_expected_amount():
    a = unit_state(tiny_encoder(), "head")
    b = unit_state(tiny_encoder(), "classifier")  # the same encoder, another head
    torch.manual_seed(2)
    delta = 0.01 * torch.randn_like(b["encoder.layers.1.mlp.up.weight"])
    b["encoder.layers.1.mlp.up.weight"] = b["encoder.layers.1.mlp.up.weight"] + delta
    change = weight_change(a, b)
    rows = {g.name: g for g in change.groups}
    assert list(rows) == ["embeddings", "layer 0", "layer 1", "pooler"]
    layer1 = [v for k, v in a.items() if k.startswith("encoder.layers.1.")]
    mlp1 = [v for k, v in a.items() if k.startswith("encoder.layers.1.mlp.")]
    up = "encoder.layers.1.mlp.up.weight"
    delta_norm = frobenius([b[up].double() - a[up].double()])  # what b holds, rounded to float32
    assert rows["layer 1"].relative == pytest.approx(delta_norm / frobenius(layer1), rel=1e-9)
    assert rows["layer 1"].blocks["feed-forward"] == pytest.approx(delta_norm / frobenius(mlp1), rel=1e-9)
    assert rows["layer 1"].blocks["attention"] == 0 and rows["layer 1"].blocks["norms"] == 0
    assert rows["layer 1"].params == sum(t.numel() for t in layer1)
    assert all(g.relative == 0 for name, g in rows.items() if name != "layer 1")
    assert set(rows["layer 0"].blocks) == {"attention", "feed-forward", "norms"}
    assert list(change.only_a) == ["head"] and list(change.only_b) == ["classifier"]
    assert change.only_b["classifier"] == ["classifier.weight", "classifier.bias"]


def test_identical_weights_change_by_zero():
    a = unit_state(tiny_encoder(), "head")
    change = weight_change(a, {k: v.clone() for k, v in a.items()})
    assert change.groups and all(g.relative == 0 and g.norm_change == 0 for g in change.groups)
    assert all(v == 0 for g in change.groups for v in g.blocks.values())
    assert change.only_a == {} and change.only_b == {}


def test_the_json_form_keeps_its_keys():
    """`warmstart diff`'s JSON names a group's part (embeddings, layer, other) "kind", as it always has."""
    a = unit_state(tiny_encoder(), "head")
    groups = weight_change(a, a).as_dict()["groups"]
    assert list(groups[0]) == ["name", "kind", "params", "norm_a", "norm_change", "relative", "blocks"]
    assert groups[0]["kind"] == "embeddings" and {g["kind"] for g in groups} == {
        "embeddings",
        "layer",
        "other",
    }


def test_a_group_that_was_all_zeros_has_no_relative_change():
    a = {"model.final_logits_bias": torch.zeros(4)}
    assert weight_change(a, {"model.final_logits_bias": torch.ones(4)}).groups[0].relative is None
    assert weight_change(a, dict(a)).groups[0].relative == 0


SHAPE = {"bert": ["model.hidden_size=32", "model.num_hidden_layers=2", "model.num_attention_heads=2",
                  "model.intermediate_size=64"], **SHAPES, "elmo": ["model.num_layers=2"]}  # fmt: skip
GROUPS = {
    "bert": ["embeddings", "layer 0", "layer 1", "pooler"],
    "gpt2": ["embeddings", "layer 0", "layer 1", "final_norm"],
    "xlnet": ["embeddings", "layer 0", "layer 1", "lm_bias"],
    "t5": ["embeddings", "encoder layer 0", "encoder layer 1", "decoder layer 0", "decoder layer 1",
           "decoder_norm", "encoder_norm"],
    "bart": ["embeddings", "encoder layer 0", "encoder layer 1", "decoder layer 0", "decoder layer 1",
             "final_logits_bias"],
    "elmo": ["embeddings", "layer 0", "layer 1", "softmax"],
}  # fmt: skip
BLOCKS = {"t5": {"attention", "cross-attention", "feed-forward", "norms"}, "elmo": {"forward", "backward"},
          "bart": {"attention", "cross-attention", "feed-forward", "norms"}}  # fmt: skip


@pytest.mark.parametrize("arch", list(GROUPS))
def test_every_family_is_grouped_by_its_layers(arch):
    """Each layer of each family gets its own row (with its sub-blocks), the token and position tables the
    embeddings row, and nothing is left out: the rows hold every floating tensor of the model."""
    config_cls, model_cls = MODELS[arch]
    values = {k.split("=")[0].removeprefix("model."): int(k.split("=")[1]) for k in SHAPE[arch]}
    torch.manual_seed(0)
    state = {f"model.{k}": v for k, v in model_cls(from_dict(config_cls, {**values, "vocab_size": 100}))
             .state_dict().items()}  # fmt: skip
    change = weight_change(state, {k: v + 1 if v.is_floating_point() else v for k, v in state.items()})
    names = [g.name for g in change.groups]
    layers = [n for n in GROUPS[arch] if "layer " in n]  # bottom to top, the encoder's first
    assert names[: 1 + len(layers)] == ["embeddings", *layers] and sorted(names) == sorted(GROUPS[arch])
    blocks = {b for g in change.groups if g.part == "layer" for b in g.blocks}
    assert blocks == BLOCKS.get(arch, {"attention", "feed-forward", "norms"})
    floating = sum(v.numel() for v in state.values() if v.is_floating_point())
    assert sum(g.params for g in change.groups) == floating
    assert all(g.relative > 0 for g in change.groups if g.norm_a > 0)  # lm_bias, final_logits_bias: zeros


def test_two_architectures_are_refused():
    a = unit_state(tiny_encoder(), "head")
    three = {k.replace("layers.1.", "layers.2."): v for k, v in a.items() if "layers.1." in k}
    with pytest.raises(WarmstartError, match="not one architecture: only B has encoder.layers.2"):
        weight_change(a, {**a, **three})
    wider = {k: torch.zeros(64) if k == "encoder.layers.0.norm1.weight" else v for k, v in a.items()}
    with pytest.raises(WarmstartError, match=r"layers.0.norm1.weight is \[32\] in one and \[64\]"):
        weight_change(a, wider)
