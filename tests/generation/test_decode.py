"""Generation: the KV cache changes nothing, batching changes nothing, the strategies agree where they must,
EOS and the length caps stop rows, and impossible requests are WarmstartErrors."""

import io
from collections import Counter
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig, generate, prompt_ids
from warmstart.generation.streamer import Streamer
from warmstart.models.bart import BartConfig, BartModel
from warmstart.models.gpt2 import GPT2Config, GPT2Model
from warmstart.models.t5 import T5Config, T5Model
from warmstart.registry import family

V, EOS, PAD, START = 97, 2, 1, 0
PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [12, 13], [20, 21, 22, 23]]  # different lengths: padding is exercised


class UntiedBart(BartModel):
    """BART with a random output head: a tied head on random weights copies its input token forever,
    which would make every check below pass trivially. The decoder, cross-attention and cache are BART's."""

    def __init__(self, config):
        super().__init__(config)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        nn.init.normal_(self.head.weight)

    def lm_logits(self, hidden):
        return self.head(hidden)


def gpt2():
    torch.manual_seed(0)  # a wide init so that the logits differ clearly between tokens
    cfg = GPT2Config(vocab_size=V, n_positions=64, n_embd=32, n_layer=2, n_head=2, initializer_range=0.5)
    return GPT2Model(cfg)


def t5(ff: str):
    torch.manual_seed(0)
    cfg = T5Config(vocab_size=V, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                   feed_forward_proj=ff, tie_word_embeddings=False)  # fmt: skip
    return T5Model(cfg)


def bart():
    torch.manual_seed(0)
    cfg = BartConfig(vocab_size=V, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                     decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                     max_position_embeddings=64, init_std=0.2)  # fmt: skip
    return UntiedBart(cfg)


MODELS = {"gpt2": gpt2, "t5-gated": lambda: t5("gated-gelu"), "t5-relu": lambda: t5("relu"), "bart": bart}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request):
    return MODELS[request.param]()


def gen(model, prompts=PROMPTS, eos=EOS, **kw):
    kw.setdefault("max_new_tokens", 10)
    return generate(model, prompts, GenerationConfig(**kw), eos_id=eos, pad_id=PAD, decoder_start_id=START)


def logprob(model, prompt, new) -> float:
    """Teacher-forced sum of log-probs of ``new`` after ``prompt``."""
    model.eval()
    with torch.no_grad():
        if isinstance(model, GPT2Model):
            hidden, _ = model.decode(torch.tensor([prompt + new]))
            logits = model.lm_logits(hidden)[0, len(prompt) - 1 : -1]
        else:
            memory = model.encode(torch.tensor([prompt]))
            hidden, _ = model.decode(torch.tensor([[START] + new[:-1]]), memory)
            logits = model.lm_logits(hidden)[0]
    return logits.log_softmax(-1).gather(1, torch.tensor(new)[:, None]).sum().item()


STRATEGIES = [dict(strategy="greedy"), dict(strategy="sample", top_k=20, top_p=0.9, temperature=0.8),
              dict(strategy="beam", num_beams=3)]  # fmt: skip


@pytest.mark.parametrize("opts", STRATEGIES, ids=lambda o: o["strategy"])
def test_cache_gives_the_same_tokens_as_recomputing(model, opts):
    cached = gen(model, **opts)
    assert cached == gen(model, use_cache=False, **opts)
    assert all(len(row) == 10 for row in cached)  # EOS (2) is unlikely here: the rows run to the limit
    assert len({tuple(row) for row in cached}) == 3  # the prompts matter


@pytest.mark.parametrize("opts", STRATEGIES[::2], ids=lambda o: o["strategy"])
def test_each_row_of_a_padded_batch_equals_that_prompt_alone(model, opts):
    batch = gen(model, **opts)
    assert batch == [gen(model, [p], **opts)[0] for p in PROMPTS]


def test_rows_stop_at_eos_and_the_others_go_on(model):
    free = gen(model, eos=None)
    eos = free[0][3]  # a token row 0 produces: make it the end-of-sequence token
    for cache in (True, False):
        out = gen(model, eos=eos, use_cache=cache)
        assert out == [row[: row.index(eos)] if eos in row else row for row in free]
    assert len(out[0]) <= 3
    assert gen(model, eos=eos, stop_on_eos=False) == free


def test_top_k_1_and_a_tiny_top_p_are_greedy(model):
    greedy = gen(model)
    assert gen(model, strategy="sample", top_k=1, temperature=5.0, seed=3) == greedy
    assert gen(model, strategy="sample", top_p=1e-6, temperature=5.0, seed=4) == greedy


def test_sampling_follows_the_seed(model):
    a = gen(model, strategy="sample", seed=1, temperature=2.0)
    assert a == gen(model, strategy="sample", seed=1, temperature=2.0)
    assert a != gen(model, strategy="sample", seed=2, temperature=2.0)
    assert a != gen(model)


def test_one_beam_is_greedy(model):
    assert gen(model, strategy="beam", num_beams=1, length_penalty=0.0) == gen(model)
    free = gen(model, eos=None)
    eos = free[0][3]  # with an EOS that ends row 0 early, and no length penalty
    assert gen(model, eos=eos, strategy="beam", num_beams=1, length_penalty=0.0) == gen(model, eos=eos)


def test_beam_search_finds_a_sequence_at_least_as_likely_as_greedy(model):
    greedy = gen(model, eos=None)
    beam = gen(model, eos=None, strategy="beam", num_beams=4, length_penalty=0.0)
    for prompt, g, b in zip(PROMPTS, greedy, beam):
        assert len(b) == 10
        assert logprob(model, prompt, b) >= logprob(model, prompt, g) - 1e-4
    assert beam != greedy  # the search did something


def test_beam_search_with_eos_ends_hypotheses_and_respects_the_limit(model):
    free = gen(model, eos=None)
    eos = free[1][2]
    out = gen(model, eos=eos, strategy="beam", num_beams=3, max_new_tokens=8)
    assert all(eos not in row and len(row) <= 8 for row in out)
    assert out == gen(model, eos=eos, strategy="beam", num_beams=3, max_new_tokens=8, use_cache=False)


class Scripted(nn.Module):
    """A stand-in decoder whose logits force ``script`` after a prompt of ``prompt_len`` tokens, then EOS
    (to test the stopping mechanism, not a model)."""

    def __init__(self, script, prompt_len, n_positions=64):
        super().__init__()
        self.script, self.prompt_len = script, prompt_len
        self.config = SimpleNamespace(n_positions=n_positions)

    def decode(self, input_ids, attention_mask=None, past=None, position_ids=None):
        b, t = input_ids.shape
        total = (past[0][0][0].shape[2] if past else 0) + t
        made = attention_mask.sum(-1) - self.prompt_len  # tokens generated so far, per row
        hidden = torch.zeros(b, t, V)
        for i, n in enumerate(made.tolist()):
            hidden[i, -1, self.script[n] if n < len(self.script) else EOS] = 10.0
        kv = torch.zeros(b, 1, total, 1)
        return hidden, [((kv, kv), None)]

    def lm_logits(self, hidden):
        return hidden


@pytest.mark.parametrize("strategy", ["greedy", "sample", "beam"])
def test_a_forced_answer_comes_out_exactly_and_stops_at_eos(strategy):
    model = Scripted([40, 41, 42], prompt_len=3)
    steps = []
    out = generate(model, [[7, 8, 9]], GenerationConfig(strategy=strategy, max_new_tokens=10),
                   eos_id=EOS, pad_id=PAD, on_step=steps.append)  # fmt: skip
    assert out == [[40, 41, 42]]
    if strategy != "beam":
        assert steps == [[40], [41], [42], [EOS]]


def test_max_new_tokens_and_max_length_cut_a_forced_answer():
    model = Scripted(list(range(30, 50)), prompt_len=3)
    for strategy in ("greedy", "beam"):
        cut = generate(model, [[7, 8, 9]], GenerationConfig(strategy=strategy, max_new_tokens=4), eos_id=EOS,
                       pad_id=PAD)  # fmt: skip
        assert cut == [[30, 31, 32, 33]]
        cfg = GenerationConfig(strategy=strategy, max_new_tokens=10, max_length=5)
        assert generate(model, [[7, 8, 9]], cfg, eos_id=EOS, pad_id=PAD) == [[30, 31]]


def test_finished_rows_are_padded_in_on_step():
    model = Scripted([40], prompt_len=2)
    steps = []
    out = generate(model, [[7, 8], [9, 10]], GenerationConfig(max_new_tokens=3), eos_id=EOS, pad_id=PAD,
                   on_step=steps.append)  # fmt: skip
    assert out == [[40], [40]]
    assert steps == [[40, 40], [EOS, EOS]]


@pytest.mark.parametrize(
    "opts,needle",
    [
        (dict(strategy="nucleus"), "strategy"),
        (dict(temperature=0.0, strategy="sample"), "temperature"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=1.5), "top_p"),
        (dict(top_k=-1), "top_k"),
        (dict(num_beams=0), "num_beams"),
        (dict(max_new_tokens=0), "max_new_tokens"),
        (dict(max_length=0), "max_length"),
    ],
)
def test_bad_options_are_refused(opts, needle):
    with pytest.raises(WarmstartError) as e:
        GenerationConfig(**opts)
    assert needle in e.value.problem and e.value.fix


def test_prompts_the_model_cannot_hold_are_refused():
    model = gpt2()
    cases = [
        ([list(range(5, 70))], {}, "more than the model's context of 64"),
        ([list(range(5, 40))], dict(max_new_tokens=40), "lower max_new_tokens to 29"),
        ([[5, 6, 7, 8]], dict(max_length=3), "max_length 3"),
        ([[5, 6], []], {}, "prompt 2 is empty"),
    ]
    for prompts, opts, needle in cases:
        with pytest.raises(WarmstartError, match=needle):
            generate(model, prompts, GenerationConfig(**opts), eos_id=EOS, pad_id=PAD)
    with pytest.raises(WarmstartError, match="70 tokens, more than"):
        gen(bart(), [list(range(3, 73))])
    with pytest.raises(WarmstartError, match="decoder start"):
        generate(t5("relu"), PROMPTS, GenerationConfig(), eos_id=EOS, pad_id=PAD)


def test_a_batch_too_long_together_is_done_one_by_one():
    model = gpt2()  # 60 + 4 and 3 + 40 fit the 64 positions, but not left-padded together (60 + 40)
    prompts = [list(range(3, 63)), [5, 6, 7]]
    cfg = GenerationConfig(max_new_tokens=40, max_length=64)
    out = generate(model, prompts, cfg, eos_id=None, pad_id=PAD)
    assert [len(r) for r in out] == [4, 40]
    assert out[1] == generate(model, [prompts[1]], cfg, eos_id=None, pad_id=PAD)[0]


def test_generate_leaves_the_model_mode_and_takes_no_gradients():
    model = gpt2().train()
    gen(model, [[5, 6]], max_new_tokens=2)
    assert model.training
    assert all(p.grad is None for p in model.parameters())


def test_prompt_ids_mark_the_text_as_each_family_saw_it():
    tok = SimpleNamespace(encode=lambda text: [10, 11], eos_id=2, bos_id=0, doc_sep_id=2)
    assert prompt_ids(tok, "x", family("gpt2").model) == [2, 10, 11]
    assert prompt_ids(tok, "x", family("t5").model) == [10, 11, 2]
    assert prompt_ids(tok, "x", family("bart").model) == [0, 10, 11, 2]


def test_streaming_holds_back_partial_characters(wiki_extracts, tmp_path):
    from warmstart.tokenization.train import train_tokenizer

    tok = train_tokenizer(wiki_extracts[:200], "bpe", 400, tmp_path / "tok", show_progress=False)
    prefix = prompt_ids(tok, "Café", family("gpt2").model)
    ids = tok.encode(" naïve 🙂 déjà vu")
    assert len(ids) > len(" naïve 🙂 déjà vu".split())  # some characters span several byte tokens
    out = io.StringIO()
    streamer = Streamer(tok, prefix, out, skip_special=True)
    for i in ids:
        streamer.add(i)
        assert "\ufffd" not in out.getvalue()
    streamer.finish()
    assert out.getvalue() == " naïve 🙂 déjà vu\n"
    shown = io.StringIO()
    special = Streamer(tok, [], shown, skip_special=False)
    for i in [tok.token_to_id("<mask>"), *tok.encode(" x")]:
        special.add(i)
    assert shown.getvalue() == "<mask> x"


@pytest.mark.parametrize("penalty", [1.0, 0.0, -1.0])
def test_beam_search_stops_early_only_when_nothing_can_beat_the_finished(penalty, monkeypatch):
    import warmstart.generation.beam_search as bs

    model, eos, calls = gpt2(), 50, []
    boost = torch.zeros(V)
    boost[eos] = 4.0  # EOS often among the candidates: hypotheses finish at many lengths
    lm_logits = model.lm_logits
    monkeypatch.setattr(model, "lm_logits", lambda h: calls.append(1) or lm_logits(h) + boost)
    opts = dict(eos=eos, strategy="beam", num_beams=3, length_penalty=penalty, max_new_tokens=12)
    early = gen(model, **opts)
    n_early = len(calls)
    monkeypatch.setattr(bs, "_bound", lambda *a: float("inf"))  # never stop early: run to the limit
    assert gen(model, **opts) == early
    assert n_early < len(calls) - n_early  # it did stop early


class Bigram(nn.Module):
    """A stand-in decoder whose next-token log-probs depend only on the last token: ``table[last]``."""

    def __init__(self, table):
        super().__init__()
        self.logp = torch.tensor(table).log()
        self.config = SimpleNamespace(n_positions=64)

    def decode(self, input_ids, attention_mask=None, past=None, position_ids=None):
        total = (past[0][0][0].shape[2] if past else 0) + input_ids.shape[1]
        kv = torch.zeros(input_ids.shape[0], 1, total, 1)
        return nn.functional.one_hot(input_ids, len(self.logp)).float(), [((kv, kv), None)]

    def lm_logits(self, hidden):
        return hidden @ self.logp


def test_beam_search_goes_on_while_a_longer_hypothesis_can_still_win():
    # after the prompt token 0: EOS (1) 0.6, token 2 0.4; then 2 -> 2 almost surely. The finished [EOS]
    # scores log 0.6 = -0.51; [2] * 10 scores (log 0.4 + 9 log 0.999) / 10 = -0.09 with the length
    # penalty 1 (a stop judged at the current length, -0.92 / 1, would give up on it), and -0.93 without.
    table = [[1e-6, 0.6, 0.4, 1e-6], [0.25] * 4, [1e-6, 0.001, 0.999 - 2e-6, 1e-6], [0.25] * 4]
    model = Bigram(table)
    for penalty, best in ((1.0, [2] * 10), (0.0, []), (-1.0, [])):
        cfg = GenerationConfig(strategy="beam", num_beams=1, length_penalty=penalty, max_new_tokens=10)
        assert generate(model, [[0]], cfg, eos_id=1, pad_id=3) == [best]


def test_beam_search_goes_on_while_a_running_beam_beats_a_finished_one():
    # num_beams 2. Step 1: [EOS] finishes (log 0.3 = -1.2), beams [2] and [3]. Step 2: [3, EOS] finishes
    # (-2.3): two finished, but the running [2, 2] (-0.52) still beats them, and [2] * 10 ends at -0.6.
    e = 1e-6
    table = [[e, 0.3, 0.6, 0.1, e], [0.2] * 5, [e, 0.01, 0.99, e, e], [e, 1.0, e, e, e], [0.2] * 5]
    cfg = GenerationConfig(strategy="beam", num_beams=2, length_penalty=0.0, max_new_tokens=10)
    assert generate(Bigram(table), [[0]], cfg, eos_id=1, pad_id=4) == [[2] * 10]


@pytest.mark.parametrize(
    "opts,allowed",
    [
        (dict(), 4),
        (dict(top_k=2), 2),
        (dict(top_p=0.65), 2),
        (dict(top_p=0.75), 3),
        (dict(top_k=3, top_p=0.95), 3),
        (dict(temperature=0.5), 4),
        (dict(temperature=2.0, top_k=3), 3),
    ],
)
def test_sampling_draws_from_the_kept_tokens_in_proportion(opts, allowed):
    probs = torch.tensor([0.4, 0.3, 0.2, 0.1, 1e-9, 1e-9])  # after token 5; EOS is 4
    model = Bigram([[1 / 6] * 6] * 5 + [probs.tolist()])
    cfg = GenerationConfig(strategy="sample", max_new_tokens=1, seed=7, **opts)
    counts = Counter(row[0] for row in generate(model, [[5]] * 4000, cfg, eos_id=4, pad_id=5))
    assert sorted(counts) == list(range(allowed))
    expected = probs[:allowed] ** (1 / cfg.temperature)  # temperature first, then the filters
    expected /= expected.sum()
    for token in range(allowed):
        assert abs(counts[token] / 4000 - expected[token].item()) < 0.03
