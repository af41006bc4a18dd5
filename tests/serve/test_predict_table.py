"""`warmstart predict RUN --input F.csv` reads a table by column for a model of texts; a model that reads
JSON objects (QA here) refuses a table in one line, before any prediction is written."""

from tests.helpers.cli import assert_one_line_error, run


def test_a_qa_model_refuses_a_table(qa_run, tmp_path, capsys):
    table = tmp_path / "questions.csv"
    table.write_text("question,context\nWhat is Paris?,Paris is the capital of France.\n")
    out = tmp_path / "preds.jsonl"
    code, _, err = run(capsys, "predict", qa_run, "--input", table, "--out", out)
    assert_one_line_error(code, err, "is a table, but this extractive_qa model reads JSON objects")
    assert not out.exists()


def test_texts_given_as_arguments_are_predicted_as_lines_are(classifier_run, tmp_path, capsys, monkeypatch):
    """`warmstart predict RUN "text" "text"`: one prediction an argument, the same as those lines on stdin;
    texts and --input together are refused in one line."""
    import io
    import json

    texts = ["A warm, funny film.", "Dull and far too long."]
    code, out, err = run(capsys, "predict", classifier_run, *texts)
    assert code == 0, err
    given = [json.loads(line) for line in out.splitlines()]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(texts) + "\n"))
    code, out, err = run(capsys, "predict", classifier_run)
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == given
    assert [g["text"] for g in given] == texts
    lines = tmp_path / "lines.txt"
    lines.write_text("one\n")
    code, _, err = run(capsys, "predict", classifier_run, "two", "--input", lines)
    assert_one_line_error(code, err, "both texts (1) and --input", "not both")
    code, out, err = run(capsys, "predict", classifier_run, lines)  # the file without --input: not a text
    assert_one_line_error(code, err, "lines.txt is a file, given as a text", f"--input {lines}")
    assert out == ""
