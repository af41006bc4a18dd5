"""The classic baseline: TF-IDF word uni- and bigrams + logistic regression (scikit-learn).

The L2 strength C is picked on validation from a small grid (the finetuned models likewise keep their best
validation checkpoint), then that model is scored once on test. Metrics are computed as the classification
task computes them: accuracy, and macro-F1 over the classes present in the gold labels.
"""

from __future__ import annotations

from warmstart.errors import WarmstartError

C_GRID = (0.1, 1.0, 10.0, 100.0)


def require_sklearn() -> None:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise WarmstartError(
            "the TF-IDF baseline needs scikit-learn", "pip install -c constraints.txt -e '.[study]'"
        ) from None


def sklearn_version() -> str:
    try:
        import sklearn
    except ImportError:
        return "not installed"
    return sklearn.__version__


def _text(row: dict) -> str:
    return f"{row['text']} {row['text_pair']}" if row.get("text_pair") else row["text"]


def scores(gold: list[str], pred: list[str]) -> dict:
    """accuracy and macro_f1, as warmstart's classification task reports them."""
    accuracy = sum(g == p for g, p in zip(gold, pred)) / len(gold)
    f1s = []
    for c in sorted(set(gold)):
        hit = sum(g == c and p == c for g, p in zip(gold, pred))
        predicted, actual = sum(p == c for p in pred), sum(g == c for g in gold)
        precision, recall = (hit / predicted if predicted else 0.0), hit / actual
        f1s.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return {"accuracy": accuracy, "macro_f1": sum(f1s) / len(f1s)}


def tfidf_baseline(records: dict[str, list[dict]]) -> dict:
    """Fit on records["train"], pick C on validation, score on test: {"validation", "test", "C"}."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    labels = {s: [str(r["label"]) for r in rows] for s, rows in records.items()}
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    x = {"train": vectorizer.fit_transform([_text(r) for r in records["train"]])}
    for split in ("validation", "test"):
        x[split] = vectorizer.transform([_text(r) for r in records[split]])
    if len(set(labels["train"])) < 2:  # one class only: logistic regression cannot fit; predict it
        only = labels["train"][0]
        return {
            "C": None,
            **{s: scores(labels[s], [only] * len(labels[s])) for s in ("validation", "test")},
        }
    best = None
    for c in C_GRID:
        model = LogisticRegression(C=c, max_iter=2000).fit(x["train"], labels["train"])
        validation = scores(labels["validation"], list(model.predict(x["validation"])))
        if best is None or validation["accuracy"] > best[1]["accuracy"]:
            best = (model, validation, c)
    model, validation, c = best
    return {"C": c, "validation": validation, "test": scores(labels["test"], list(model.predict(x["test"])))}
