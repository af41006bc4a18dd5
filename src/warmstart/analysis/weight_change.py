"""How far one set of weights moved from another, layer by layer: ||W_b - W_a||_F / ||W_a||_F per group.

Given two state dicts of one architecture (a pretrained checkpoint and a model finetuned from it, or any two
checkpoints of one shape), the parameters are grouped the way the model is built:

- ``embeddings``: token, position and segment tables and their norm, and every other table of positions
  (DeBERTa's relative embeddings, T5's relative-position buckets), ALBERT's E -> H projection, BART's
  embedding norms, ELMo's character CNN;
- ``layer i`` (``encoder layer i`` / ``decoder layer i`` for T5 and BART; ELMo: both directions' LSTM
  layer i), split further into sub-blocks: ``attention``, ``cross-attention``, ``feed-forward``, ``norms``
  (ELMo: ``forward``, ``backward``);
- one row for each other module of the model, named by its key (``pooler``, ``final_norm``,
  ``encoder_norm``, ``lm_head``, ...), and for each module of the training unit around it present in both
  (a pretraining head, ELECTRA's generator).

A group's relative change is the Frobenius norm over all of its tensors together: the square root of the
summed squared differences over the square root of the summed squares of ``a``'s tensors (float64). Names
present in one state dict only (the task head a finetuned model adds, the LM head it drops) are listed, not
compared; non-floating tensors (ELMo's character table) are skipped. The unit's prefix (``encoder.``,
``model.``, ELMo's ``encoder.bilm.``) is taken off first, so a pretraining unit and a task unit line up.
Two state dicts whose shared tensors differ in shape, or whose layers or embeddings do not hold the same
tensors, are not one architecture: WarmstartError.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

import torch

from warmstart.errors import WarmstartError

# the first module name (after the unit's prefix) of every table of tokens or positions, by family:
# bert (and RoBERTa, ALBERT, ELECTRA, DeBERTa), xlnet; gpt2; t5 and bart; elmo
EMBEDDINGS = {
    "embeddings", "embed_project", "rel",
    "wte", "wpe",
    "shared", "encoder_positions", "decoder_positions", "encoder_embed_norm", "decoder_embed_norm",
    "encoder_bias", "decoder_bias",
    "chars", "embed", "char_table",
}  # fmt: skip
LAYER = re.compile(r"(?:(encoder|decoder)_)?layers\.(\d+)\.(.+)")
LSTM = re.compile(r"(forward|backward)_lm\.layers\.(\d+)\.(.+)")
SUB_BLOCKS = {"attn": "attention", "cross": "cross-attention", "mlp": "feed-forward", "ff": "feed-forward"}
UNIT_PREFIXES = ("encoder.", "model.")
INNER_PREFIXES = ("bilm.",)  # ELMo's task encoder wraps the biLM


@dataclass
class Group:
    """One row: a group of tensors, its size, norms and relative change (None when ``a`` is all zeros and
    ``b`` is not), and the relative change of each sub-block."""

    name: str
    part: str  # embeddings, layer or other (JSON's key: kind)
    params: int = 0
    norm_a: float = 0.0
    norm_change: float = 0.0
    relative: float | None = 0.0
    blocks: dict[str, float | None] = field(default_factory=dict)


@dataclass
class WeightChange:
    groups: list[Group]
    only_a: dict[str, list[str]]  # group -> names (as the unit writes them) in ``a`` only: not compared
    only_b: dict[str, list[str]]
    skipped: list[str]  # non-floating tensors

    def as_dict(self) -> dict:
        """The fields as JSON has them: a group's ``part`` under the key ``kind``."""
        out = asdict(self)
        out["groups"] = [{("kind" if k == "part" else k): v for k, v in g.items()} for g in out["groups"]]
        return out


def unit_prefix(names) -> str:
    """The prefix the model's own tensors have in a training unit's state dict ("" for a bare model)."""
    names = list(names)
    return next((p for p in UNIT_PREFIXES if any(n.startswith(p) for n in names)), "")


def place(name: str, prefix: str) -> tuple[str, str, str, str | None]:
    """(name without the unit's prefixes, group, part, sub-block) of the tensor ``name``."""
    if not name.startswith(prefix):  # a module of the unit beside the model: a head, ELECTRA's generator
        return name, name.split(".", 1)[0], "other", None
    key = name[len(prefix) :]
    for inner in INNER_PREFIXES:
        key = key.removeprefix(inner)
    m = LSTM.fullmatch(key)
    if m:
        return key, f"layer {m[2]}", "layer", m[1]
    m = LAYER.fullmatch(key)
    top = key.split(".", 1)[0]
    if m and top not in EMBEDDINGS:  # ELMo's highway layers are chars.highway.layers.N: embeddings
        stack = f"{m[1]} " if m[1] else ""
        return key, f"{stack}layer {m[2]}", "layer", _sub_block(m[3])
    if top in EMBEDDINGS:
        return key, "embeddings", "embeddings", None
    return key, top, "other", None


def _sub_block(rest: str) -> str:
    parts = rest.split(".")
    if any(p.startswith("norm") for p in parts[:-1]):  # norm1, norm2, norm_cross; XLNet's attn.norm, ff.norm
        return "norms"
    return SUB_BLOCKS.get(parts[0], parts[0])


def _placed(state: dict) -> dict[str, tuple[str, str, str | None, str]]:
    """key without prefixes -> (group, part, sub-block, original name)."""
    prefix = unit_prefix(state)
    out = {}
    for name in state:
        key, group, part, sub = place(name, prefix)
        out[key] = (group, part, sub, name)
    return out


def weight_change(a: dict, b: dict, what_a: str = "A", what_b: str = "B") -> WeightChange:
    """The relative change from ``a`` to ``b`` per group (module docstring); ``what_a``/``what_b`` name them
    in errors."""
    pa, pb = _placed(a), _placed(b)
    common = [k for k in pa if k in pb]
    _check_same_architecture(a, b, pa, pb, common, what_a, what_b)
    sums: dict[str, list] = {}  # group -> [part, params, sum a^2, sum d^2, {sub: [sum a^2, sum d^2]}]
    skipped = []
    for key in common:
        group, part, sub, name = pa[key]
        ta, tb = a[name], b[pb[key][3]]
        if not (ta.is_floating_point() and tb.is_floating_point()):
            skipped.append(name)
            continue
        ta, tb = ta.detach().to(torch.float64), tb.detach().to(torch.float64)
        sq_a, sq_d = float(ta.square().sum()), float((tb - ta).square().sum())
        row = sums.setdefault(group, [part, 0, 0.0, 0.0, {}])
        row[1] += ta.numel()
        row[2] += sq_a
        row[3] += sq_d
        if sub is not None:
            acc = row[4].setdefault(sub, [0.0, 0.0])
            acc[0] += sq_a
            acc[1] += sq_d
    groups = [
        Group(name, part, n, math.sqrt(s_a), math.sqrt(s_d), _ratio(s_d, s_a),
              {sub: _ratio(d, s) for sub, (s, d) in subs.items()})
        for name, (part, n, s_a, s_d, subs) in sums.items()
    ]  # fmt: skip
    groups.sort(key=_order)
    return WeightChange(groups, _only(pa, pb), _only(pb, pa), skipped)


def _only(placed: dict, other: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, (group, _, _, name) in placed.items():
        if key not in other:
            out.setdefault(group, []).append(name)
    return out


def _ratio(sq_change: float, sq_a: float) -> float | None:
    if sq_a == 0.0:
        return 0.0 if sq_change == 0.0 else None
    return math.sqrt(sq_change / sq_a)


def _order(g: Group) -> tuple:
    """embeddings, then the layers bottom to top (encoder before decoder), then the rest as they came."""
    if g.part == "embeddings":
        return (0, 0, 0)
    if g.part == "layer":
        stack = g.name.split(" ")[0]
        return (1, {"decoder": 1}.get(stack, 0), int(g.name.rsplit(" ", 1)[1]))
    return (2, 0, 0)


def _check_same_architecture(a, b, pa, pb, common, what_a, what_b) -> None:
    for key in common:
        sa, sb = tuple(a[pa[key][3]].shape), tuple(b[pb[key][3]].shape)
        if sa != sb:
            raise WarmstartError(
                f"{what_a} and {what_b} are not one architecture: {key} is {list(sa)} in one and {list(sb)} "
                "in the other",
                "compare two checkpoints of the same model shape (e.g. a finetuned run and its --init)",
            )
    for key in [k for k in pa if k not in pb] + [k for k in pb if k not in pa]:
        group, part, _, name = pa.get(key) or pb[key]
        if part != "other":  # a layer or an embedding table one of them lacks: another shape
            where = what_a if key in pa else what_b
            raise WarmstartError(
                f"{what_a} and {what_b} are not one architecture: only {where} has {name} ({group})",
                "compare two checkpoints of the same family, depth and embeddings",
            )
