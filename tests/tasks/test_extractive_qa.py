"""Extractive QA: windows over real wiki-qa contexts, the head's loss, decoding and a short training run."""

import dataclasses

import pytest
import torch

from tests.helpers.shapes import tiny_bert_config
from warmstart.data.wiki_qa import wiki_qa_records
from warmstart.errors import WarmstartError
from warmstart.models.bert import BertModel
from warmstart.tasks.base import EvalBatches, TaskConfig, TrainBatches
from warmstart.tasks.extractive_qa import ExtractiveQATask, QuestionAnswering, settled_null_answers
from warmstart.tasks.qa_decode import decode
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.loop import evaluate


@pytest.fixture(scope="module")
def tokenizer(small_tokenizer):
    return Tokenizer.load(small_tokenizer)


@pytest.fixture(scope="module")
def records():
    return list(wiki_qa_records())


def make_task(max_length=64, doc_stride=16, **kw):
    return ExtractiveQATask(
        TaskConfig(name="extractive_qa", max_length=max_length, doc_stride=doc_stride, **kw)
    )


def tiny_encoder(tokenizer, dropout=0.1):
    torch.manual_seed(0)
    config = tiny_bert_config(
        tokenizer.vocab_size,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    return BertModel(config)


def context_tokens(tokenizer, text):
    return tokenizer.backend.encode(text, add_special_tokens=False)


def test_task_interface():
    task = make_task()
    assert (task.name, task.kind, task.hf_architecture) == ("extractive_qa", "qa", "BertForQuestionAnswering")
    assert task.labels([{"answers": []}]) == []


def test_loss_matches_reference(tokenizer, records):
    task = make_task()
    features = task.encode(records[:6], tokenizer, [], "wiki-qa")
    unit = task.build(tiny_encoder(tokenizer, dropout=0.0), [])
    assert isinstance(unit, QuestionAnswering)
    batch = features.take(range(len(features)))
    loss, stats = unit(batch)

    hidden = unit.encoder(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    logits = hidden @ unit.qa_outputs.weight.T + unit.qa_outputs.bias
    allowed = batch["context_mask"].clone()
    allowed[:, 0] = True
    losses = []
    for i, positions in enumerate((batch["start_positions"], batch["end_positions"])):
        scores = logits[..., i].masked_fill(~allowed, -1e4)
        losses.append(-scores.log_softmax(-1).gather(1, positions[:, None]).mean())
    reference = (losses[0] + losses[1]) / 2
    assert torch.allclose(loss, reference, atol=1e-5)
    assert stats["loss"][1] == len(features)
    assert torch.allclose(stats["loss"][0] / stats["loss"][1], reference, atol=1e-5)
    loss.backward()  # the head gets gradients
    assert unit.qa_outputs.weight.grad.abs().sum() > 0


def test_head_init():
    unit = QuestionAnswering(BertModel(tiny_bert_config(50, num_hidden_layers=1, initializer_range=0.5)))
    assert unit.qa_outputs.weight.shape == (2, 32)
    assert torch.all(unit.qa_outputs.bias == 0)
    assert 0.3 < float(unit.qa_outputs.weight.detach().std()) < 0.7


def test_long_real_context_answer_in_later_window(tokenizer, records):
    max_length, stride = 64, 16
    record = next(r for r in records if r["answers"][0]["answer_start"] > 400)
    features = make_task(max_length, stride).encode([record], tokenizer, [], "wiki-qa")
    question = context_tokens(tokenizer, record["question"]).ids
    context = context_tokens(tokenizer, record["context"])
    room = max_length - 3 - len(question)
    assert len(features) == 1 + -(-(len(context.ids) - room) // (room - stride)) > 2
    labelled = [w for w in range(len(features)) if features.targets[w] != (0, 0)]
    assert labelled and labelled[0] > 0 and features.targets[0] == (0, 0)
    for w in range(len(features)):
        ids, types = features.ids[w], features.types[w]
        assert len(ids) <= max_length
        assert ids[: len(question) + 2] == [tokenizer.cls_id, *question, tokenizer.sep_id]  # question whole
        assert ids[-1] == tokenizer.sep_id
        assert types == [0] * (len(question) + 2) + [1] * (len(ids) - len(question) - 2)
        assert features.offsets[w][: len(question) + 2] == [None] * (len(question) + 2)
        if w:  # consecutive windows share exactly doc_stride context tokens
            previous = [o for o in features.offsets[w - 1] if o is not None]
            current = [o for o in features.offsets[w] if o is not None]
            assert previous[-stride:] == current[:stride]
    w = labelled[0]
    start, end = features.targets[w]
    answer = record["answers"][0]
    assert features.offsets[w][start][0] == answer["answer_start"]
    assert features.offsets[w][end][1] == answer["answer_start"] + len(answer["text"])


def crossing_record(tokenizer, records, max_length, stride):
    """A real context with an answer of 4 tokens over the end of the first window."""
    base = next(r for r in records if len(r["context"]) > 600)
    question = "Which words cross the boundary?"
    room = max_length - 3 - len(context_tokens(tokenizer, question).ids)
    offsets = context_tokens(tokenizer, base["context"]).offsets
    begin, end = offsets[room - 2][0], offsets[room + 1][1]
    text = base["context"][begin:end]
    record = {
        "text": base["context"],
        "id": "cross",
        "question": question,
        "context": base["context"],
        "answers": [{"text": text, "answer_start": begin}],
    }
    return record, room


def test_answer_crossing_window_boundary(tokenizer, records):
    max_length, stride = 64, 16
    record, room = crossing_record(tokenizer, records, max_length, stride)
    features = make_task(max_length, stride).encode([record], tokenizer, [], "made up")
    head = max_length - 1 - room  # [CLS] question [SEP]
    assert features.targets[0] == (0, 0)  # only part of the answer is in window 0
    start, end = features.targets[1]  # window 1 starts at room - stride and holds it fully
    assert (start, end) == (head + stride - 2, head + stride + 1)
    assert all(t == (0, 0) for t in features.targets[2:])

    batch = next(features.eval_batches(64))
    windows, width = batch["input_ids"].shape
    start_logits, end_logits = torch.full((windows, width), -5.0), torch.full((windows, width), -5.0)
    start_logits[0, head + room - 2], end_logits[0, head + room - 1] = 3.0, 3.0  # the cut-off part: 6
    start_logits[1, start], end_logits[1, end] = 4.0, 4.0  # the whole answer: 8
    unit = QuestionAnswering(tiny_encoder(tokenizer), n_best=5, max_answer_length=10)
    [prediction] = decode(start_logits, end_logits, batch, unit.n_best, unit.max_answer_length)
    assert prediction["answer"] == record["answers"][0]["text"]
    assert prediction["start"] == record["answers"][0]["answer_start"]
    assert prediction["score"] == pytest.approx(8.0)


def test_eval_batches_keep_examples_whole(tokenizer, records):
    features = make_task(48, 8).encode(records[:40], tokenizer, [], "wiki-qa")
    seen = []
    for batch in features.eval_batches(6):
        examples = batch["example_index"]
        seen += examples
        assert len(examples) <= 6 or len(set(examples)) == 1
        assert set(batch["examples"]) == set(examples)
    assert seen == features.example_of  # every window once, in order
    runs = [e for i, e in enumerate(seen) if i == 0 or seen[i - 1] != e]
    assert len(runs) == len(set(runs)) == 40  # windows of an example are consecutive, never split


def test_question_too_long_is_cut_and_bad_stride_is_an_error(tokenizer, records):
    record = dict(records[0], question=" ".join(["what is it"] * 40))
    features = make_task(64, 16).encode([record], tokenizer, [], "wiki-qa")
    limit = 64 - 3 - 16 - 1
    question = context_tokens(tokenizer, record["question"]).ids[:limit]
    assert all(ids[1 : limit + 1] == question for ids in features.ids)
    assert all(len(ids) <= 64 for ids in features.ids)
    with pytest.raises(WarmstartError, match="doc_stride"):
        make_task(32, 30).encode([record], tokenizer, [], "wiki-qa")


def test_bad_answer_offset_is_an_error(tokenizer, records):
    record = dict(records[0], answers=[{"text": "nowhere", "answer_start": 3}])
    with pytest.raises(WarmstartError, match="question .*answer_start"):
        make_task().encode([record], tokenizer, [], "mine (train)")


def test_evaluate_and_predict(tokenizer, records):
    task = make_task(64, 16)
    some = records[:12] + [dict(records[12], answers=[])]  # one unanswerable: v2 data
    features = task.encode(some, tokenizer, [], "wiki-qa")
    assert features.allow_null
    unit = task.build(tiny_encoder(tokenizer), [])
    metrics = evaluate(unit, EvalBatches(features, 8), torch.device("cpu"))
    assert set(metrics) == {"loss", "exact_match", "f1"}
    assert 0 <= metrics["exact_match"] <= metrics["f1"] <= 100 and metrics["loss"] > 0
    predictions = [p for batch in features.eval_batches(8) for p in unit.predict(batch)]
    assert [p["id"] for p in predictions] == [r["id"] for r in some]
    for p, r in zip(predictions, some):
        assert set(p) == {"id", "answer", "start", "end", "score"}
        assert p["answer"] == (r["context"][p["start"] : p["end"]] if p["answer"] else "")


@pytest.mark.slow
def test_training_lowers_the_loss(tokenizer, records):
    torch.manual_seed(0)
    task = make_task(96, 32, n_best=10)
    features = task.encode(records[:200], tokenizer, [], "wiki-qa (train)")
    unit = task.build(tiny_encoder(tokenizer), [])
    optimizer = torch.optim.AdamW(unit.parameters(), lr=2e-3)
    train = TrainBatches(features, 16, seed=0)
    losses, threads = [], torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small runs faster on one thread of a shared machine
    try:
        for step in range(150):
            loss, _ = unit(train.batch(step))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(float(loss.detach()))
    finally:
        torch.set_num_threads(threads)
    first, last = sum(losses[:15]) / 15, sum(losses[-15:]) / 15
    assert last < 0.6 * first, (first, last)  # about 3.6 -> 1.2


@dataclasses.dataclass
class Settings:  # the part of a finetune config that settling reads
    task: TaskConfig


@pytest.mark.parametrize(
    "answers,expected",
    [
        ({"text": [], "answer_start": []}, True),  # the datasets layout, unanswerable
        ({"text": ["a"], "answer_start": [0]}, False),
        ([], True),
        ([{"text": "a", "answer_start": 0}], False),
    ],
)
def test_null_answers_are_settled_from_the_training_split(answers, expected):
    answered = {"question": "q", "context": "a", "answers": [{"text": "a", "answer_start": 0}]}
    task = ExtractiveQATask(TaskConfig(name="extractive_qa"))
    cfg = Settings(task.cfg)
    other = {"question": "q", "context": "a", "answers": answers}
    settled = settled_null_answers(cfg, task, [answered, other])
    assert settled.task.null_answers is expected and task.cfg.null_answers is expected
    given = Settings(TaskConfig(name="extractive_qa", null_answers=not expected))
    assert settled_null_answers(given, task, [answered]) is given  # what the user set stays
