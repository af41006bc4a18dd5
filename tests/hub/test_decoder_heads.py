"""Task heads on decoders and encoder-decoders (issue 40): tiny GPT-2, T5 and BART runs finetune with each
head transformers has for the family, export to that class (GPT2ForSequenceClassification, ...), and the
export gives the probabilities `warmstart predict` gives; a task the family has no class for is refused in
one line before any work."""

import json

import pytest
import torch
import transformers

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.data import choice_records
from tests.helpers.hub import conll, finetune_run, sentence_pairs, write_csv
from tests.helpers.runs import pretrain_family
from warmstart.checkpoints.load import load_finetuned
from warmstart.hub.convert import export_hf

pytestmark = pytest.mark.integration

TOL = 1e-4
BASE = {"gpt2": "GPT2", "t5": "T5", "bart": "Bart"}
TEXTS = ["a gorgeous , witty film .", "the plot is a mess and the acting is worse .", "fine ."]
SHORT = ["train.steps=2", "data.validation_limit=16", "data.test_limit=16"]  # a trained head is enough


@pytest.fixture(scope="module")
def pretrained(bpe_shards, unigram_shards, tmp_path_factory):
    """arch -> a tiny run of that family pretrained for 2 steps (made on first use)."""
    made = {}

    def get(arch: str):
        if arch not in made:
            made[arch] = tmp_path_factory.mktemp(arch) / "run"
            pretrain_family(arch, unigram_shards if arch == "t5" else bpe_shards, made[arch], steps=2)
        return made[arch]

    return get


def gap(a, b) -> float:
    value = float((a - b).abs().max())
    print(f"max abs difference: {value:.2e}")
    return value


def classification_data(kind: str, rt_small, wiki_extracts, tmp_path):
    """(dataset, overrides, predict input records) of a classification problem on real text."""
    if kind == "single_label":
        return rt_small, [], [{"text": t} for t in TEXTS]
    pairs = sentence_pairs(wiki_extracts, 80)
    if kind == "pairs":
        return write_csv(tmp_path / "pairs.csv", pairs), [], [{k: r[k] for k in ("text", "text_pair")}
                                                            for r in pairs[:4]]  # fmt: skip
    if kind == "regression":  # a score per text: its length in tens of characters
        rows = [{"text": r["text"], "label": len(r["text"]) / 10} for r in pairs]
        return (
            write_csv(tmp_path / "reg.csv", rows),
            ["task.problem=regression"],
            [{"text": t} for t in TEXTS],
        )
    rows = [
        {"text": r["text"], "label": r["label"] + ("|long" if len(r["text"]) > 60 else "")} for r in pairs
    ]
    return write_csv(tmp_path / "multi.csv", rows), ["task.problem=multi_label"], [{"text": t} for t in TEXTS]


def probabilities(kind: str, logits, preds, labels):
    """(transformers', warmstart's) outputs: probabilities (sigmoid per label for multi-label), or scores."""
    if kind == "regression":
        return logits[:, 0], torch.tensor([p["score"] for p in preds])
    theirs = torch.sigmoid(logits) if kind == "multi_label" else torch.softmax(logits, -1)
    return theirs, torch.tensor([[p["probabilities"][x] for x in labels] for p in preds])


@pytest.mark.parametrize(
    "arch, kind",
    [("gpt2", "single_label"), ("t5", "multi_label"), ("bart", "pairs"), ("gpt2", "regression")],
)
def test_classifier_exports_with_the_probabilities_warmstart_predicts(
    arch, kind, pretrained, rt_small, wiki_extracts, tmp_path, capsys
):
    data, extra, records = classification_data(kind, rt_small, wiki_extracts, tmp_path)
    out = finetune_run(pretrained(arch), data, tmp_path / "ft", *SHORT, *extra)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    capsys.readouterr()  # the runs' progress lines
    code, stdout, err = run(capsys, "predict", out, "--input", src)
    assert code == 0, err
    unit, task, tok, labels = load_finetuned(out)
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(export_hf(out, tmp_path / "hf"))
    assert type(hf).__name__ == BASE[arch] + "ForSequenceClassification"
    assert hf.config.id2label == dict(enumerate(labels or ["LABEL_0"])) and hf.config.classifier_dropout > 0
    batch = task.encode(records, tok, labels, "input").take(range(len(records)))
    with torch.no_grad():
        logits = hf.eval()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    theirs, ours = probabilities(kind, logits, [json.loads(x) for x in stdout.splitlines()], labels)
    assert gap(ours, theirs) < TOL
    assert float(theirs.std(0).max()) > 1e-5  # the rows differ: each is read at its own last token


@pytest.mark.parametrize(
    "arch, kind",
    [("gpt2", "tagging"), ("t5", "tagging"), ("gpt2", "extractive_qa"), ("t5", "extractive_qa"),
     ("bart", "extractive_qa")],
)  # fmt: skip
def test_tagger_and_qa_model_export_with_equal_logits(arch, kind, pretrained, wiki_extracts, tmp_path):
    if kind == "tagging":
        data, extra, auto = (
            conll(tmp_path / "tags.conll", wiki_extracts),
            [],
            "AutoModelForTokenClassification",
        )
    else:
        data, extra = "wiki-qa", ["task.max_length=64", "task.doc_stride=16"]
        auto = "AutoModelForQuestionAnswering"
    out = finetune_run(pretrained(arch), data, tmp_path / "ft", f"task.name={kind}", *SHORT, *extra)
    unit, task, tok, labels = load_finetuned(out)
    hf = getattr(transformers, auto).from_pretrained(export_hf(out, tmp_path / "hf")).eval()
    assert type(hf).__name__ == BASE[arch] + ("ForTokenClassification" if kind == "tagging" else
                                              "ForQuestionAnswering")  # fmt: skip
    if kind == "tagging":
        words = [r.split() for r in TEXTS]
        records = [{"text": " ".join(w), "tokens": w, "tags": ["O"] * len(w)} for w in words]
    else:
        records = [{"id": "q", "question": "What is Paris?", "context": "Paris is the capital of France.",
                    "text": "Paris is the capital of France.", "answers": []}]  # fmt: skip
    batch = next(iter(task.encode(records, tok, labels, "input").eval_batches(8)))
    with torch.no_grad():
        got = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        if kind == "tagging":
            real = batch["attention_mask"].bool()
            assert gap(unit.logits(batch)[real], got.logits[real]) < TOL
        else:
            start, end = unit.logits(batch)
            allowed = batch["context_mask"].clone()
            allowed[:, 0] = True
            assert gap(start[allowed], got.start_logits[allowed]) < TOL
            assert gap(end[allowed], got.end_logits[allowed]) < TOL


@pytest.mark.parametrize(
    "arch, task, needle",
    [("t5", "multiple_choice", "T5ForMultipleChoice"), ("bart", "tagging", "BartForTokenClassification"),
     ("gpt2", "multiple_choice", "GPT2ForMultipleChoice")],
)  # fmt: skip
def test_a_task_without_a_transformers_class_is_refused_before_any_work(
    arch, task, needle, pretrained, wiki_extracts, tmp_path, capsys
):
    data = tmp_path / "mc.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in choice_records(wiki_extracts, 8)))
    out = tmp_path / "out"
    code, _, err = run(capsys, "finetune", "--task", task, "--init", pretrained(arch), "--dataset", data,
                       "--out", out, "task.max_length=48")  # fmt: skip
    assert_one_line_error(code, err, f"task {task} has no head on a {arch} model", needle, "text_to_text")
    assert not out.exists()


def test_pooler_pooling_on_a_decoder_is_one_line(pretrained, rt_small, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = run(capsys, "finetune", "--init", pretrained("gpt2"), "--dataset", rt_small, "--out", out,
                       "task.max_length=48", "task.pooling=pooler")  # fmt: skip
    assert_one_line_error(code, err, "task.pooling=pooler", "a gpt2 model has none", "task.pooling=cls")
    assert not out.exists()
