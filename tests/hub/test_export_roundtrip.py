"""Issue 23, a Hugging Face round trip without traps: default finetunes of every task head export, load in
transformers' Auto classes and predict what `warmstart predict` predicts on the same checkpoint (best); export
says which checkpoint it took; a sentence pair keeps its segment ids; a LoRA run's adapters load in PEFT; the
export carries a model card. Runs: tiny finetunes of the session's tiny pretrained BERT on real text."""

import csv
import json

import pytest
import torch

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.data import choice_records
from tests.helpers.hub import conll, finetune_run, hf_dir, sentence_pairs, tiny_task_model, write_csv
from warmstart.checkpoints.load import load_finetuned
from warmstart.hub.convert import export_hf, import_hf
from warmstart.hub.runs import choose
from warmstart.inference.predict import predict_lines
from warmstart.inference.records import parse_record
from warmstart.tasks.qa_decode import decode
from warmstart.tokenization.tokenizer import Tokenizer

transformers = pytest.importorskip("transformers")
pytestmark = [pytest.mark.integration, pytest.mark.parity]
TOL = 1e-5


@pytest.fixture(scope="module")
def data(rt_small, wiki_extracts, tmp_path_factory):
    """Real records of each kind, and the data files the runs train on."""
    d = tmp_path_factory.mktemp("export-data")
    rows = list(csv.DictReader(rt_small.open(encoding="utf-8")))
    words = lambda t: len(t.split())  # noqa: E731
    multi = [{"text": r["text"], "label": "|".join([r["label"]] + ["long"] * (words(r["text"]) > 20))}
             for r in rows]  # fmt: skip
    score = [{"text": r["text"], "label": f"{words(r['text']) / 10:.1f}"} for r in rows]
    choices = choice_records(wiki_extracts, 48)
    (d / "mc.jsonl").write_text("".join(json.dumps(r) + "\n" for r in choices[:40]), encoding="utf-8")
    return {
        "texts": [r["text"] for r in rows[-16:]],
        "pairs": sentence_pairs(wiki_extracts)[-12:],
        "pairs.csv": write_csv(d / "pairs.csv", sentence_pairs(wiki_extracts)),
        "multi.csv": write_csv(d / "multi.csv", multi),
        "score.csv": write_csv(d / "score.csv", score),
        "tags.conll": conll(d / "tags.conll", wiki_extracts),
        "mc.jsonl": d / "mc.jsonl",
        "choices": choices[40:],
        "words": [t.split(". ")[0].split()[:30] for t in wiki_extracts[2000:2008]],
    }


QA = ["task.name=extractive_qa", "task.max_length=64", "task.doc_stride=32", "data.validation_limit=16",
      "data.test_limit=16"]  # fmt: skip
LORA = ["strategy.strategy=lora", "strategy.lora_targets=[qkv,out,up,down]", "strategy.lora_rank=4"]
RUNS = {  # name -> (data file key or dataset, overrides); every other setting is the default
    "single": ("rt", []),
    "pairs": ("pairs.csv", ["data.text_pair_column=text_pair"]),
    "multi": ("multi.csv", ["task.problem=multi_label"]),
    "regression": ("score.csv", ["task.problem=regression"]),
    "tagging": ("tags.conll", ["task.name=tagging"]),
    "qa": ("wiki-qa", QA),
    "choice": ("mc.jsonl", ["task.name=multiple_choice"]),
    "lora": ("rt", LORA),
}


@pytest.fixture(scope="module")
def runs(tiny_pretrained, rt_small, data, tmp_path_factory):
    """One default finetune per task head (and a LoRA one), each a run directory with best/ and final/."""
    root = tmp_path_factory.mktemp("export-runs")
    sources = {"rt": rt_small, "wiki-qa": "wiki-qa"}
    return {name: finetune_run(tiny_pretrained, sources.get(src) or data[src], root / name, *extra)
            for name, (src, extra) in RUNS.items()}  # fmt: skip


def scores(run_dir, records):
    return list(predict_lines(str(run_dir), [json.dumps(r) for r in records]))


def pipeline_gap(out, inputs, preds, key="probabilities") -> float:
    """The largest difference of transformers' text-classification pipeline scores from warmstart's."""
    classify = transformers.pipeline("text-classification", model=str(out), top_k=None, truncation=True)
    gap = 0.0
    for got, want in zip(classify(inputs), preds, strict=True):
        for item in got:
            mine = want["score"] if key == "score" else want[key][item["label"]]
            gap = max(gap, abs(item["score"] - mine))
    return gap


# ------------------------------------------------------------------------------------ every task head
@pytest.mark.parametrize("name", ["single", "multi", "regression"])
def test_a_default_classifier_exports_and_scores_as_warmstart_predict(name, runs, data, tmp_path):
    run_dir = runs[name]
    assert json.loads((run_dir / "best" / "config.json").read_text())["warmstart"]["task"]["pooling"] == "cls"
    out = export_hf(run_dir, tmp_path / "hf")
    model = transformers.AutoModelForSequenceClassification.from_pretrained(out)
    assert type(model).__name__ == "BertForSequenceClassification"
    preds = scores(run_dir, [{"text": t} for t in data["texts"]])
    key = "score" if name == "regression" else "probabilities"
    spread = [p["score"] if key == "score" else max(p[key].values()) for p in preds]
    assert max(spread) - min(spread) > 10 * TOL  # scores that differ between texts far beyond the tolerance
    gap = pipeline_gap(out, data["texts"], preds, key)
    print(f"{name}: max abs difference of the pipeline's scores from warmstart predict's: {gap:.1e}")
    assert gap < TOL


def test_a_sentence_pair_classifier_keeps_its_segments(runs, data, tmp_path):
    run_dir, pairs = runs["pairs"], [{"text": p["text"], "text_pair": p["text_pair"]} for p in data["pairs"]]
    out = export_hf(run_dir, tmp_path / "hf")
    tok, mine = transformers.AutoTokenizer.from_pretrained(out), Tokenizer.load(run_dir / "best")
    assert tok.model_input_names == ["input_ids", "token_type_ids", "attention_mask"]
    ids, types = mine.encode_pairs([p["text"] for p in pairs], [p["text_pair"] for p in pairs], 48)
    enc = tok([p["text"] for p in pairs], [p["text_pair"] for p in pairs], truncation=True)
    assert enc["input_ids"] == ids and enc["token_type_ids"] == types and any(1 in t for t in types)
    assert max(map(len, ids)) == 48  # some pairs are cut, where warmstart cuts them
    preds = scores(run_dir, pairs)
    assert pipeline_gap(out, pairs, preds) < TOL
    model = transformers.AutoModelForSequenceClassification.from_pretrained(out).eval()
    batch = tok([p["text"] for p in pairs], [p["text_pair"] for p in pairs], truncation=True, padding=True,
                return_tensors="pt")  # fmt: skip
    with torch.no_grad():
        plain = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    without = plain.softmax(-1)
    label = model.config.id2label[0]
    lost = max(abs(float(w[0]) - p["probabilities"][label]) for w, p in zip(without, preds))
    # without token_type_ids the scores differ by more than the tolerance the pipeline check uses (the
    # defect of issue 23); how much more depends on the tiny trained model (7.7e-5 to over 1e-4 seen)
    assert lost > 3 * TOL


def test_a_default_tagger_exports_and_tags_as_warmstart_predict(runs, data, tmp_path):
    run_dir = runs["tagging"]
    out = export_hf(run_dir, tmp_path / "hf")
    tok = transformers.AutoTokenizer.from_pretrained(out)
    model = transformers.AutoModelForTokenClassification.from_pretrained(out).eval()
    unit, task, mine, labels = load_finetuned(run_dir)
    records = [parse_record(json.dumps({"tokens": w}), i, "tagging") for i, w in enumerate(data["words"], 1)]
    batch = task.encode(records, mine, labels, "words").take(range(len(records)))
    enc = tok(data["words"], is_split_into_words=True, truncation=True, padding=True, return_tensors="pt")
    assert torch.equal(enc["input_ids"], batch["input_ids"])
    with torch.no_grad():
        theirs = model(**enc).logits
        gap = float((theirs - unit.logits(batch))[batch["attention_mask"].bool()].abs().max())
    assert gap < TOL
    preds = scores(run_dir, [{"tokens": w} for w in data["words"]])
    for i, (words, pred) in enumerate(zip(data["words"], preds, strict=True)):
        first = {w: p for p, w in reversed(list(enumerate(enc.word_ids(i)))) if w is not None}
        tags = [model.config.id2label[int(theirs[i, first[w]].argmax())] if w in first else "O"
                for w in range(len(words))]  # fmt: skip
        assert tags == pred["tags"]
    assert float(theirs[batch["attention_mask"].bool()].std(0).min()) > 10 * TOL  # logits that vary by token


def test_a_default_qa_model_exports_and_answers_as_warmstart_predict(runs, tmp_path):
    from warmstart.data.catalog import open_dataset

    run_dir = runs["qa"]
    out = export_hf(run_dir, tmp_path / "hf")
    model = transformers.AutoModelForQuestionAnswering.from_pretrained(out).eval()
    assert type(model).__name__ == "BertForQuestionAnswering"
    questions = [{"question": r["question"], "context": r["context"]}
                 for r in list(open_dataset("wiki-qa").records("test"))[:6]]  # fmt: skip
    unit, task, tok, _ = load_finetuned(run_dir)
    records = [parse_record(json.dumps(q), i, "qa") for i, q in enumerate(questions, 1)]
    answers, spans = [], []
    with torch.no_grad():
        for batch in task.encode(records, tok, [], "questions").eval_batches(64):
            start, end = unit.logits(batch)
            got = model(**{k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")})
            allowed = batch["context_mask"].clone()
            allowed[:, 0] = True
            theirs = [x.masked_fill(~allowed, -1e4) for x in (got.start_logits, got.end_logits)]
            assert max(float((a - b)[allowed].abs().max()) for a, b in zip((start, end), theirs)) < TOL
            answers += decode(*theirs, batch, task.cfg.n_best, task.cfg.max_answer_length)
            spanning = {**batch, "allow_null": False}  # the best spans, which a null answer may outscore
            spans += [[a["answer"] for a in decode(*x, spanning, task.cfg.n_best, task.cfg.max_answer_length)]
                      for x in (theirs, (start, end))]  # fmt: skip
    preds = scores(run_dir, questions)
    assert [a["answer"] for a in answers] == [p["answer"] for p in preds]
    assert max(abs(a["score"] - p["score"]) for a, p in zip(answers, preds, strict=True)) < 2 * TOL
    assert spans[0] == spans[1] and all(spans[0])


def test_a_default_multiple_choice_model_exports_and_scores_as_warmstart_predict(runs, data, tmp_path):
    run_dir = runs["choice"]
    out = export_hf(run_dir, tmp_path / "hf")
    tok = transformers.AutoTokenizer.from_pretrained(out)
    model = transformers.AutoModelForMultipleChoice.from_pretrained(out).eval()
    records = [{"context": r["text"], "choices": r["choices"]} for r in data["choices"]]
    for r, pred in zip(records, scores(run_dir, records), strict=True):
        k = len(r["choices"])
        enc = tok([r["context"]] * k, r["choices"], truncation=True, padding=True, return_tensors="pt")
        with torch.no_grad():
            probs = model(**{n: v.unsqueeze(0) for n, v in enc.items()}).logits.softmax(-1)[0]
        assert max(abs(float(a) - b) for a, b in zip(probs, pred["probabilities"])) < TOL


# ------------------------------------------------------------------------------------------- checkpoints
def exported_logits(out, batch):
    model = transformers.AutoModelForSequenceClassification.from_pretrained(out).eval()
    with torch.no_grad():
        return model(**{k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}).logits


def test_export_takes_the_scored_checkpoint_and_says_which(runs, data, tmp_path, capsys):
    run_dir = runs["single"]
    best_step = json.loads((run_dir / "best" / "best.json").read_text())["step"]
    assert best_step == json.loads((run_dir / "test_metrics.json").read_text())["best_step"]
    units = {name: load_finetuned(run_dir / name) for name in ("best", "final")}
    _, task, tok, labels = units["best"]
    batch = task.encode([{"text": t} for t in data["texts"]], tok, labels, "texts").take(range(16))
    with torch.no_grad():
        want = {name: u[0].logits(batch) for name, u in units.items()}
    assert float((want["best"] - want["final"]).abs().max()) > 1e-3  # two different models
    capsys.readouterr()
    for flags, name in (([], "best"), (["--checkpoint", "final"], "final")):
        code, out, _ = run(capsys, "export", run_dir, "--out", tmp_path / name, *flags)
        assert code == 0 and f"exported {run_dir / name} ({name}:" in out
        assert float((exported_logits(tmp_path / name, batch) - want[name]).abs().max()) < TOL
    code, out, _ = run(capsys, "export", run_dir, "--out", tmp_path / "default")
    assert f"(best: step {best_step}, validation accuracy" in out and "test_metrics.json use it" in out
    code, _, err = run(capsys, "export", run_dir, "--checkpoint", "step-99", "--out", tmp_path / "x")
    assert_one_line_error(code, err, "has no checkpoint step-99", "pick one it has: best, final, step-")
    assert not (tmp_path / "x").exists()
    code, _, err = run(capsys, "export", run_dir / "best", "--checkpoint", "final", "--out", tmp_path / "y")
    assert_one_line_error(code, err, "is a model directory, not a run")
    code, _, err = run(capsys, "export", run_dir, "--checkpoint", "latest", "--out", tmp_path / "y")
    assert_one_line_error(code, err, "--checkpoint latest is not a checkpoint name", "best, final or step-N")


def test_checkpoint_names_and_the_default_of_a_pretrained_run(runs, tiny_pretrained):
    run_dir = runs["single"]
    last = sorted(p.name for p in (run_dir / "checkpoints").iterdir())[-1]
    short = f"step-{int(last.removeprefix('step-'))}"  # step-4 names step-00000004
    assert choose(run_dir, short).path == run_dir / "checkpoints" / last
    assert (tiny_pretrained / "best").is_dir()  # a pretrained run: final, what `finetune --init` loads
    chosen = choose(tiny_pretrained)
    assert chosen.name == "final" and "finetune --init" in chosen.reason


# ------------------------------------------------------------------------------------------------- LoRA
def test_a_lora_run_exports_merged_and_as_peft_adapters(runs, data, tmp_path, capsys):
    peft = pytest.importorskip("peft")
    run_dir = runs["lora"]
    capsys.readouterr()
    code, said, _ = run(capsys, "export", run_dir, "--out", tmp_path / "hf")
    assert code == 0 and "PEFT adapters in adapter/" in said
    out = tmp_path / "hf"
    config = json.loads((out / "adapter" / "adapter_config.json").read_text())
    assert config["r"] == 4 and len(config["target_modules"]) == 2 * 6  # q, k, v, out, up, down per layer
    assert config["base_model_name_or_path"] == str((out / "base").resolve())
    unit, task, tok, labels = load_finetuned(run_dir)
    batch = task.encode([{"text": t} for t in data["texts"]], tok, labels, "texts").take(range(16))
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    auto = transformers.AutoModelForSequenceClassification
    merged, base = auto.from_pretrained(out).eval(), auto.from_pretrained(out / "base").eval()
    with torch.no_grad():
        want = unit.logits(batch)
        assert float((merged(**inputs).logits - want).abs().max()) < TOL
        assert float((base(**inputs).logits - want).abs().max()) > 1e-3  # the adapters matter
        for name, p in base.named_parameters():  # PEFT must restore the head from the adapter
            if name.startswith(("classifier", "bert.pooler")):
                p.normal_()
        adapted = peft.PeftModel.from_pretrained(base, out / "adapter").eval()
        gap = float((adapted(**inputs).logits - merged(**inputs).logits).abs().max())
    print(f"PEFT adapters on base/ vs the merged export: max abs logit difference {gap:.1e}")
    assert gap < TOL
    last = sorted(p.name for p in (run_dir / "checkpoints").iterdir())[-1]  # the final step, adapters apart
    step = export_hf(run_dir, tmp_path / "step", checkpoint=last, adapter=False)
    final = export_hf(run_dir, tmp_path / "final", checkpoint="final", adapter=False)
    assert not (step / "adapter").exists() and not (final / "base").exists()
    assert float((exported_logits(step, batch) - exported_logits(final, batch)).abs().max()) < 1e-6


def test_a_lora_run_finds_a_relative_init_where_it_was_trained_or_says_what_to_do(
    runs, tiny_pretrained, tmp_path, capsys, monkeypatch
):
    """config.yaml records --init as given: a relative path is looked for where the run was started."""
    import shutil

    from warmstart.config import load_yaml, save_yaml

    work = tmp_path / "work"
    shutil.copytree(runs["lora"], work / "runs" / "lora")
    shutil.copytree(tiny_pretrained, work / "pre")
    config = load_yaml(work / "runs" / "lora" / "config.yaml")
    save_yaml({**config, "init": "pre", "out": "runs/lora"}, work / "runs" / "lora" / "config.yaml")
    monkeypatch.chdir(tmp_path)  # not where it was trained
    capsys.readouterr()
    code, said, _ = run(capsys, "export", "work/runs/lora", "--out", "hf")
    assert code == 0 and (tmp_path / "hf" / "adapter" / "adapter_model.safetensors").is_file()
    shutil.rmtree(work / "pre")
    code, _, err = run(capsys, "export", "work/runs/lora", "--out", "hf2")
    assert_one_line_error(code, err, "--init pre is not there", "--no-adapter")
    code, said, _ = run(capsys, "export", "work/runs/lora", "--out", "hf2", "--no-adapter")
    assert code == 0 and "PEFT" not in said and not (tmp_path / "hf2" / "adapter").exists()


# ------------------------------------------------------------------------------------------- model card
def test_the_export_carries_a_model_card(runs, rt_small, tmp_path):
    out = export_hf(runs["single"], tmp_path / "hf")
    card = (out / "README.md").read_text()
    front = card.split("---")[1]
    assert "library_name: transformers" in front and "pipeline_tag: text-classification" in front
    metrics = json.loads((runs["single"] / "test_metrics.json").read_text())
    assert f"| accuracy | {metrics['test']['accuracy']:.4f} |" in card
    assert f"`{rt_small.name}`" in card and str(rt_small.parent) not in card  # the file's name, not its path
    assert "classification (single_label)" in card
    assert "task.pooling=cls" in card and "0 = `fresh`, 1 = `rotten`" in card
    assert "pipeline('text-classification'" in card and "```yaml\nout:" in card
    assert "language" not in front  # the run does not record one


# ---------------------------------------------------------------------------- cls heads of every family
def cls_run(family, task, tokenizer_dir, tmp_path, labels=(), pooling="cls") -> tuple:
    """A warmstart finetuned model directory of ``family`` whose head reads the raw [CLS] state: a tiny
    transformers task model imported, its task switched to ``pooling`` (an ELECTRA classifier from a tagger:
    ELECTRA's own classifier head has no warmstart twin)."""
    tok = Tokenizer.load(tokenizer_dir)
    source = "tagging" if (family, task) == ("electra", "classification") else task
    extra = {"summary_activation": "tanh"} if (family, task) == ("electra", "multiple_choice") else {}
    hf = tiny_task_model(family, source, tok, labels, initializer_range=0.3, **extra)
    ws = import_hf(hf_dir(tmp_path / "src", hf, tokenizer_dir), tmp_path / "ws")
    config = json.loads((ws / "config.json").read_text())
    config["warmstart"]["task"].update(name=task, pooling=pooling, problem="single_label")
    (ws / "config.json").write_text(json.dumps(config))
    return ws, tok


FAMILIES = [
    (f, t) for f in ("bert", "roberta", "albert", "electra") for t in ("classification", "multiple_choice")
]


@pytest.mark.parametrize("family,task", FAMILIES, ids=[f"{f}-{t}" for f, t in FAMILIES])
def test_cls_heads_export_exactly_in_every_family(family, task, small_tokenizer, bpe_shards, wiki_extracts,
                                                 tmp_path):  # fmt: skip
    ws, tok = cls_run(family, task, bpe_shards / "tokenizer" if family == "roberta" else small_tokenizer,
                      tmp_path)  # fmt: skip
    unit, task_obj, _, labels = load_finetuned(ws)
    auto = {
        "classification": "AutoModelForSequenceClassification",
        "multiple_choice": "AutoModelForMultipleChoice",
    }
    model = getattr(transformers, auto[task]).from_pretrained(export_hf(ws, tmp_path / "hf")).eval()
    assert type(model).__name__.startswith(family.capitalize())
    if task == "classification":
        records = [{"text": t[:200]} for t in wiki_extracts[40:52]]
        batch = task_obj.encode(records, tok, labels, "texts").take(range(len(records)))
    else:
        batch = task_obj.encode(choice_records(wiki_extracts, 8), tok, [], "choices").take(range(8))
    types = None if family == "roberta" else batch["token_type_ids"]
    with torch.no_grad():
        mine = unit.logits(batch) if task == "classification" else unit.scores(batch)
        theirs = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       token_type_ids=types).logits  # fmt: skip
    keep = torch.ones_like(mine, dtype=torch.bool) if task == "classification" else batch["choice_mask"]
    assert float(mine[keep].std()) > 0.1  # logits that differ between inputs
    gap = float((mine - theirs)[keep].abs().max())
    print(f"{family} {task}, task.pooling=cls: max abs logit difference {gap:.1e}")
    assert gap < TOL


CASES = {
    "mean": ("bert", "classification", {}, "mean", ["task.pooling=mean has no transformers head",
                                                     "task.pooling=cls (the default) or pooler"]),
    "electra-pooler": ("electra", "classification", {}, "pooler", ["task.pooling=pooler has no ELECTRA head",
                                                                   "task.pooling=cls (the default)"]),
    "electra-wide": ("electra", "classification", {"labels": [f"L{i}" for i in range(17)]}, "cls",
                     ["17 outputs has no exact transformers head at hidden_size 32"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_heads_without_a_transformers_twin_are_refused_in_one_line(case, small_tokenizer, tmp_path, capsys):
    family, task, extra, pooling, needles = CASES[case]
    ws, _ = cls_run(family, task, small_tokenizer, tmp_path, pooling=pooling, **extra)
    code, _, err = run(capsys, "export", ws, "--out", tmp_path / "hf")
    assert_one_line_error(code, err, *needles)
