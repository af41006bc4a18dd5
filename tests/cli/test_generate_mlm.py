"""Issue 40, part 2: `warmstart generate` on a masked-LM run (the session's tiny pretrained BERT):
left-to-right (append [MASK], fill it) and Gibbs-style resampling (Wang & Cho 2019), greedy and sampled."""

import pytest
import torch

from tests.helpers.cli import assert_one_line_error, run
from warmstart.generation.decode import GenerationConfig
from warmstart.inference.fill_mask import FillMask
from warmstart.inference.mlm_generate import MaskedGenerator

PROMPT = "The city of"


@pytest.fixture(scope="module")
def writer(tiny_pretrained):
    return MaskedGenerator.from_run(tiny_pretrained, device="cpu")


def _new(writer, sampling, strategy="greedy", seed=0, n=6):
    cfg = GenerationConfig(strategy=strategy, seed=seed, max_new_tokens=n)
    prompt = writer.tokenizer.encode(PROMPT)
    return writer.generate(prompt, n, cfg, sampling, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("sampling", ["left-to-right", "gibbs"])
def test_both_samplings_write_the_tokens_asked_seeded_and_never_special(writer, sampling):
    special = writer.tokenizer.special_ids
    for strategy in ("greedy", "sample"):
        new = _new(writer, sampling, strategy, seed=3)
        assert len(new) == 6 and not special & set(new), (strategy, new)
        assert _new(writer, sampling, strategy, seed=3) == new  # the same seed, the same tokens
    draws = {tuple(_new(writer, sampling, "sample", seed=s)) for s in range(4)}
    assert len(draws) > 1  # sampling draws: seeds differ


def test_greedy_left_to_right_is_a_hand_loop_over_fill_mask(tiny_pretrained, writer):
    """Each token greedy left-to-right writes is the best guess (no special token) of the fill-mask model,
    loaded on its own, for a [MASK] after the ids so far, up to ties: the tiny model's top scores can differ
    by less than the float noise of two forward passes (a 1-thread worker against 2 threads). On ids, not
    text: a decoded text does not always encode back to the same ids."""
    fill = FillMask(tiny_pretrained, device="cpu")
    tok, special = fill.tokenizer, sorted(fill.tokenizer.special_ids)
    prompt, written = tok.encode(PROMPT), _new(writer, "left-to-right", n=5)
    assert len(written) == 5
    for k, token in enumerate(written):
        ids = torch.tensor([[tok.cls_id, *prompt, *written[:k], tok.mask_id, tok.sep_id]])
        with torch.no_grad():
            probs = fill.head(fill.encoder(ids, None, torch.zeros_like(ids))[0, -2]).float().softmax(-1)
        probs[special] = -1.0
        assert probs[token] >= probs.max() - 1e-5, (k, token, probs.topk(3))


def test_the_command_line_generates_from_an_mlm_run(capsys, tiny_pretrained):
    base = ["generate", tiny_pretrained, "--prompt", PROMPT, "--max-new-tokens", "4", "--show-special"]
    for extra in (
        [],
        ["--mlm-sampling", "gibbs", "--mlm-sweeps", "2", "--strategy", "sample", "--seed", "5"],
    ):
        code, out, err = run(capsys, *base, *extra)
        assert code == 0, err
        assert out.startswith(PROMPT) and len(out) > len(PROMPT) + 1 and out.count("\n") == 1
        assert not any(t in out for t in ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"))
        code, again, _ = run(capsys, *base, *extra)
        assert code == 0 and again == out


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--strategy", "beam"], "beam search is not available for a masked LM"),
        (["--mlm-sampling", "backwards"], "unknown --mlm-sampling 'backwards'"),
        (["--mlm-sampling", "gibbs", "--mlm-sweeps", "0"], "--mlm-sweeps must be at least 1"),
        (["--max-new-tokens", "500"], "exceed the model's 128 positions"),
    ],
)
def test_what_a_masked_lm_cannot_do_is_one_line(capsys, tiny_pretrained, extra, needle):
    code, _, err = run(capsys, "generate", tiny_pretrained, "--prompt", PROMPT, *extra)
    assert_one_line_error(code, err, needle)
