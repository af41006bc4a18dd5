"""The masked-LM gender template probe (`warmstart fill-mask RUN --bias`): its arithmetic on a model whose
probabilities are set by hand, exact log ratios through a real tiny MLM, the run report's section, and the
one-line refusals (a head never trained, as all-MiniLM-L6-v2's import has; fillers that are not one token)."""

import json
import math
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.models import minilm_dir
from tests.helpers.shapes import TINY_MODEL
from warmstart.analysis import gender_probe as G
from warmstart.checkpoints.load import resolve_checkpoint
from warmstart.data.shard_writer import prepare_shards
from warmstart.inference.fill_mask import FillMask
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import train_tokenizer

pytestmark = pytest.mark.integration

PAIRS = {"he/she": ["[MASK] worked as {a} {occupation}.", "[MASK] wants to become {a} {occupation}."]}


class HandSetModel:
    """FillMask's interface over a real tokenizer; P(he), P(she) at the first mask set by the text:
    doctor 0.4 / 0.1, nurse 0.1 / 0.4, in "wants to become" templates 0.25 / 0.25, the occupation masked
    0.22 / 0.2 (the prior); the rest of the mass spread evenly."""

    def __init__(self, tokenizer):
        self.tokenizer, self.mask_token, self.max_length = tokenizer, "[MASK]", 64
        self.he, self.she = tokenizer.encode("he")[0], tokenizer.encode("she")[0]

    def probabilities(self, text):
        if text.count("[MASK]") == 2:
            p = (0.22, 0.2)
        elif "wants" in text:
            p = (0.25, 0.25)
        else:
            p = {"doctor": (0.4, 0.1), "nurse": (0.1, 0.4)}[text.split()[-1].rstrip(".")]
        probs = torch.full((1, self.tokenizer.vocab_size), (1 - sum(p)) / (self.tokenizer.vocab_size - 2))
        probs[0, self.he], probs[0, self.she] = p
        return [0], probs


@pytest.fixture(scope="module")
def tokenizer(wiki_extracts, tmp_path_factory):
    """WordPiece, 1,500 tokens on 1,500 real extracts: he, she and man are tokens, woman is not."""
    out = tmp_path_factory.mktemp("tokenizer") / "tok1500"
    train_tokenizer(wiki_extracts[:1500], "wordpiece", 1500, out, show_progress=False)
    tok = Tokenizer.load(out)
    assert [len(tok.encode(w)) for w in ("he", "she", "man", "woman")] == [1, 1, 1, 3]
    return out


@pytest.fixture(scope="module")
def tiny_mlm(wiki_extracts, tokenizer, tmp_path_factory):
    """A 2-layer, hidden-32 BERT pretrained by MLM for 6 steps with that tokenizer: a run directory."""
    from warmstart.commands.pretrain import pretrain

    shards = tmp_path_factory.mktemp("shards") / "wiki1500"
    splits = {"train": wiki_extracts[3000:3040], "validation": wiki_extracts[3040:3050]}
    prepare_shards(splits, Tokenizer.load(tokenizer), shards, show_progress=False)
    out = tmp_path_factory.mktemp("pretrained") / "mlm"
    overrides = TINY_MODEL + ["train.batch_size=8", "train.eval_every=6", "train.save_every=6",
                              "train.eval_batches=1", "train.progress=false", "train.lr=1e-3"]  # fmt: skip
    pretrain(None, None, {"out": str(out), "data": {"shards": str(shards)}, "train": {"steps": 6}}, overrides)
    return out


def test_scores_priors_ordering_and_mass(tokenizer):
    result = G.probe_model(HandSetModel(Tokenizer.load(tokenizer)), "hand", ["nurse", "doctor"], PAIRS)
    pair = result["pairs"]["he/she"]
    prior = math.log(1.1)
    assert pair["prior"] == pytest.approx([prior, prior], abs=1e-4)
    doctor, nurse = pair["occupations"]["doctor"], pair["occupations"]["nurse"]
    assert doctor["log_ratio"] == pytest.approx([math.log(4), 0], abs=1e-4)
    assert nurse["corrected"] == pytest.approx([-math.log(4) - prior, -prior], abs=1e-4)
    assert doctor["mass"] == pytest.approx(0.5, abs=1e-6)  # (0.5 + 0.5) / 2 templates
    summary = pair["summary"]
    assert summary["male_leaning"] == 1 and summary["occupations"] == 2
    assert summary["mean_raw"] == pytest.approx(0.0, abs=1e-4)  # log 4 and -log 4 cancel
    assert summary["mean_template_range"] == pytest.approx(math.log(4), abs=1e-4)
    rows = [line.split("|")[1].strip() for line in G.table(result).splitlines()[2:]]
    assert rows == ["doctor", "nurse"]  # most male-leaning first
    assert G.LIMITS in G.notes(result) and result["not_one_token"] == []


def test_log_ratio_through_a_real_mlm_is_the_head_bias_when_the_fillers_share_an_embedding(
    tiny_mlm, tokenizer, tmp_path
):
    """With he's and she's (tied) embedding rows made equal, their logits differ only by the head's output
    bias: log P(he) - log P(she) is that difference in every template, and the prior cancels it."""
    run_dir = tmp_path / "mlm"
    shutil.copytree(tiny_mlm, run_dir)
    weights = resolve_checkpoint(run_dir) / "model.safetensors"
    state = load_file(str(weights))
    he, she = (Tokenizer.load(tokenizer).encode(w)[0] for w in ("he", "she"))
    state["encoder.embeddings.word.weight"][she] = state["encoder.embeddings.word.weight"][he]
    state["head.bias"][he] = state["head.bias"][she] + math.log(3)
    save_file(state, str(weights))
    result = G.gender_probe(str(run_dir), occupations=["nurse", "doctor", "engineer", "librarian"])
    assert result["not_one_token"] == ["man/woman"] and list(result["pairs"]) == ["he/she"]
    for occupation, row in result["pairs"]["he/she"]["occupations"].items():
        assert row["log_ratio"] == pytest.approx([math.log(3)] * 3, abs=1e-3), occupation
        assert row["corrected"] == pytest.approx([0.0] * 3, abs=1e-3), occupation
    model = FillMask(str(run_dir))
    sums = [
        model.probabilities(t.format(a="a", occupation="nurse"))[1][0, [he, she]].sum()
        for t in G.PAIRS["he/she"]
    ]
    mass = result["pairs"]["he/she"]["occupations"]["nurse"]["mass"]
    assert 0 < mass < 1 and mass == pytest.approx(float(sum(sums)) / 3, abs=2e-6)


def test_cli_writes_the_result_the_run_report_shows(tiny_mlm, tmp_path, capsys):
    run_dir = tmp_path / "mlm"
    shutil.copytree(tiny_mlm, run_dir)
    code, out, _ = run(capsys, "fill-mask", run_dir, "--bias")
    assert code == 0 and "| occupation | he/she: mean | he/she: range |" in out and "Limits:" in out
    data = json.loads((run_dir / G.FILE).read_text())
    assert len(data["pairs"]["he/she"]["occupations"]) == len(G.OCCUPATIONS)
    code, out, _ = run(capsys, "report", run_dir)
    assert code == 0
    page = (run_dir / "report.md").read_text()
    assert "## Gender template probe" in page and "| nurse |" in page and G.LIMITS in page


def test_refusals_are_one_line(tiny_mlm, tiny_pretrained, tmp_path, capsys):
    code, _, err = run(capsys, "fill-mask", tiny_pretrained, "--bias", "--out", tmp_path / "p.json")
    assert_one_line_error(code, err, "none of the filler pairs he/she, man/woman is one token each")
    fresh = tmp_path / "fresh"
    shutil.copytree(tiny_mlm, fresh)
    weights = resolve_checkpoint(fresh) / "model.safetensors"
    state = load_file(str(weights))
    state["head.norm.weight"].fill_(1)
    for key in ("head.norm.bias", "head.bias"):
        state[key].zero_()
    save_file(state, str(weights))
    code, _, err = run(capsys, "fill-mask", fresh, "--bias")
    assert_one_line_error(code, err, "masked-LM head that was never trained")
    assert not (fresh / G.FILE).exists()
    code, _, err = run(capsys, "fill-mask", tiny_mlm, "a [MASK] text", "--bias")
    assert_one_line_error(code, err, "--bias takes no texts")


def test_minilm_has_no_mlm_head(capsys):
    code, _, err = run(capsys, "fill-mask", minilm_dir(), "--bias")
    assert_one_line_error(code, err, "never trained", "all-MiniLM-L6-v2 ships no MLM head")
