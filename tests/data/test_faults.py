"""Faults a tester found in reading user files: numeric labels split into classes, SQuAD answers off their
context, byte-order marks, huge lines, and JSON text that is not Unicode. Each is checked on the reader and
on the real command, whose error is one line and whose input files are left byte-identical."""

import csv
import json
import tracemalloc

import pytest
import torch

from tests.helpers.cli import assert_one_line_error, run
from warmstart.data import lines as line_io
from warmstart.data.catalog import open_dataset
from warmstart.data.choice import read_choice_file
from warmstart.data.conll import read_conll
from warmstart.data.labels import canonical_label
from warmstart.data.readers import read_file
from warmstart.data.squad import read_squad
from warmstart.errors import WarmstartError
from warmstart.tasks.base import TaskConfig
from warmstart.tasks.classification import ClassificationTask
from warmstart.tasks.qa_windows import check_record

FT = ["train.progress=false", "task.max_length=32", "train.batch_size=8", "--epochs", "1"]
MiB = 1 << 20


def jsonl(path, lines: list[str]):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def labels_of(path, **options) -> list[str]:
    return [r["label"] for r in read_file(path, label_column="label", **options)]


# ------------------------------------------------------------------ 1. one class per numeric value


def test_numerically_equal_json_labels_are_one_class(tmp_path):
    path = jsonl(
        tmp_path / "l.jsonl",
        [f'{{"text": "t{i}", "label": {v}}}' for i, v in enumerate(["1", "1.0", '"1"', "1e0", '" 1.0 "'])]
        + [f'{{"text": "z{i}", "label": {v}}}' for i, v in enumerate(["0", "0.0", "-0.0", '"0"', "0.50"])],
    )
    assert labels_of(path) == ["1"] * 5 + ["0"] * 4 + ["0.5"]
    assert open_dataset(str(path)).labels() == ["0", "0.5", "1"]


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_csv_numeric_labels_are_one_class_and_codes_stay_text(tmp_path, suffix):
    path = tmp_path / f"l{suffix}"
    delimiter = "\t" if suffix == ".tsv" else ","
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, delimiter=delimiter)
        writer.writerow(["text", "label"])
        for i, label in enumerate(["1", "1.0", "2", "2.00", "007", "+1", "Pos", "pos"]):
            writer.writerow([f"text {i}", label])
    assert labels_of(path) == ["1", "1", "2", "2", "007", "+1", "Pos", "pos"]


def test_large_integers_are_not_rounded_together():
    assert canonical_label("12345678901234567890123456789012345678901") != canonical_label(
        "12345678901234567890123456789012345678902"
    )
    assert canonical_label(1e20) == canonical_label("100000000000000000000") == str(10**20)


@pytest.mark.parametrize(
    "rows, needles",
    [
        (['{"text": "a", "label": true}', '{"text": "b", "label": 1}'], ("line 2", "line 1", "mix booleans")),
        (['{"text": "a", "label": 0}', '{"text": "b", "label": "false"}'], ("line 2", "mix booleans")),
        (['{"text": "a", "label": "x"}', '{"text": "b", "label": NaN}'], ("line 2", "not a finite number")),
    ],
)
def test_ambiguous_labels_are_refused_by_the_command(tmp_path, capsys, rows, needles):
    path = jsonl(tmp_path / "amb.jsonl", rows)
    before = path.read_bytes()
    code, _, err = run(capsys, "data", "show", path)
    assert_one_line_error(code, err, str(path), *needles)
    assert path.read_bytes() == before


def test_boolean_labels_are_one_class(tmp_path):
    path = jsonl(tmp_path / "b.jsonl", ['{"text": "a", "label": true}', '{"text": "b", "label": "True"}'])
    assert labels_of(path) == ["true", "true"]
    table = tmp_path / "b.csv"
    table.write_text("text,label\na,True\nb,false\nc,TRUE\nd,1\n", encoding="utf-8")
    with pytest.raises(WarmstartError, match="line 5 of .*b.csv: the label '1' is a number but line 2"):
        labels_of(table)


def test_regression_labels_are_floats_and_must_be_finite(tmp_path):
    path = jsonl(tmp_path / "r.jsonl", ['{"text": "a", "label": 0.50}', '{"text": "b", "label": "3"}'])
    task = ClassificationTask(TaskConfig(problem="regression"))
    targets = task.targets(list(read_file(path, label_column="label")), [], "r")
    assert targets.dtype == torch.float32 and targets.tolist() == [0.5, 3.0]
    with pytest.raises(WarmstartError, match="not a finite number"):
        task.targets([{"text": "a", "label": "inf"}], [], "r")


def test_task_merges_spellings_and_reads_labels_of_older_models():
    task = ClassificationTask(TaskConfig())
    records = [{"text": "a", "label": "1"}, {"text": "b", "label": 1.0}, {"text": "c", "label": 0}]
    assert task.labels(records) == ["0", "1"]
    assert task.targets(records, ["0", "1"], "x").tolist() == [1, 1, 0]
    assert task.targets(records, ["0.0", "1.0"], "x").tolist() == [1, 1, 0]  # a model trained on 1.0
    multi = ClassificationTask(TaskConfig(problem="multi_label"))
    assert multi.labels([{"text": "a", "label": "1|1.0|2"}]) == ["1", "2"]


def test_choice_labels_are_indices(tmp_path):
    path = jsonl(tmp_path / "c.jsonl", ['{"context": "q", "choices": ["a", "b"], "label": 1.0}'])
    assert [r["label"] for r in read_choice_file(path, "context")] == ["1"]


def test_finetune_trains_one_class_per_numeric_value(tiny_pretrained, wiki_extracts, tmp_path, capsys):
    spellings = ["1", "1.0", '"1"', "0", "0.0", '"0"']
    path = jsonl(
        tmp_path / "train.jsonl",
        [
            json.dumps({"text": t[:200]})[:-1] + f', "label": {spellings[i % 6]}}}'
            for i, t in enumerate(wiki_extracts[:60])
        ],
    )
    before = path.read_bytes()
    out = tmp_path / "ft"
    code, _, err = run(capsys, "finetune", "--init", tiny_pretrained, "--dataset", path, "--out", out, *FT)
    assert code == 0, err
    per_class = json.loads((out / "test_metrics.json").read_text())["breakdown"]["per_class"]
    assert sorted(per_class) == ["0", "1"]
    assert path.read_bytes() == before


# ------------------------------------------------------------------ 2. SQuAD answers lie in their context

CONTEXT = "Paris is the capital of France. The Eiffel Tower was finished in 1889."


def squad_file(path, answers_of_second: list[dict], bom: bool = False):
    qas = [
        {"id": "q1", "question": "Capital?", "answers": [{"text": "Paris", "answer_start": 0}]},
        {"id": "q2", "question": "When?", "answers": answers_of_second},
    ]
    data = {"data": [{"paragraphs": [{"context": "Warm up.", "qas": []}, {"context": CONTEXT, "qas": qas}]}]}
    path.write_bytes(b"\xef\xbb\xbf" * bom + json.dumps(data).encode())
    return path


BAD_ANSWERS = [
    ({"text": "1889", "answer_start": 500}, "lies past the end of its context (70 characters)"),
    ({"text": "1889.", "answer_start": 66}, "runs past the end of its context"),
    ({"text": "Paris", "answer_start": -70}, "negative answer_start -70"),
    ({"text": "", "answer_start": 3}, "is blank"),
    ({"text": "1889", "answer_start": 60}, "does not match its context"),
]


@pytest.mark.parametrize("answer, says", BAD_ANSWERS)
def test_squad_answer_off_its_context_is_refused(tmp_path, answer, says):
    path = squad_file(tmp_path / "train.json", [answer])
    with pytest.raises(WarmstartError) as info:
        read_squad(path)
    assert str(path) in str(info.value) and "article 0, paragraph 1, question q2" in str(info.value)
    assert says in str(info.value) and "answer_start" in info.value.fix


@pytest.mark.parametrize("answer, says", BAD_ANSWERS)
def test_qa_records_from_any_source_are_checked(answer, says):
    record = {"id": "q", "question": "?", "context": CONTEXT, "answers": [answer]}
    with pytest.raises(WarmstartError, match="record 3, question q"):
        check_record(record, "mine (train)", 3)


def test_finetune_refuses_a_bad_answer_in_a_later_record(tiny_pretrained, tmp_path, capsys):
    path = squad_file(tmp_path / "qa.json", [{"text": "1889", "answer_start": 500}], bom=True)
    before = path.read_bytes()
    argv = ["finetune", "--task", "extractive_qa", "--init", tiny_pretrained, "--dataset", path]
    code, _, err = run(capsys, *argv, "--out", tmp_path / "o", *FT, "task.doc_stride=8")
    assert_one_line_error(code, err, str(path), "question q2", "lies past the end")
    assert path.read_bytes() == before and not (tmp_path / "o").exists()


def test_squad_with_a_bom_reads(tmp_path):
    path = squad_file(tmp_path / "bom.json", [{"text": "1889", "answer_start": 65}], bom=True)
    assert [r["answers"] for r in read_squad(path)][1] == [{"text": "1889", "answer_start": 65}]


# ------------------------------------------------------------------ 3. a UTF-8 byte-order mark is not text

BOM = b"\xef\xbb\xbf"
CONLL = "-DOCSTART- -X- O\n\nEU NNP B-ORG\nrejects VBZ O\n\n-DOCSTART- -X- O\n\nPeter NNP B-PER\n"


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_conll_with_a_bom_keeps_its_documents(tmp_path, newline):
    path = tmp_path / "ner.conll"
    path.write_bytes(BOM + CONLL.replace("\n", newline).encode())
    records = list(read_conll(path))
    assert [r["tokens"] for r in records] == [["EU", "rejects"], ["Peter"]]
    assert [r["doc"] for r in records] == [0, 1]


def test_data_show_of_a_conll_with_a_bom(tmp_path, capsys):
    path = tmp_path / "ner.conll"
    path.write_bytes(BOM + CONLL.encode())
    code, out, err = run(capsys, "data", "show", path, "--examples", "5")
    assert code == 0, err
    assert "all 2\n" in out and "words:    ~3\n" in out  # two sentences, three words: no DOCSTART sentence


@pytest.mark.parametrize(
    "name, content",
    [
        ("d.csv", "text,label\nhello,a\n"),
        ("d.tsv", "text\tlabel\nhello\ta\n"),
        ("d.jsonl", '{"text": "hello", "label": "a"}\n'),
        ("d.txt", "hello\n"),
    ],
)
def test_tables_and_text_with_a_bom(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(BOM + content.encode())
    label = None if name.endswith(".txt") else "label"
    assert [r["text"] for r in read_file(path, label_column=label)] == ["hello"]


def test_choice_file_with_a_bom(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(BOM + b'{"context": "q", "choices": ["a", "b"], "label": 0}\n')
    assert [r["choices"] for r in read_choice_file(path, "context")] == [["a", "b"]]


# ------------------------------------------------------------------ 4. lines are read in bounded pieces

LONG = {  # a first good line, then a line of 4 MiB (no newline in it)
    "c.txt": ("fine\n", "word "),
    "c.jsonl": ('{"text": "fine"}\n', '{"text": "' + "word " * 10),
    "c.csv": ("text\nfine\n", "word "),
    "c.tsv": ("text\nfine\n", "word "),
    "c.conll": ("EU B-ORG\n", "x"),
}


def read_any(path):
    return list(read_conll(path) if path.suffix == ".conll" else read_file(path))


@pytest.mark.parametrize("name", sorted(LONG))
def test_a_long_line_is_refused_before_it_is_read_whole(tmp_path, name):
    head, piece = LONG[name]
    path = tmp_path / name
    path.write_text(head + piece * (4 * MiB // len(piece)) + "\n", encoding="utf-8")
    line = head.count("\n") + 1
    tracemalloc.start()
    try:
        with pytest.raises(WarmstartError) as info:
            read_any(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert f"line {line} of {path} is longer than the limit of 1 MiB" in str(info.value)
    assert peak < 3 * MiB  # the 4 MiB line was never held whole (nor decoded, nor split)


def test_line_limit_boundary(tmp_path, monkeypatch):
    monkeypatch.setattr(line_io, "MAX_LINE_BYTES", 64)
    path = tmp_path / "b.txt"
    path.write_bytes(BOM + b"a" * 61 + b"\n" + b"b" * 64 + b"\n" + b"c" * 64)  # the BOM counts; no last \n
    assert [len(r["text"]) for r in read_file(path)] == [61, 64, 64]
    path.write_bytes(b"a\n" + b"b" * 65 + b"\n")
    with pytest.raises(WarmstartError, match="line 2 of .* longer than the limit of 64 bytes"):
        read_any(path)


def test_a_huge_csv_field_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "q.csv"
    path.write_text('text,label\nok,a\n"' + ("x" * 1000 + "\n") * 1100 + '",b\nlast,c\n', encoding="utf-8")
    before = path.read_bytes()
    code, _, err = run(capsys, "data", "show", path)
    assert_one_line_error(code, err, f"line 3 of {path} starts a field longer than the limit of 1 MiB")
    assert path.read_bytes() == before


def test_a_huge_paragraph_is_refused(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("short\n\n" + "a line of a long paragraph\n" * 50_000, encoding="utf-8")
    with pytest.raises(WarmstartError, match="paragraph starting on line 3 of .* limit of 1 MiB"):
        list(read_file(path, txt_mode="blank"))


def hidden(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_prepare_refuses_a_huge_single_line_corpus(small_tokenizer, tmp_path, capsys):
    path = tmp_path / "one.txt"
    path.write_text("word " * (3 * MiB // 5), encoding="utf-8")
    before = path.read_bytes()
    out = tmp_path / "s"
    code, _, err = run(capsys, "prepare", "--corpus", path, "--tokenizer", small_tokenizer, "--out", out)
    assert_one_line_error(code, err, f"line 1 of {path} is longer than the limit of 1 MiB")
    assert path.read_bytes() == before and not out.exists() and hidden(tmp_path) == []


# ------------------------------------------------------------------ 6. JSON text must be Unicode


@pytest.mark.parametrize(
    "line, key, surrogate",
    [
        (r'{"text": "\ud800"}', "'text'", r"\ud800"),
        (r'{"text": "ok \uDC00 tail"}', "'text'", r"\udc00"),
        (r'{"text": "\ude00\ud83d reversed pair"}', "'text'", r"\ude00"),
        (r'{"text": "fine", "pair": "\udbff"}', "'pair'", r"\udbff"),
        (r'{"text": "fine", "label": "\ud801"}', "'label'", r"\ud801"),
        (r'{"text": "fine", "meta": {"tags": ["x", "\udfff"]}}', "'meta.tags[1]'", r"\udfff"),
    ],
)
def test_unpaired_surrogates_are_refused(tmp_path, line, key, surrogate):
    path = jsonl(tmp_path / "s.jsonl", ['{"text": "good", "pair": "p", "label": "x"}', line])
    with pytest.raises(WarmstartError) as info:
        list(read_file(path))
    message = str(info.value)
    assert message.startswith(
        f"line 2 of {path}: the text in {key} holds an unpaired surrogate ({surrogate})"
    )
    assert "not valid Unicode" in message


def test_surrogate_pairs_and_escaped_backslashes_are_text(tmp_path):
    path = jsonl(tmp_path / "ok.jsonl", [r'{"text": "smile \ud83d\ude00"}', r'{"text": "a literal \\ud800"}'])
    assert [r["text"] for r in read_file(path)] == ["smile \U0001f600", "a literal \\ud800"]


def test_prepare_refuses_a_surrogate_in_a_jsonl_corpus(small_tokenizer, wiki_extracts, tmp_path, capsys):
    rows = [json.dumps({"text": t[:200]}) for t in wiki_extracts[:30]]
    path = jsonl(tmp_path / "c.jsonl", rows[:20] + [r'{"text": "broken \ud800 text"}'] + rows[20:])
    before, out = path.read_bytes(), tmp_path / "s"
    code, _, err = run(capsys, "prepare", "--corpus", path, "--tokenizer", small_tokenizer, "--out", out)
    assert_one_line_error(
        code, err, f"line 21 of {path}", r"unpaired surrogate (\ud800)", "not valid Unicode"
    )
    assert path.read_bytes() == before and not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_squad_text_with_a_surrogate_is_refused(tmp_path):
    path = tmp_path / "s.json"
    qa = '{"id": "q7", "question": "Why \\ud800?", "answers": []}'
    path.write_text('{"data": [{"paragraphs": [{"context": "c", "qas": [' + qa + "]}]}]}", encoding="utf-8")
    with pytest.raises(
        WarmstartError, match=r"article 0, paragraph 0, question q7: the text in 'question' holds"
    ):
        read_squad(path)


def test_predict_input_with_a_surrogate_is_refused():
    from warmstart.inference.records import parse_record

    with pytest.raises(WarmstartError, match=r"line 3 of the input: .*unpaired surrogate \(\\ud800\)"):
        parse_record(r'{"text": "\ud800"}', 3, "labeled")


def test_squad_answerable_question_without_answers_is_refused(tmp_path):
    path = tmp_path / "v2.json"
    qa = {"id": "q5", "question": "?", "answers": [], "is_impossible": False}
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": CONTEXT, "qas": [qa]}]}]}))
    with pytest.raises(WarmstartError, match="question q5 says is_impossible: false but has no answers"):
        read_squad(path)
