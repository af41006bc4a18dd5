"""ELECTRA's generator through `warmstart import` / `warmstart export`.

A warmstart electra run holds the generator beside the discriminator (``generator.*``, ``generator_head.*``),
reading the discriminator's embeddings (``encoder.embeddings.*``), so it has none of its own. transformers
keeps it as a separate ElectraForMaskedLM with its own copy of the embeddings. Export writes it to
OUT/generator/ (config.json with the generator's widths, heads and depth, embedding_size the shared width);
import takes it from SRC/generator/ (or ``--generator DIR``) beside an ElectraForPreTraining and restores the
electra run, the generator's embeddings required equal to the discriminator's. An ElectraForMaskedLM alone
imports as a masked-LM run (the family variant ``("electra", "mlm")``) and such a run exports back to it.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from warmstart.hub.families import VARIANTS
from warmstart.hub.families.base import refuse
from warmstart.hub.families.configs import config_from_hf, config_to_hf
from warmstart.hub.tensors import from_hf_state, to_hf_state
from warmstart.models.bert import BertModel, embedding_width
from warmstart.objectives.mlm import MaskedLM, MLMConfig
from warmstart.objectives.replaced_token import ElectraConfig, generator_config, generator_section

GENERATOR = {"generator.": "encoder.", "generator_head.": "head."}  # electra unit -> masked-LM unit names
SHARED = "encoder.embeddings."
FAMILY = VARIANTS[("electra", "mlm")]
SAME = ("vocab_size", "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "hidden_act")


def as_masked_lm(state: dict) -> dict:
    """An electra unit's generator as a masked-LM unit's tensors, the shared embeddings included."""
    out = {k: v for k, v in state.items() if k.startswith(SHARED)}
    for ours, mlm in GENERATOR.items():
        out.update({mlm + k[len(ours) :]: v for k, v in state.items() if k.startswith(ours)})
    return out


def _check_fit(g, mlm: dict, where) -> None:
    with torch.device("meta"):
        want = {k: v.shape for k, v in MaskedLM(BertModel(g), MLMConfig()).state_dict().items()}
    bad = [k for k, shape in want.items() if k not in mlm or mlm[k].shape != shape]
    refuse(bool(bad), f"the generator weights in {where} do not fit its shape: {', '.join(bad[:3])}",
           "pass a run written by warmstart")  # fmt: skip


def export_generator(cfg, card, state: dict, run_config: dict, where) -> tuple[dict, dict] | None:
    """(config.json, tensors) of the electra run's generator as transformers' ElectraForMaskedLM; None (said
    in a warning) when its head's activation is not transformers' gelu. Its shape comes from the run's
    recorded ``electra`` section (older runs: the width fraction its weights show)."""
    if cfg.hidden_act != "gelu":
        warnings.warn(f"the generator is not exported: transformers' ElectraForMaskedLM head runs gelu, this "
                      f"model {cfg.hidden_act}", stacklevel=3)  # fmt: skip
        return None
    mlm = as_masked_lm(state)
    up = mlm.get("encoder.layers.0.mlp.up.weight")
    refuse(up is None, f"{where} lacks the generator's weights", "pass a run written by warmstart")
    layers = len({k.split(".")[2] for k in mlm if k.startswith("encoder.layers.")})
    shape = {"hidden_size": up.shape[1], "intermediate_size": up.shape[0], "num_hidden_layers": layers}
    recorded = card.sections.get("electra")
    if recorded:
        names = {f.name for f in dataclasses.fields(ElectraConfig)}
        recorded = ElectraConfig(**{k: v for k, v in recorded.items() if k in names})
    section = generator_section(cfg, shape, recorded)
    refuse(section is None, f"the generator in {where} has a shape no electra.generator_size gives",
           "pass a run written by warmstart")  # fmt: skip
    g = generator_config(cfg, section)
    _check_fit(g, mlm, where)
    return config_to_hf("electra", g, run_config, FAMILY.hf_class), to_hf_state(FAMILY, g, mlm)


@dataclass
class Generator:
    """An ElectraForMaskedLM read to join a discriminator: the electra section that gives its shape, its
    warmstart config and its canonical transformers tensors."""

    section: ElectraConfig
    cfg: object
    state: dict
    where: Path

    def weights(self, unit_state: dict, disc: dict) -> dict:
        """The electra unit's generator.* and generator_head.* tensors; the generator's embeddings must equal
        the discriminator's (``disc``: its unit tensors), which warmstart's generator reads."""
        mlm, _, _ = from_hf_state(FAMILY, self.cfg, self.state, as_masked_lm(unit_state), self.where)
        differ = [k for k in mlm if k.startswith(SHARED) and not torch.equal(mlm[k], disc[k])]
        first = differ[0] if differ else ""
        refuse(bool(differ), f"{self.where}: the generator's embeddings ({first}) differ from the "
               "discriminator's, which warmstart's generator shares",
               "import the discriminator alone, or the generator alone (a masked LM)")  # fmt: skip
        back = {mlm_name: ours for ours, mlm_name in GENERATOR.items()}
        return {back[p] + k[len(p) :]: v for k, v in mlm.items() if not k.startswith(SHARED)
                for p in back if k.startswith(p)}  # fmt: skip


def read_generator(hf: dict, state: dict, where: Path, disc) -> Generator:
    """The generator in the transformers directory ``where`` (config.json ``hf``, canonical tensors
    ``state``) of the discriminator whose warmstart config is ``disc``; refused in one line when it is no
    ElectraForMaskedLM or does not fit the discriminator as warmstart's generator does."""
    refuse(hf.get("model_type") != "electra" or "generator_predictions.dense.weight" not in state,
           f"{where} holds no ElectraForMaskedLM (the generator beside an ELECTRA discriminator)",
           "pass the generator's directory, e.g. a download of google/electra-small-generator")  # fmt: skip
    g = config_from_hf("electra", hf, state)
    odd = [f"{k} {getattr(g, k)} (discriminator: {getattr(disc, k)})" for k in SAME
           if getattr(g, k) != getattr(disc, k)]  # fmt: skip
    if embedding_width(g) != embedding_width(disc):
        odd.append(f"embedding_size {embedding_width(g)} (discriminator: {embedding_width(disc)})")
    refuse(bool(odd), f"the generator in {where} does not fit the discriminator: {'; '.join(odd)}",
           "pass the generator trained with this discriminator")  # fmt: skip
    fields = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    section = generator_section(disc, {k: getattr(g, k) for k in fields})
    refuse(section is None, f"the generator in {where} (hidden {g.hidden_size}, {g.num_attention_heads} "
           f"heads, FFN {g.intermediate_size}) is not the width fraction of the discriminator that "
           "electra.generator_size makes", "import the discriminator or the generator alone")  # fmt: skip
    return Generator(section, generator_config(disc, section), state, where)
