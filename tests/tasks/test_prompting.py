"""Few-shot prompting: label scores are the label words' summed log-probabilities (checked by hand, padding
included); an induction model that copies what followed the same context follows the demonstrations, and
flips with them; overlong prompts lose their oldest demonstrations; a tiny gpt2 run end to end and by CLI."""

import json
import random
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.helpers.cli import assert_one_line_error
from warmstart.cli.main import main
from warmstart.commands.prompt import (
    PromptConfig,
    build_prompt,
    draw_demonstrations,
    evaluate_prompting,
    label_scores,
)
from warmstart.errors import WarmstartError
from warmstart.models.gpt2 import GPT2Config, GPT2Model
from warmstart.tokenization.tokenizer import Tokenizer

DEMOS = [
    {"text": "a wonderful, moving film", "label": "fresh"},
    {"text": "a dull and lifeless mess", "label": "rotten"},
]
WORDS = {"fresh": "great", "rotten": "terrible"}


class Induction(nn.Module):
    """A stand-in decoder: the logit of token v at position t is log(1 + sum_s exp(2 m(s, t))) over earlier
    positions s followed by v, where m(s, t) is how many tokens up to s equal those up to t."""

    def __init__(self, vocab: int, context: int = 512):
        super().__init__()
        self.vocab, self.config = vocab, SimpleNamespace(n_positions=context)

    def forward(self, input_ids, attention_mask=None):
        b, t = input_ids.shape
        eq = (input_ids[:, :, None] == input_ids[:, None, :]).double()
        run = torch.zeros(b, t, t, dtype=torch.float64)
        for i in range(t):
            run[:, i, 0] = eq[:, i, 0]
            if i:
                run[:, i, 1:] = eq[:, i, 1:] * (1 + run[:, i - 1, :-1])
        weight = (2 * run).exp() * torch.ones(t, t, dtype=torch.bool).tril(-1)  # only s < t
        nxt = F.one_hot(input_ids[:, 1:], self.vocab).double()  # row s: the token after s
        return (1 + weight[:, :, :-1] @ nxt).log().float()

    def lm_logits(self, hidden):
        return hidden


@pytest.fixture(scope="module")
def tok(bpe_shards):
    return Tokenizer.load(bpe_shards / "tokenizer")


def tiny_gpt2(tok, context=128):
    torch.manual_seed(0)
    return GPT2Model(
        GPT2Config(vocab_size=tok.vocab_size, n_positions=context, n_embd=32, n_layer=2, n_head=2)
    )


def by_hand(model, tok, prompt, word):
    head = prompt.rstrip(" ")
    ids, cont = [tok.eos_id] + tok.encode(head), tok.encode(prompt[len(head) :] + word)
    model.eval()
    with torch.no_grad():
        logp = model.lm_logits(model(torch.tensor([ids + cont])))[0].float().log_softmax(-1)
    return sum(logp[len(ids) - 1 + j, c].item() for j, c in enumerate(cont))


def test_induction_model_follows_the_demonstrations_and_flips_with_them(tok):
    model, cfg = Induction(tok.vocab_size), PromptConfig(label_words=WORDS)
    swapped = [{**d, "label": {"fresh": "rotten", "rotten": "fresh"}[d["label"]]} for d in DEMOS]
    assert max(len(tok.encode(" " + w)) for w in WORDS.values()) > 1  # multi-token words are scored whole
    prompts = [build_prompt(demos, d["text"], cfg) for demos in (DEMOS, swapped) for d in DEMOS]
    scores = label_scores(model, tok, prompts, list(WORDS.values()), batch_size=3)
    assert scores.argmax(1).tolist() == [0, 1, 1, 0]  # the word shown for this text; swapped: the other
    assert (scores.max(1).values - scores.min(1).values > 1).all()


@pytest.mark.parametrize("words", [["fresh tomato salad", "rotten", "a"], ["the", "of"]])
def test_label_scores_equal_log_probs_by_hand_whatever_the_batching(tok, words):
    model = tiny_gpt2(tok)
    prompts = [
        build_prompt(DEMOS, "an instant classic", PromptConfig()),
        "Review: short\nAnswer: ",
        "Verdict on the film, in one line:\n",
    ]
    want = torch.tensor([[by_hand(model, tok, p, w) for w in words] for p in prompts], dtype=torch.float64)
    for batch_size in (1, 2, 16):
        assert torch.allclose(
            label_scores(model, tok, prompts, words, batch_size=batch_size), want, atol=1e-5
        )
    assert model.training is False


def test_build_prompt_fills_demonstrations_and_stops_before_the_query_label():
    cfg = PromptConfig(label_words={"fresh": "good", "rotten": "bad"})
    prompt = build_prompt(DEMOS, "so-so", cfg)
    first, second = (
        "Review: a wonderful, moving film\nAnswer: good",
        "Review: a dull and lifeless mess\nAnswer: bad",
    )
    assert prompt == f"{first}\n\n{second}\n\nReview: so-so\nAnswer: "
    assert prompt.cuts == (len(first) + 2, len(first) + len(second) + 4)
    plain = build_prompt(DEMOS[:1], "x", PromptConfig(template="{text} => {label}!", separator=" | "))
    assert plain == "a wonderful, moving film => fresh! | x => "


def test_overlong_prompt_loses_its_oldest_demonstrations_but_never_the_query(tok):
    model, cfg, query, words = (
        tiny_gpt2(tok, context=128),
        PromptConfig(),
        "an instant classic",
        ["fresh", "rotten"],
    )
    demos = [{"text": f"review number {i} of a film", "label": ["rotten", "fresh"][i % 2]} for i in range(6)]
    longest = max(len(tok.encode(" " + w)) for w in words)
    size = [
        1 + len(tok.encode(build_prompt(demos[6 - m :], query, cfg).rstrip())) + longest for m in range(7)
    ]
    kept = max(m for m in range(7) if size[m] <= 128)
    assert 0 < kept < 6
    with pytest.warns(UserWarning, match="1 of 1 prompts were longer than the model's context of 128"):
        got = label_scores(model, tok, [build_prompt(demos, query, cfg)], words)
    assert torch.allclose(got, label_scores(model, tok, [build_prompt(demos[6 - kept :], query, cfg)], words))
    with pytest.raises(WarmstartError, match="more than the model's context of 128"):
        label_scores(model, tok, [build_prompt(demos, "word " * 150, cfg)], words)
    with pytest.raises(WarmstartError, match="context"):  # a plain string is never cut
        label_scores(model, tok, [str(build_prompt(demos, query, cfg))], words)


def test_demonstrations_are_balanced_when_the_pools_allow_and_seeded():
    pools = {
        "a": [{"label": "a", "i": i} for i in range(10)],
        "b": [{"label": "b", "i": i} for i in range(10)],
    }
    four = draw_demonstrations(pools, 4, random.Random(1))
    assert sorted(d["label"] for d in four) == ["a", "a", "b", "b"]
    assert four == draw_demonstrations(pools, 4, random.Random(1))
    short = draw_demonstrations({"a": pools["a"][:1], "b": pools["b"]}, 5, random.Random(2))
    assert sorted(d["label"] for d in short) == ["a", "b", "b", "b", "b"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"template": "Review: {text}"}, "needs {text}"),
        ({"template": "Answer: {label}"}, "needs {text}"),
        ({"template": "{label}: {text}"}, "needs {text}"),
        ({"label_words": "good"}, "label_words"),
        ({"shots": [-1]}, "shots"),
    ],
)
def test_bad_config_is_refused(kwargs, match):
    with pytest.raises(WarmstartError, match=match):
        PromptConfig(**kwargs)


def test_bad_data_is_refused_before_loading_a_model(tmp_path):
    with pytest.raises(WarmstartError, match="no word for the label 'rotten'"):
        evaluate_prompting(tmp_path / "none", "rotten-tomatoes", PromptConfig(label_words={"fresh": "good"}))
    csv = tmp_path / "tiny.csv"
    csv.write_text("text,label\n" + "".join(f"text {i},{'ab'[i % 2]}\n" for i in range(12)))
    with pytest.raises(WarmstartError, match="k=50 demonstrations, but the train split"):
        evaluate_prompting(tmp_path / "none", str(csv), PromptConfig(shots=[0, 50]), split="train")
    with pytest.raises(WarmstartError, match="has no labels"):
        evaluate_prompting(tmp_path / "none", "wiki-leads", PromptConfig())
    with pytest.raises(WarmstartError, match="is a file; prompting writes a directory"):
        evaluate_prompting(tmp_path / "none", str(csv), PromptConfig(), out=csv)  # its own dataset file
    assert csv.read_text().startswith("text,label\n")


@pytest.fixture(scope="module")
def gpt2_run(bpe_shards, tmp_path_factory):
    from warmstart.commands.pretrain import pretrain

    out = tmp_path_factory.mktemp("prompting") / "run"
    flags = {"out": str(out), "arch": "gpt2", "data": {"shards": str(bpe_shards)}, "train": {"steps": 10}}
    shape = [
        "model.n_layer=2",
        "model.n_embd=32",
        "model.n_head=2",
        "model.n_positions=256",
        "data.seq_len=64",
    ]
    train = ["train.progress=false", "train.batch_size=8", "train.save_every=0", "train.eval_every=0"]
    pretrain(None, None, flags, shape + train)
    return out


def test_end_to_end_on_a_tiny_gpt2_run(gpt2_run, tmp_path):
    cfg = PromptConfig(shots=[0, 1], seeds=2, max_examples=20, calibrate=True)
    result = evaluate_prompting(gpt2_run, "rotten-tomatoes", cfg, out=tmp_path / "p", progress=False)
    saved = json.loads((tmp_path / "p" / "prompting.json").read_text())
    assert [r["k"] for r in saved["results"]] == [0, 1] and saved["examples"] == 20
    assert [len(r["accuracy"]["per_seed"]) for r in saved["results"]] == [1, 2]
    for r in saved["results"]:
        assert all(0 <= a <= 1 for a in r["accuracy"]["per_seed"] + r["calibrated"]["per_seed"])
    assert 0.5 <= saved["majority"]["accuracy"] <= 1 and abs(sum(saved["prior"].values()) - 1) < 1e-9
    assert "\nAnswer: fresh" in saved["example_prompt"] or "\nAnswer: rotten" in saved["example_prompt"]
    assert (tmp_path / "p" / "prompting.png").stat().st_size > 1000 and result["plot"].endswith(".png")


def test_cli_prints_the_table_and_refuses_bad_input_in_one_line(gpt2_run, tmp_path, capsys):
    argv = ["prompt", str(gpt2_run), "--dataset", "rotten-tomatoes", "--shots", "0,1", "--seeds", "1"]
    code = main(
        argv + ["--out", str(tmp_path / "p"), "max_examples=8", "--template", "{text}\\nIt was {label}"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "| k | accuracy (mean ± std) | majority |" in out and "\n| 1 | " in out
    assert (
        json.loads((tmp_path / "p" / "prompting.json").read_text())["config"]["template"]
        == "{text}\nIt was {label}"
    )
    code = main(argv + ["--template", "{label} only"])
    assert_one_line_error(code, capsys.readouterr().err, "needs {text}")
    code = main(argv + ["label_words={fresh: good}"])
    assert_one_line_error(code, capsys.readouterr().err, "no word for the label 'rotten'")
