"""The generation options added for Hugging Face habits (issue 37): repetition_penalty as transformers
applies it (checked against transformers' own generate on the same weights), num_return_sequences (several
draws, the best beams) and stop strings, with their refusals."""

import pytest
import torch

from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig, cut_at_stop, generate, penalize
from warmstart.models.gpt2 import HF_KEYS, HF_TRANSPOSED, GPT2Config, GPT2Model
from warmstart.models.keymap import from_hf

transformers = pytest.importorskip("transformers")

V, EOS, PAD = 97, 2, 1
PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [12, 13]]


def tiny_pair():
    """transformers' GPT-2 and warmstart's with the same random weights (wide init: clear winners)."""
    kw = dict(vocab_size=V, n_positions=64, n_embd=32, n_layer=2, n_head=2)
    torch.manual_seed(0)
    hf_cfg = transformers.GPT2Config(**kw, initializer_range=0.5, bos_token_id=EOS, eos_token_id=EOS)
    hf = transformers.GPT2LMHeadModel(hf_cfg).eval()
    ours = GPT2Model(GPT2Config(**kw)).eval()
    ours.load_state_dict(from_hf(hf.state_dict(), HF_KEYS, [], 2, "transformer.", HF_TRANSPOSED), strict=True)
    return hf, ours


def gen(model, prompts=PROMPTS, **kw):
    kw.setdefault("max_new_tokens", 12)
    return generate(model, prompts, GenerationConfig(**kw), eos_id=None, pad_id=PAD)


def test_penalize_equals_transformers_repetition_penalty():
    torch.manual_seed(1)
    logits, ids = torch.randn(3, V) * 4, torch.randint(0, V, (3, 9))
    mask = torch.ones_like(ids)
    theirs = transformers.RepetitionPenaltyLogitsProcessor(1.3)(ids, logits.clone())
    assert torch.allclose(penalize(logits, ids, mask, 1.3), theirs)
    mask[0, :4] = 0  # left padding: those ids are not in the row
    padded_only = set(ids[0, :4].tolist()) - set(ids[0, 4:].tolist())
    out = penalize(logits, ids, mask, 1.3)
    assert all(out[0, t] == logits[0, t] for t in padded_only) and padded_only


@pytest.mark.parametrize("penalty", [1.0, 1.5, 3.0])
def test_greedy_with_a_repetition_penalty_equals_transformers(penalty):
    hf, ours = tiny_pair()
    prompt = PROMPTS[0]
    with torch.no_grad():
        theirs = hf.generate(torch.tensor([prompt]), max_new_tokens=12, do_sample=False,
                             repetition_penalty=penalty, pad_token_id=PAD, eos_token_id=None)  # fmt: skip
    (mine,) = gen(ours, [prompt], repetition_penalty=penalty)
    assert mine == theirs[0, len(prompt) :].tolist()
    if penalty == 3.0:
        assert mine != gen(ours, [prompt])[0]  # the penalty changed the text


def test_num_return_sequences_draws_and_beams():
    _, ours = tiny_pair()
    drawn = gen(ours, strategy="sample", num_return_sequences=3, seed=4)
    assert len(drawn) == 6 and len({tuple(x) for x in drawn[:3]}) > 1  # 3 different draws per prompt
    assert drawn == gen(ours, strategy="sample", num_return_sequences=3, seed=4)  # the seed decides
    beams = gen(ours, strategy="beam", num_beams=4, num_return_sequences=2, length_penalty=0.0)
    best = gen(ours, strategy="beam", num_beams=4, length_penalty=0.0)
    assert len(beams) == 4 and [beams[0], beams[2]] == best  # the best beam first, prompt by prompt
    assert beams[0] != beams[1]


def test_stop_strings_end_rows_early_and_cut_the_text():
    _, ours = tiny_pair()
    full = gen(ours)[0]
    stop_token = full[4]
    text_of = lambda tokens: " ".join(f"t{t}" for t in tokens)  # noqa: E731
    cfg = GenerationConfig(max_new_tokens=12, stop=[f"t{stop_token}"])
    out = generate(ours, PROMPTS, cfg, eos_id=None, pad_id=PAD, text_of=text_of)[0]
    assert out == full[: full.index(stop_token) + 1]  # generation ended at the stop string
    assert cut_at_stop(text_of(out), cfg.stop) == text_of(out[:-1]) + " "
    assert cut_at_stop("abc", ["x", ""]) == "abc" and cut_at_stop("a. b. c", ["c", ". "]) == "a"


@pytest.mark.parametrize(
    "opts, needle",
    [
        (dict(num_return_sequences=2), "greedy decoding would give 2 copies"),
        (dict(strategy="beam", num_beams=2, num_return_sequences=3), "set num_beams=3"),
        (dict(repetition_penalty=0.0), "repetition_penalty must be above 0"),
        (dict(stop=[""]), "stop must be a list of non-empty strings"),
    ],
)
def test_impossible_options_are_refused(opts, needle):
    with pytest.raises(WarmstartError, match=needle):
        GenerationConfig(**opts)
