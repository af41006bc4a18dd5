"""Per-class precision/recall/F1, the confusion matrix and the majority baseline of a finetuned run's test
split (equal to scikit-learn's on the same predictions), and the line for a model that predicts one class."""

import json

import pytest
import torch

from warmstart.cli.main import main
from warmstart.models.bert import BertConfig, BertModel
from warmstart.tasks.base import EvalBatches
from warmstart.tasks.breakdown import breakdown, counting, one_class_warning
from warmstart.tasks.classification import ClassificationFeatures, SequenceClassifier
from warmstart.train.loop import evaluate

pytestmark = pytest.mark.integration


class Fixed(torch.nn.Module):
    """A unit whose predictions are given: batch = {"gold", "pred"}."""

    labels = ["a", "b", "c"]

    def gold_and_predicted(self, batch):
        return batch["gold"], batch["pred"]


def test_counts_equal_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    g = torch.randint(0, 3, (200,), generator=torch.Generator().manual_seed(0))
    p = torch.where(torch.rand(200, generator=torch.Generator().manual_seed(1)) < 0.6, g, (g + 1) % 3)
    batches = [{"gold": g[i : i + 64], "pred": p[i : i + 64]} for i in range(0, 200, 64)]
    parts = breakdown(Fixed(), batches, torch.device("cpu"), {"a": 5, "b": 50, "c": 7})
    assert parts["confusion"] == metrics.confusion_matrix(g, p).tolist() and parts["count"] == 200
    prec, rec, f1, support = metrics.precision_recall_fscore_support(g, p, zero_division=0)
    for i, name in enumerate(Fixed.labels):
        c = parts["per_class"][name]
        assert [c["precision"], c["recall"], c["f1"]] == pytest.approx([prec[i], rec[i], f1[i]])
        assert c["support"] == support[i]
    assert parts["majority"] == {"label": "b", "accuracy": float((g == 1).float().mean())}
    assert parts["predicted_classes"] == 3 and one_class_warning(parts) is None
    one = breakdown(Fixed(), [{"gold": g, "pred": torch.ones_like(g)}], torch.device("cpu"), {"b": 1})
    assert one["predicted_classes"] == 1
    assert one_class_warning(one).startswith("warning: the model predicts 'b' for every test example")


def test_a_finetune_run_writes_its_breakdown_and_report(tiny_pretrained, rt_small, tmp_path, capsys):
    out = tmp_path / "ft"
    argv = ["finetune", "--init", str(tiny_pretrained), "--dataset", str(rt_small), "--out", str(out),
            "--epochs", "1", "train.progress=false", "train.batch_size=16", "task.max_length=48"]  # fmt: skip
    assert main(argv) == 0
    tm = json.loads((out / "test_metrics.json").read_text())
    parts = tm["breakdown"]
    matrix = torch.tensor(parts["confusion"])
    assert int(matrix.sum()) == tm["sizes"]["test"] == parts["count"]
    assert float(matrix.diag().sum() / matrix.sum()) == pytest.approx(tm["test"]["accuracy"])
    said = capsys.readouterr().out.splitlines()
    warned = any(line.startswith("warning: the model predicts") for line in said)
    assert warned == (parts["predicted_classes"] == 1) and said[-1].startswith("share")
    assert main(["report", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "Where the model is right and wrong" in md and "Majority-class baseline" in md
    assert "confusion matrix" in md and (out / "report_training.png").is_file()


def test_counting_while_evaluating_equals_a_pass_of_its_own():
    """The per-class breakdown counted during the evaluation's forward passes (one pass, as finetuning's test
    scoring and `warmstart evaluate` now do) equals the separate pass's, and the metrics are unchanged."""
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)  # fmt: skip
    unit = SequenceClassifier(BertModel(config), ["a", "b", "c"])
    g = torch.Generator().manual_seed(1)
    ids = [
        torch.randint(5, 100, (int(n),), generator=g).tolist()
        for n in torch.randint(3, 30, (150,), generator=g)
    ]
    features = ClassificationFeatures(
        ids, [[0] * len(x) for x in ids], torch.randint(0, 3, (150,), generator=g), 0
    )
    batches, cpu = EvalBatches(features, 16), torch.device("cpu")
    alone = breakdown(unit, batches, cpu, {"a": 1})
    plain = evaluate(unit, batches, cpu)
    with counting(unit) as confusion:
        metrics = evaluate(unit, batches, cpu)
    assert confusion.summary({"a": 1}) == alone and alone["count"] == 150
    assert metrics == pytest.approx(plain) and "logits" not in vars(unit)  # the wrapper is gone after
    assert float(torch.tensor(alone["confusion"]).diag().sum() / 150) == pytest.approx(metrics["accuracy"])
    with counting(Fixed()) as none:  # no logits to count: nothing wrapped
        assert none is None
