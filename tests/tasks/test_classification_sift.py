"""SiFT on sequence classification (sift.*): off is the plain loss exactly; on, the loss adds the weighted
divergence of each problem's outputs (softmax, per-label sigmoid, regression value), only while training."""

import pytest
import torch

from tests.helpers.shapes import tiny_encoder
from warmstart.errors import WarmstartError
from warmstart.objectives.sift import SiftConfig, attach
from warmstart.tasks.base import TaskConfig
from warmstart.tasks.classification import ClassificationTask
from warmstart.tasks.tagging import TaggingTask
from warmstart.tokenization.tokenizer import Tokenizer

LABELS = {
    "single_label": ["a", "b", "c"],
    "multi_label": ["a|b", "b", "c|a"],
    "regression": ["0.5", "2", "4"],
}


def unit_and_batch(tok, wiki_extracts, problem, sift=None):
    task = ClassificationTask(TaskConfig(max_length=40, problem=problem))
    recs = [{"text": t[:200], "label": LABELS[problem][i % 3]} for i, t in enumerate(wiki_extracts[:12])]
    labels = task.labels(recs)
    feats = task.encode(recs, tok, labels, "test")
    unit = task.build(tiny_encoder(), labels).train()
    if sift is not None:
        attach(unit, sift)
    return unit, feats.take(range(len(feats)))


@pytest.mark.parametrize("problem", list(LABELS))
def test_sift_off_is_the_plain_loss_and_on_adds_a_nonnegative_weighted_penalty(
    small_tokenizer, wiki_extracts, problem
):
    tok = Tokenizer.load(small_tokenizer)
    results = {}
    for name, cfg in (("plain", None), ("zero", SiftConfig(weight=0.0)), ("on", SiftConfig(weight=3.0))):
        unit, batch = unit_and_batch(tok, wiki_extracts, problem, cfg)
        torch.manual_seed(5)  # the same dropout draws for the clean pass
        results[name] = unit(batch)
    assert torch.equal(results["zero"][0], results["plain"][0])
    loss, stats = results["on"]
    total, n = stats["sift"]
    assert n == 12 and total >= 0
    torch.testing.assert_close(loss, results["plain"][0] + 3.0 * total / n)
    loss.backward()
    grad = unit.encoder.embeddings.word.weight.grad
    assert grad[batch["input_ids"].unique()].abs().sum() > 0
    with torch.no_grad():  # evaluation: the plain loss
        unit.eval()
        assert "sift" not in unit(batch)[1]


def test_sift_is_refused_for_a_task_that_does_not_take_it(small_tokenizer):
    unit = TaggingTask(TaskConfig()).build(tiny_encoder(), ["O", "B-X"])
    with pytest.raises(WarmstartError, match="classification"):
        attach(unit, SiftConfig(weight=1.0))
