"""Task heads through `warmstart import` / `warmstart export`: transformers' *ForSequenceClassification,
*ForTokenClassification and *ForQuestionAnswering import as finetuned runs (equal logits; `warmstart predict`
and `evaluate` use them, labels from id2label) and export back; a warmstart classifier finetuned with
task.pooling=pooler exports with equal logits (cls pooling too: tests/hub/test_export_roundtrip.py), one with
mean pooling is refused in one clear line."""

import csv
import json

import pytest
import torch

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.data import choice_records
from tests.helpers.hub import BASE, CLASS, LABELS, hf_dir, tiny_task_model
from tests.helpers.shapes import tiny_bert_config
from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import load_finetuned
from warmstart.cli.main import main
from warmstart.errors import WarmstartError
from warmstart.hub.convert import export_hf, import_hf
from warmstart.models.bert import BertModel
from warmstart.tasks.base import TaskConfig
from warmstart.tasks.classification import ClassificationTask
from warmstart.tasks.multiple_choice import MultipleChoiceTask
from warmstart.tokenization.tokenizer import Tokenizer

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.parity
TOL = 1e-4
SENTENCES = ["a gorgeous , witty , seductive movie .", "the film is strictly routine .", "not bad at all"]


def inputs(tok, texts):
    ids, types = tok.encode_pairs(texts, max_length=64)
    n = max(map(len, ids))
    x = torch.tensor([i + [tok.pad_id] * (n - len(i)) for i in ids])
    return {"input_ids": x, "attention_mask": (x != tok.pad_id).long(), "token_type_ids": torch.zeros_like(x)}


def head_logits(unit, task, batch):
    """warmstart's logits as transformers computes them (QA: before the context mask)."""
    if task == "extractive_qa":
        hidden = unit.encoder(batch["input_ids"], batch["attention_mask"])
        return torch.stack(unit.qa_outputs(hidden).unbind(-1))
    return unit.logits(batch)


def hf_logits(model, task, batch):
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    return torch.stack([out.start_logits, out.end_logits]) if task == "extractive_qa" else out.logits


def gap(a, b, task, mask) -> float:
    diff = (a - b).abs()
    if task == "classification":
        return float(diff.max())
    return float((diff[:, mask.bool()] if task == "extractive_qa" else diff[mask.bool()]).max())


CASES = [("bert", "classification"), ("roberta", "classification"), ("albert", "classification"),
         ("bert", "tagging"), ("electra", "tagging"), ("bert", "extractive_qa"),
         ("roberta", "extractive_qa")]  # fmt: skip


@pytest.mark.parametrize("family,task", CASES, ids=[f"{f}-{t}" for f, t in CASES])
def test_task_heads_round_trip_with_equal_logits(family, task, small_tokenizer, bpe_shards, tmp_path):
    tok_dir = bpe_shards / "tokenizer" if family == "roberta" else small_tokenizer
    tok = Tokenizer.load(tok_dir)
    hf = tiny_task_model(family, task, tok)
    ws = import_hf(hf_dir(tmp_path / "hf", hf, tok_dir), tmp_path / "ws")
    config = json.loads((ws / "config.json").read_text())
    assert config["warmstart"]["task"]["name"] == task
    assert RunCard.read(config).labels == (LABELS[task] or []) and "labels" not in config["warmstart"]
    if task == "classification":
        assert config["warmstart"]["task"]["pooling"] == "pooler"
    unit, _, _, labels = load_finetuned(ws)  # strict: every tensor of the finetuned unit, none left over
    batch = inputs(tok, SENTENCES)
    with torch.no_grad():
        mine = head_logits(unit, task, batch)
        assert gap(mine, hf_logits(hf, task, batch), task, batch["attention_mask"]) < TOL
        out = export_hf(ws, tmp_path / "out")
        back = getattr(transformers, "AutoModel" + CLASS[task]).from_pretrained(out).eval()
        assert type(back).__name__ == BASE[family] + CLASS[task]
        if LABELS[task]:
            assert [back.config.id2label[i] for i in range(len(labels))] == LABELS[task]
        assert gap(hf_logits(back, task, batch), mine, task, batch["attention_mask"]) < TOL


def test_imported_classifier_predicts_and_evaluates_with_its_labels(
    small_tokenizer, rt_small, tmp_path, capsys
):
    tok = Tokenizer.load(small_tokenizer)
    hf = tiny_task_model("bert", "classification", tok)
    ws = import_hf(hf_dir(tmp_path / "hf", hf, small_tokenizer), tmp_path / "ws")
    lines = tmp_path / "in.txt"
    lines.write_text("\n".join(SENTENCES) + "\n")
    assert main(["predict", str(ws), "--input", str(lines), "--out", str(tmp_path / "p.jsonl")]) == 0
    preds = [json.loads(x) for x in (tmp_path / "p.jsonl").read_text().splitlines()]
    with torch.no_grad():
        want = hf(**{k: v for k, v in inputs(tok, SENTENCES).items() if k != "token_type_ids"}).logits
    assert [p["label"] for p in preds] == [hf.config.id2label[int(i)] for i in want.argmax(-1)]
    for p, row in zip(preds, want.softmax(-1)):
        assert p["probabilities"]["rotten"] == pytest.approx(float(row[1]), abs=1e-4)
    report = tmp_path / "metrics.json"
    assert main(["evaluate", str(ws), "--data", str(rt_small), "--split", "all", "--out", str(report)]) == 0
    rows = list(csv.DictReader(rt_small.open()))
    batch = inputs(tok, [r["text"] for r in rows])
    with torch.no_grad():
        pred = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.argmax(-1)
    accuracy = sum(hf.config.id2label[int(i)] == r["label"] for i, r in zip(pred, rows)) / len(rows)
    result = json.loads(report.read_text())
    assert result["examples"] == 240 and result["metrics"]["accuracy"] == pytest.approx(accuracy)


def test_imported_tagger_and_qa_model_predict_and_evaluate(small_tokenizer, wiki_extracts, tmp_path, capsys):
    tok = Tokenizer.load(small_tokenizer)
    tagger = import_hf(hf_dir(tmp_path / "t", tiny_task_model("bert", "tagging", tok), small_tokenizer),
                       tmp_path / "tagger")  # fmt: skip
    conll = tmp_path / "tags.conll"
    words = [s.split()[:12] for s in wiki_extracts[:6]]
    conll.write_text("\n\n".join("\n".join(f"{w} {'B-X' if i == 0 else 'O'}" for i, w in enumerate(ws))
                                 for ws in words) + "\n")  # fmt: skip
    assert main(["evaluate", str(tagger), "--data", str(conll), "--split", "all"]) == 0
    assert "6 examples" in capsys.readouterr().out
    (tmp_path / "words.txt").write_text(" ".join(words[0]) + "\n")
    assert main(["predict", str(tagger), "--input", str(tmp_path / "words.txt")]) == 0
    pred = json.loads(capsys.readouterr().out)
    assert len(pred["tags"]) == len(words[0]) and set(pred["tags"]) <= {"O", "B-X", "I-X"}
    qa = import_hf(hf_dir(tmp_path / "q", tiny_task_model("bert", "extractive_qa", tok), small_tokenizer),
                   tmp_path / "qa")  # fmt: skip
    context = wiki_extracts[0][:200]
    question = {"id": "1", "question": "what is it?", "answers": [{"text": context[:9], "answer_start": 0}]}
    squad = {"data": [{"paragraphs": [{"context": context, "qas": [question]}]}]}
    (tmp_path / "squad.json").write_text(json.dumps(squad))
    assert main(["evaluate", str(qa), "--data", str(tmp_path / "squad.json"), "--split", "all"]) == 0
    assert "exact_match" in capsys.readouterr().out
    (tmp_path / "q.jsonl").write_text(json.dumps({"question": "what is it?", "context": context}) + "\n")
    assert main(["predict", str(qa), "--input", str(tmp_path / "q.jsonl")]) == 0
    assert json.loads(capsys.readouterr().out)["answer"] in context


@pytest.mark.parametrize("problem", ["multi_label_classification", "regression"])
def test_problem_types_travel(problem, small_tokenizer, tmp_path):
    tok = Tokenizer.load(small_tokenizer)
    if problem == "regression":
        hf = tiny_task_model("bert", "classification", tok, labels=None, problem_type=problem, num_labels=1)
    else:
        hf = tiny_task_model("bert", "classification", tok, problem_type=problem)
    assert hf.config.num_labels == (1 if problem == "regression" else 2)
    ws = import_hf(hf_dir(tmp_path / "hf", hf, small_tokenizer), tmp_path / "ws")
    config = json.loads((ws / "config.json").read_text())
    assert config["warmstart"]["task"]["problem"] == {"regression": "regression"}.get(problem, "multi_label")
    assert RunCard.read(config).labels == ([] if problem == "regression" else ["fresh", "rotten"])
    back = transformers.AutoConfig.from_pretrained(export_hf(ws, tmp_path / "out"))
    assert back.problem_type == problem and back.num_labels == hf.config.num_labels


def test_an_electra_classifier_imports_as_a_pretrained_discriminator(small_tokenizer, tmp_path):
    """Its head (dense + gelu + out_proj) has no warmstart equivalent: dropped with a warning."""
    tok = Tokenizer.load(small_tokenizer)
    src = hf_dir(tmp_path / "hf", tiny_task_model("electra", "classification", tok), small_tokenizer)
    with pytest.warns(UserWarning, match="task heads not imported: classifier.dense, classifier.out_proj"):
        ws = import_hf(src, tmp_path / "ws")
    assert "task" not in json.loads((ws / "config.json").read_text())["warmstart"]


# ------------------------------------------------------------------------- warmstart finetuned -> hf
def finetune(init, data, out, pooling):
    args = ["finetune", "--init", str(init), "--dataset", str(data), "--out", str(out), "--epochs", "1"]
    flags = ["data.train_limit=32", "train.batch_size=16", "task.max_length=32", "evals_per_epoch=1"]
    assert main(args + flags + [f"task.pooling={pooling}", "train.progress=false"]) == 0
    return out


def test_a_pooler_classifier_finetuned_by_warmstart_exports_with_equal_logits(
    tiny_pretrained, rt_small, tmp_path, capsys
):
    run_dir = finetune(tiny_pretrained, rt_small, tmp_path / "ft", "pooler")
    unit, _, tok, labels = load_finetuned(run_dir)
    out = export_hf(run_dir, tmp_path / "hf")
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(out).eval()
    assert type(hf).__name__ == "BertForSequenceClassification" and hf.config.id2label == dict(
        enumerate(labels)
    )
    batch = inputs(tok, SENTENCES)
    with torch.no_grad():
        theirs = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        assert (unit.logits(batch) - theirs).abs().max() < TOL
        pooled = torch.tanh(
            unit.encoder.pooler(unit.encoder(batch["input_ids"], batch["attention_mask"])[:, 0])
        )
        assert (unit.classifier(pooled) - theirs).abs().max() < TOL  # BertForSequenceClassification's path
    other = finetune(tiny_pretrained, rt_small, tmp_path / "mean", "mean")
    capsys.readouterr()
    code, _, err = run(capsys, "export", other, "--out", tmp_path / "hf-mean")
    assert_one_line_error(code, err, "task.pooling=mean", "no transformers head",
                          "finetune with task.pooling=cls (the default) or pooler")  # fmt: skip


def test_pooler_pooling_needs_an_encoder_with_a_pooler():
    task = ClassificationTask(TaskConfig(pooling="pooler"))
    with pytest.raises(WarmstartError, match="pooler"):
        task.build(BertModel(tiny_bert_config(pooler=False)), ["a", "b"])
    with pytest.raises(WarmstartError, match="cls, mean, max, pooler"):
        ClassificationTask(TaskConfig(pooling="median")).build(BertModel(tiny_bert_config()), ["a", "b"])


# ------------------------------------------------------------------------------------- multiple choice
def choice_batch(tok, records):
    """Examples of 2 to 4 choices as warmstart encodes them: (B, K, T) ids and a choice mask."""
    return (
        MultipleChoiceTask(TaskConfig(max_length=48))
        .encode(records, tok, [], "test")
        .take(range(len(records)))
    )


def hf_scores(model, batch, family):
    types = None if family == "roberta" else batch["token_type_ids"]  # RoBERTa has one segment id
    return model(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], token_type_ids=types
    ).logits


def choice_gap(a, b, batch) -> float:
    value = float((a - b)[batch["choice_mask"]].abs().max())
    print(f"max abs diff of the choice scores: {value:.2e}")
    return value


MC_FLAGS = ["train.batch_size=8", "task.max_length=48", "evals_per_epoch=1", "train.progress=false"]


@pytest.mark.parametrize("family", ["bert", "roberta", "albert", "electra"])
def test_multiple_choice_round_trips_with_equal_scores(
    family, small_tokenizer, bpe_shards, wiki_extracts, tmp_path
):
    """transformers' *ForMultipleChoice: BERT's pooler + Linear(hidden, 1) per choice; ELECTRA's summary with
    summary_activation=tanh is that pooler (with its default gelu the head is dropped, as below)."""
    tok_dir = bpe_shards / "tokenizer" if family == "roberta" else small_tokenizer
    tok = Tokenizer.load(tok_dir)
    extra = {"summary_activation": "tanh"} if family == "electra" else {}
    # weights wide enough that the [CLS] states, and so the scores, differ between choices
    hf = tiny_task_model(family, "multiple_choice", tok, initializer_range=0.3, **extra)
    ws = import_hf(hf_dir(tmp_path / "hf", hf, tok_dir), tmp_path / "ws")
    task = json.loads((ws / "config.json").read_text())["warmstart"]["task"]
    assert task["name"] == "multiple_choice" and task["pooling"] == "pooler"
    unit, _, _, _ = load_finetuned(ws)
    batch = choice_batch(tok, choice_records(wiki_extracts, 8))
    with torch.no_grad():
        mine = unit.scores(batch)
        assert float(mine[batch["choice_mask"]].std()) > 0.1
        assert choice_gap(mine, hf_scores(hf, batch, family), batch) < TOL
        back = transformers.AutoModelForMultipleChoice.from_pretrained(export_hf(ws, tmp_path / "out")).eval()
        assert type(back).__name__ == BASE[family] + "ForMultipleChoice"
        assert choice_gap(hf_scores(back, batch, family), mine, batch) < TOL


def test_an_electra_multiple_choice_model_with_a_gelu_summary_imports_as_a_discriminator(
    small_tokenizer, tmp_path
):
    tok = Tokenizer.load(small_tokenizer)
    src = hf_dir(tmp_path / "hf", tiny_task_model("electra", "multiple_choice", tok), small_tokenizer)
    with pytest.warns(UserWarning, match="task heads not imported: classifier, sequence_summary.summary"):
        ws = import_hf(src, tmp_path / "ws")
    assert "task" not in json.loads((ws / "config.json").read_text())["warmstart"]


def test_a_multiple_choice_model_finetuned_by_warmstart_exports_with_equal_scores(
    tiny_pretrained, wiki_extracts, tmp_path
):
    """task.pooling=pooler and cls (the scorer on [CLS] through a near-identity pooler: hub/pooling.py)."""
    data = tmp_path / "mc.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in choice_records(wiki_extracts, 40)))
    for pooling in ("pooler", "cls"):
        args = ["finetune", "--task", "multiple_choice", "--init", tiny_pretrained, "--dataset", data]
        args += ["--out", tmp_path / pooling, "--epochs", "1", f"task.pooling={pooling}", *MC_FLAGS]
        assert main([str(a) for a in args]) == 0
    for pooling in ("pooler", "cls"):
        unit, _, tok, _ = load_finetuned(tmp_path / pooling)
        back = transformers.AutoModelForMultipleChoice.from_pretrained(
            export_hf(tmp_path / pooling, tmp_path / f"hf-{pooling}")
        )
        assert type(back).__name__ == "BertForMultipleChoice"
        batch = choice_batch(tok, choice_records(wiki_extracts, 8))
        with torch.no_grad():
            assert choice_gap(hf_scores(back.eval(), batch, "bert"), unit.scores(batch), batch) < TOL
