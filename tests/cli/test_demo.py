"""The demo end to end on the real data with the quick budget: tokenizer, shards, MLM, finetuning, report."""

import json

import pytest

from warmstart.cli import main


@pytest.mark.slow
@pytest.mark.integration
def test_quick_demo_writes_a_report_with_real_numbers(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--out", str(out)]) == 0
    assert f"report: {out / 'report.md'}" in capsys.readouterr().out
    report = (out / "report.md").read_text()
    for name in ("pretrained", "scratch"):
        test = json.loads((out / f"finetune-{name}" / "test_metrics.json").read_text())
        assert test["sizes"]["test"] > 1000
        assert f"| {name} | {test['test']['accuracy']:.4f} |" in report
    for png in ("pretrain_loss.png", "finetune_curves.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"({png})" in report
    # the label-scarce study: both twins and TF-IDF on the same subset, and its lines in the report
    study = json.loads((out / "label-scarce" / "study.json").read_text())
    table = {r["model"]: r for r in study["table"]}
    assert set(table) == {"pretrained", "scratch", "tfidf"}
    (n,) = {r["train_examples"] for r in table.values()}  # the same subset for all three
    assert abs(n - 128) <= 2  # half of the quick budget's 256, stratified (rounded per label)
    assert f"### With 50% of the labels ({n} training examples)" in report
    median = table["pretrained"]["accuracy"]["median"]
    assert f"| pretrained | {median:.4f} |" in report
    acc = {(c["model"], c["seed"]): c["test"]["accuracy"] for c in study["cells"]}
    gap = 100 * (acc["pretrained", 1] - acc["scratch", 1])
    assert f"pretrained minus scratch: seed 1 {gap:+.1f} ({int(gap > 0)} of 1 above)" in report
    # the pretraining curve starts at step 0 and validation loss fell
    val = [json.loads(r) for r in (out / "pretrain" / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in val if r["split"] == "validation"]
    assert val[0]["step"] == 0 and val[-1]["loss"] < val[0]["loss"]
    # a second demo into the same place is refused, and the first one is kept
    assert main(["demo", "--quick", "--out", str(out)]) == 2
    assert (out / "report.md").read_text() == report
