"""A study's summary counts failed finetuning runs, never the classic baseline (issue 40: the TF-IDF
baseline at 1% of the labels was counted as a "failed run")."""

from warmstart.study.summary import summarize


def cell(model, seed, best, trained):
    c = {"model": model, "fraction": 0.01, "seed": seed, "train_examples": 80, "metric": "accuracy",
         "test": {"accuracy": best}, "best_validation": best}  # fmt: skip
    return {**c, "steps": 100} if trained else {**c, "C": 1.0}


def test_the_baseline_is_never_a_failed_run_and_a_collapsed_finetune_is():
    cells = [cell("tfidf", s, 0.5, trained=False) for s in (1, 2)]
    cells += [cell("pretrained", 1, 0.5, trained=True), cell("pretrained", 2, 0.8, trained=True)]
    rows = {r["model"]: r for r in summarize(cells, ["tfidf", "pretrained"], [0.01], majority=0.5)}
    assert "failed" not in rows["tfidf"]
    assert rows["pretrained"]["failed"] == 1 and rows["pretrained"]["failed_seeds"] == [1]
