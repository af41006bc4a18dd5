"""Counterfactual data augmentation (data/counterfactual.py): the swap on sentences (case, punctuation, the
two readings of "her"), records of every kind, and data.counterfactual / --counterfactual in finetune,
pretraining shards and `word2vec train`: the training split doubled, validation and test as they were."""

import json

import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.data.corpus import DataConfig, options, prepare_corpus
from warmstart.data.counterfactual import augmented, swap_text, swap_tokens, swapped
from warmstart.data.options import FinetuneDataConfig
from warmstart.errors import WarmstartError
from warmstart.registry import TASKS
from warmstart.tasks.base import TaskConfig, read_dataset_splits
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.word2vec.io import load_vectors


@pytest.mark.parametrize(
    "text, expected",
    [
        ("He said she was his friend.", "She said he was her friend."),
        ("I saw her.", "I saw him."),
        ("Her book is on HIS desk; the pen is his.", "His book is on HER desk; the pen is hers."),
        ("The King's men met the Queen.", "The Queen's women met the King."),
        (
            "Mr. Smith gave her a book, and her own brother's!",
            "Mrs. Smith gave him a book, and his own sister's!",
        ),
        ("The manager, a shepherd, sheltered them.", "The manager, a shepherd, sheltered them."),
        ("  woman-led\tteams  ", "  man-led\tteams  "),
        ("he told her that his wife", "she told him that her husband"),
    ],
)
def test_swap_text_keeps_case_punctuation_and_spacing(text, expected):
    assert swap_text(text) == expected


def test_swapping_twice_gives_the_text_back_when_no_her_is_ambiguous():
    text = "The father and his sons met the Duke; HE bowed to the actress."
    assert swap_text(text) != text and swap_text(swap_text(text)) == text


def test_tagging_records_swap_token_by_token_and_keep_their_tags():
    record = {"text": "Her father met John .", "tokens": ["Her", "father", "met", "John", "."],
              "tags": ["O", "O", "O", "B-PER", "O"]}  # fmt: skip
    copy = swapped(record, "tagging")
    assert copy["tokens"] == ["His", "mother", "met", "John", "."] and copy["tags"] == record["tags"]
    assert copy["text"] == "His mother met John ." and record["tokens"][1] == "father"
    assert swap_tokens(["saw", "her", "."]) == ["saw", "him", "."]


def test_records_of_each_kind_and_qa_refused():
    labeled = [
        {"text": "he is a nurse", "text_pair": "she agrees", "label": "yes"},
        {"text": "a cat", "label": "no"},
    ]
    out = augmented(labeled, "labeled")
    assert [r["text"] for r in out] == ["he is a nurse", "she is a nurse", "a cat", "a cat"]
    assert out[1]["text_pair"] == "he agrees" and [r["label"] for r in out] == ["yes", "yes", "no", "no"]
    choice = swapped(
        {"text": "Who is he?", "passage": "The king", "choices": ["his son", "a dog"], "label": "0"}, "choice"
    )
    assert choice == {
        "text": "Who is she?",
        "passage": "The queen",
        "choices": ["her daughter", "a dog"],
        "label": "0",
    }
    assert swapped({"text": "the boy", "target": "a man"}, "seq2seq") == {
        "text": "the girl",
        "target": "a woman",
    }
    qa = {"text": "he ran", "id": "1", "question": "who?", "context": "he ran", "answers": []}
    with pytest.raises(WarmstartError, match="extractive QA"):
        augmented([qa], "qa")


def test_finetune_data_doubles_only_the_train_split(rt_small):
    task = TASKS["classification"](TaskConfig())
    plain, _ = read_dataset_splits(FinetuneDataConfig(dataset=str(rt_small)), task)
    more, _ = read_dataset_splits(FinetuneDataConfig(dataset=str(rt_small), counterfactual=True), task)
    assert len(more["train"]) == 2 * len(plain["train"])
    assert more["validation"] == plain["validation"] and more["test"] == plain["test"]
    assert more["train"][0::2] == plain["train"]
    assert more["train"][1::2] == [swapped(r, "labeled") for r in plain["train"]]


def test_a_finetune_run_with_the_flag(tiny_pretrained, rt_small, tmp_path, capsys):
    out = tmp_path / "ft"
    argv = ["finetune", "--init", tiny_pretrained, "--dataset", rt_small, "--out", out, "--epochs", "1"]
    argv += ["train.progress=false", "task.max_length=32", "data.train_limit=40", "data.counterfactual=true"]
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    sizes = json.loads((out / "test_metrics.json").read_text())["sizes"]
    assert sizes["train"] == 80  # 40 examples and their swapped copies


def test_multitask_and_shards_refuse_the_flag(tiny_pretrained, rt_small, small_shards, tmp_path, capsys):
    argv = ["finetune", "--init", tiny_pretrained, "--task", "multitask", "--dataset", rt_small]
    code, _, err = run(capsys, *argv, "--out", tmp_path / "m", "data.counterfactual=true")
    assert_one_line_error(code, err, "data.counterfactual does not apply to task multitask")
    with pytest.raises(WarmstartError, match="--shards are tokens already"):
        DataConfig(shards=str(small_shards), counterfactual=True)


def test_pretraining_shards_double_the_train_texts_only(rt_small, small_tokenizer, tmp_path):
    cfg = DataConfig(corpus=[str(rt_small)])
    tok = Tokenizer.load(small_tokenizer)
    splits = ("train", "validation")
    plain = prepare_corpus(cfg.corpus, options(cfg), tok, tmp_path / "plain", splits=splits)
    more = prepare_corpus(cfg.corpus, options(cfg), tok, tmp_path / "cda", splits=splits, counterfactual=True)
    assert more["source"]["counterfactual"] is True and "counterfactual" not in plain["source"]
    assert more["splits"]["validation"] == plain["splits"]["validation"]
    train, plain_train = more["splits"]["train"], plain["splits"]["train"]
    assert train["num_docs"] == 2 * plain_train["num_docs"]
    assert 2 * plain_train["num_tokens"] <= train["num_tokens"] < 2.1 * plain_train["num_tokens"]


def test_prepare_from_the_command_line_with_the_flag(rt_small, small_tokenizer, tmp_path, capsys):
    docs = {}
    for name, flag in (("plain", []), ("cda", ["--counterfactual"])):
        argv = ["prepare", "--corpus", rt_small, "--tokenizer", small_tokenizer, "--out", tmp_path / name]
        code, out, err = run(capsys, *argv, *flag)
        assert code == 0, err
        meta = json.loads((tmp_path / name / "meta.json").read_text())
        docs[name] = {s: v["num_docs"] for s, v in meta["splits"].items()}
    assert docs["cda"]["train"] == 2 * docs["plain"]["train"]
    assert docs["cda"]["validation"] == docs["plain"]["validation"]


def test_word2vec_train_with_the_flag_balances_the_counts(wiki_extracts, tmp_path, capsys):
    corpus = tmp_path / "wiki.txt"
    corpus.write_text("\n".join(t.replace("\n", " ") for t in wiki_extracts[:400]) + "\n")
    counts = {}
    for flag in ([], ["--counterfactual"]):
        out = tmp_path / f"run{len(flag)}"
        argv = ["word2vec", "train", "--corpus", corpus, "--out", out, "--epochs", "1", "--dim", "8", *flag]
        code, _, err = run(capsys, *argv, "word2vec.threads=1", "word2vec.min_count=1")
        assert code == 0, err
        wv = load_vectors(out)
        words = ("he", "she", "his", "him", "her", "hers", "the")
        counts[bool(flag)] = {w: int(wv.counts[wv.index[w]]) if w in wv else 0 for w in words}
    plain, cda = counts[False], counts[True]
    assert plain["he"] != plain["she"] and cda["he"] == cda["she"] == plain["he"] + plain["she"]
    assert cda["the"] == 2 * plain["the"]
    possessive = ("his", "him", "her", "hers")  # her -> his or him, his -> her or hers: the sum doubles
    assert sum(cda[w] for w in possessive) == 2 * sum(plain[w] for w in possessive)
