"""Every model family in the registry, at a tiny config derived from its config class
(warmstart.models.tiny), through the same checks: hidden states equal to transformers' on the same weights
(exported by `warmstart export`'s code, where hub/families/ knows the family), parameter counts equal to
transformers' (tiny and default size), a safetensors round trip through the checkpoint loader that changes
no output, and padding that changes no output of the real tokens. A family added to registry.MODELS gets
these checks with no edit here; ``test_a_new_family_gets_the_shared_checks`` registers a toy one to show it.

The checks call a model as the loaders and tasks do: ``model(input_ids, attention_mask=...)``, and an
encoder-decoder (a ``decoder_input_ids`` argument) with ``decoder_input_ids=...`` too.
"""

import dataclasses
import inspect
import json

import pytest
import torch
from torch import nn

from tests.helpers.models import count, real_ids
from warmstart import registry
from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import load_encoder, load_generator
from warmstart.hub.families import FAMILIES
from warmstart.models.tiny import tiny
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.checkpoint import save_weights

TOL, PAD_TOL = 1e-4, 1e-5
LENGTH, PADDING, DECODER = 20, 8, 12


def families() -> list[str]:
    return sorted(registry.MODELS)


def encoder_decoder(model_cls) -> bool:
    return "decoder_input_ids" in inspect.signature(model_cls.forward).parameters


def prefix(name: str) -> str:
    """Where the model's tensors sit in a checkpoint: the hub's name for a family it knows (the encoder's
    ``encoder.``), else the decoders' ``model.``."""
    return FAMILIES[name].unit if name in FAMILIES else "model."


def tiny_model(name: str, vocab_size: int):
    """(config, model in eval mode): the family's tiny config, its matrices drawn wider than the
    initialisation (std 0.3) so that attention is far from uniform, and every vector (norm scales, biases,
    BART's logit bias) moved by noise (std 0.1): a weight mapped to the wrong place shows."""
    config_cls, model_cls = registry.MODELS[name]
    cfg = tiny(config_cls, vocab_size=vocab_size)
    torch.manual_seed(0)
    model = model_cls(cfg).eval()
    with torch.no_grad():
        for t in [*model.parameters(), *(b for b in model.buffers() if b.is_floating_point())]:
            if t.dim() > 1:
                t.normal_(0, 0.3)
            else:
                t.add_(torch.randn_like(t) * 0.1)
    return cfg, model


def inputs(tok, texts, dec_texts):
    """Real ids (2 x LENGTH), an all-ones mask, decoder ids (2 x DECODER)."""
    ids = real_ids(tok, texts, LENGTH)
    return ids, torch.ones_like(ids), real_ids(tok, dec_texts, DECODER)


def forward(model, ids, mask, dec=None, dec_mask=None):
    with torch.no_grad():
        if encoder_decoder(type(model)):
            return model(ids, attention_mask=mask, decoder_input_ids=dec, decoder_attention_mask=dec_mask)
        return model(ids, attention_mask=mask)


def save(name: str, cfg, model, tok, d):
    """A model directory as a run writes it: config.json with the run card, model.safetensors, tokenizer."""
    d.mkdir()
    config = RunCard(arch=name).write(
        {"model_type": name, **dataclasses.asdict(cfg), "pad_token_id": tok.pad_id}
    )
    (d / "config.json").write_text(json.dumps(config))
    holder = nn.Module()
    holder.add_module(prefix(name).rstrip("."), model)
    save_weights(holder, d / "model.safetensors")
    tok.save(d)
    return d


# ------------------------------------------------------------------------------------------- the checks
def check_tiny(name: str) -> None:
    """The derived config is tiny: its model has under 200,000 parameters (a family whose size fields the
    rules in warmstart.models.tiny miss fails here, and names its own in a ``TINY`` class attribute)."""
    config_cls, model_cls = registry.MODELS[name]
    n = count(model_cls(tiny(config_cls, vocab_size=1000)))
    assert n < 200_000, f"tiny({config_cls.__name__}) has {n:,} parameters"


def check_round_trip(name: str, tok, texts, tmp_path) -> None:
    """Saved as safetensors and loaded back by the checkpoint loader, the model gives identical outputs."""
    cfg, model = tiny_model(name, tok.vocab_size)
    d = save(name, cfg, model, tok, tmp_path / "saved")
    load = load_generator if getattr(type(model), "generates", False) else load_encoder
    back = load(d)[0].eval()
    assert type(back) is type(model) and back.config == cfg
    ids, mask, dec = inputs(tok, texts[:2], texts[2:4])
    assert torch.equal(forward(back, ids, mask, dec), forward(model, ids, mask, dec))


def check_padding(name: str, tok, texts) -> None:
    """Padding appended on the right with attention mask 0 changes no output of the real tokens: the
    encoder's padding (mask 0), and for an encoder-decoder also the decoder's (its real positions)."""
    _, model = tiny_model(name, tok.vocab_size)
    ids, mask, dec = inputs(tok, texts[:2], texts[2:4])
    plain = forward(model, ids, mask, dec)
    pad = torch.full((2, PADDING), tok.pad_id)
    padded_ids, padded_mask = torch.cat([ids, pad], 1), torch.cat([mask, torch.zeros_like(pad)], 1)
    out = forward(model, padded_ids, padded_mask, dec)
    keep = slice(None) if encoder_decoder(type(model)) else slice(0, LENGTH)
    assert (out[:, keep] - plain).abs().max() < PAD_TOL
    if encoder_decoder(type(model)):
        dec_pad = torch.full((2, 4), tok.pad_id)
        dec_mask = torch.cat([torch.ones_like(dec), torch.zeros_like(dec_pad)], 1)
        out = forward(model, ids, mask, torch.cat([dec, dec_pad], 1), dec_mask)
        assert (out[:, :DECODER] - plain).abs().max() < PAD_TOL


def check_parity(name: str, tok, texts, tmp_path) -> bool:
    """Exported by `warmstart export`'s code (hub.convert.export_hf) and loaded by transformers' AutoModel,
    the same weights give the same hidden states (within TOL, at the real tokens of a padded batch) and the
    model has as many parameters. False when the hub does not know the family."""
    if name not in FAMILIES:
        return False
    transformers = pytest.importorskip("transformers")
    from warmstart.hub.convert import export_hf

    cfg, model = tiny_model(name, tok.vocab_size)
    out = export_hf(save(name, cfg, model, tok, tmp_path / "ws"), tmp_path / "hf")
    hf = transformers.AutoModel.from_pretrained(out).eval()
    assert count(hf) == count(model)
    ids, mask, dec = inputs(tok, texts[:2], texts[2:4])
    mask[1, LENGTH - 6 :] = 0
    kw = {"decoder_input_ids": dec} if encoder_decoder(type(model)) else {}
    with torch.no_grad():
        theirs = hf(input_ids=ids, attention_mask=mask, **kw).last_hidden_state
    mine = forward(model, ids, mask, dec)
    real = slice(None) if kw else mask.bool()
    assert (theirs - mine)[real].abs().max() < TOL
    return True


def check_default_count(name: str) -> bool:
    """At the family's default (full-size) config, as many parameters as transformers' model of the same
    config (built on the meta device: no memory). False when the hub does not know the family."""
    if name not in FAMILIES:
        return False
    transformers = pytest.importorskip("transformers")
    from warmstart.hub.families.configs import config_to_hf

    config_cls, model_cls = registry.MODELS[name]
    cfg = config_cls()
    hf_config = config_to_hf(name, cfg, {}, FAMILIES[name].hf_class)
    config = transformers.AutoConfig.for_model(**hf_config)
    with torch.device("meta"):
        ours, theirs = model_cls(cfg), transformers.AutoModel.from_config(config)
    assert count(ours) == count(theirs)
    return True


# ------------------------------------------------------------------------------- every registered family
@pytest.fixture(scope="module")
def tok(small_tokenizer):
    return Tokenizer.load(small_tokenizer)


@pytest.mark.parametrize("name", families())
def test_the_tiny_config_is_tiny(name):
    check_tiny(name)


@pytest.mark.parametrize("name", families())
def test_a_safetensors_round_trip_changes_no_output(name, tok, wiki_extracts, tmp_path):
    check_round_trip(name, tok, wiki_extracts, tmp_path)


@pytest.mark.parametrize("name", families())
def test_padding_changes_no_output_of_the_real_tokens(name, tok, wiki_extracts):
    check_padding(name, tok, wiki_extracts)


@pytest.mark.parity
@pytest.mark.parametrize("name", families())
def test_hidden_states_and_parameters_equal_transformers(name, tok, wiki_extracts, tmp_path):
    if not check_parity(name, tok, wiki_extracts, tmp_path):
        pytest.skip(f"transformers has no {name} family warmstart converts (hub/families/)")


@pytest.mark.parity
@pytest.mark.parametrize("name", families())
def test_default_size_has_as_many_parameters_as_transformers(name):
    if not check_default_count(name):
        pytest.skip(f"transformers has no {name} family warmstart converts (hub/families/)")


# ---------------------------------------------------------------------------------- a family added later
@dataclasses.dataclass
class ToyConfig:
    vocab_size: int = 30000
    hidden_size: int = 512
    num_layers: int = 6
    max_position_embeddings: int = 512
    dropout: float = 0.1


class ToyModel(nn.Module):
    """Token and position embeddings, then residual tanh layers; each token on its own (padding-proof)."""

    generates = False

    def __init__(self, config: ToyConfig):
        super().__init__()
        self.config = config
        self.word = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.layers = nn.ModuleList(
            nn.Linear(config.hidden_size, config.hidden_size) for _ in range(config.num_layers)
        )
        self.drop = nn.Dropout(config.dropout)

    def forward(self, input_ids, attention_mask=None):
        x = self.word(input_ids) + self.position(torch.arange(input_ids.shape[1]))
        for layer in self.layers:
            x = x + torch.tanh(layer(self.drop(x)))
        return x


def test_a_new_family_gets_the_shared_checks(monkeypatch, tok, wiki_extracts, tmp_path):
    monkeypatch.setitem(registry.MODELS, "toy", (ToyConfig, ToyModel))
    assert "toy" in families()  # what the tests above are parametrized over
    cfg = tiny(ToyConfig, vocab_size=tok.vocab_size)
    assert (cfg.hidden_size, cfg.num_layers, cfg.max_position_embeddings, cfg.dropout) == (32, 2, 64, 0.1)
    check_tiny("toy")
    check_round_trip("toy", tok, wiki_extracts, tmp_path)
    check_padding("toy", tok, wiki_extracts)
    assert check_parity("toy", tok, wiki_extracts, tmp_path) is False  # transformers has no toy: skipped
    assert check_default_count("toy") is False


def test_a_family_names_its_own_tiny_values():
    @dataclasses.dataclass
    class Odd:
        vocab_size: int = 30000
        width_of_everything: int = 4096
        TINY = {"width_of_everything": 16}

    assert tiny(Odd, vocab_size=100) == Odd(vocab_size=100, width_of_everything=16)
    assert tiny(Odd, width_of_everything=8).width_of_everything == 8  # overrides win
