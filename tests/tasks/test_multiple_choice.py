"""Multiple choice: one score per (context, choice), softmax over the example's choices."""

import csv
import json

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.data import choice_records
from tests.helpers.shapes import tiny_encoder
from warmstart.data.catalog import open_dataset
from warmstart.errors import WarmstartError
from warmstart.tasks.base import TaskConfig
from warmstart.tasks.multiple_choice import MultipleChoiceTask
from warmstart.tokenization.tokenizer import Tokenizer


def test_loss_is_cross_entropy_over_each_examples_own_choices(small_tokenizer, wiki_extracts):
    tok = Tokenizer.load(small_tokenizer)
    task = MultipleChoiceTask(TaskConfig(max_length=40))
    recs = choice_records(wiki_extracts)
    feats = task.encode(recs, tok, [], "test")
    batch = feats.take(range(len(recs)))
    assert batch["input_ids"].shape[:2] == (12, 4) and batch["choice_mask"].sum(1).tolist() == [
        2 + i % 3 for i in range(12)
    ]
    unit = task.build(tiny_encoder(), []).eval()
    loss, stats = unit(batch)
    # reference: score each example's choices one at a time, softmax over only those
    ref, correct = [], 0
    with torch.no_grad():
        for i, r in enumerate(recs):
            ids, types = tok.encode_pairs([r["text"]] * len(r["choices"]), r["choices"], 40)
            one = feats.take([i])
            k = len(r["choices"])
            hidden = unit.encoder(
                one["input_ids"][0, :k], one["attention_mask"][0, :k], one["token_type_ids"][0, :k]
            )
            assert one["input_ids"][0, 0, : len(ids[0])].tolist() == ids[0]
            scores = unit.scorer(hidden[:, 0]).squeeze(-1)
            ref.append(F.cross_entropy(scores[None], torch.tensor([int(r["label"])])))
            correct += int(scores.argmax()) == int(r["label"])
    assert loss.item() == pytest.approx(torch.stack(ref).mean().item(), abs=1e-5)
    assert float(stats["accuracy"][0]) == correct
    preds = unit.predict(batch)
    assert [len(p["probabilities"]) for p in preds] == [2 + i % 3 for i in range(12)]
    assert all(sum(p["probabilities"]) == pytest.approx(1, abs=1e-4) for p in preds)


def test_bad_labels_are_clear_errors(small_tokenizer):
    tok = Tokenizer.load(small_tokenizer)
    task = MultipleChoiceTask(TaskConfig())
    with pytest.raises(WarmstartError, match="label '3' but 2 choices"):
        task.encode([{"text": "c", "choices": ["a", "b"], "label": "3"}], tok, [], "x")
    with pytest.raises(WarmstartError, match="has 1 choice"):
        task.encode([{"text": "c", "choices": ["a"], "label": "0"}], tok, [], "x")


def test_choice_files_jsonl_and_swag_csv(tmp_path, wiki_extracts):
    recs = choice_records(wiki_extracts, 30)
    jsonl = tmp_path / "mc.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps({"context": r["text"], "choices": r["choices"], "label": int(r["label"])}) + "\n"
            for r in recs
        )
    )
    data = open_dataset(str(jsonl))
    assert data.kind == "choice" and sum(data.counts()[s] for s in ("train", "validation", "test")) == 30
    assert sorted(r["text"] for r in data.records("all")) == sorted(r["text"] for r in recs)
    swag = tmp_path / "swag.csv"
    with open(swag, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["sent1", "sent2", "ending0", "ending1", "ending2", "label"])
        w.writerow(["She opened the door.", "She", "walked in.", "ate the door.", "flew away.", "0"])
    (row,) = open_dataset(str(swag)).records("all")
    assert row == {
        "text": "She opened the door.",
        "choices": ["She walked in.", "She ate the door.", "She flew away."],
        "label": "0",
    }
