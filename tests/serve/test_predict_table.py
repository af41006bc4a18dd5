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
