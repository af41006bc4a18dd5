"""POST /api/predict/batch: several inputs of any kind in one request, answered in input order, each as
/api/predict answers it alone; the inputs count together against --max-chars, their number against
--max-batch, and a bad one fails the request with one line naming its index."""

import pytest

JSON = {"content-type": "application/json"}
BATCHES = [  # (run fixture, the inputs: distinct, so an answer out of order would not match)
    (
        "classifier_run",
        [{"text": "A warm, funny film."}, {"text": "Dull and far too long."}, {"text": "Fine."}],
    ),
    (
        "tagger_run",
        [{"text": "Barack Obama visited Paris in 2009 ."}, {"text": "Angela Merkel lives in Berlin ."}],
    ),
    (
        "qa_run",
        [
            {"question": "What is Paris?", "context": "Paris is the capital and largest city of France."},
            {"question": "Who wrote it?", "context": "The novel was written by Jane Austen in 1813."},
        ],
    ),
    (
        "choice_run",
        [
            {"context": "The river rose all night.", "choices": ["The town flooded.", "It was dry."]},
            {"context": "She was hungry.", "choices": ["She ate.", "She slept.", "She sang."]},
        ],
    ),
    (
        "tiny_pretrained",
        [{"text": "The [MASK] is a city.", "top_k": 3}, {"text": "A [MASK] of [MASK].", "top_k": 2}],
    ),
    (
        "gpt2_run",
        [
            {"text": "The city", "max_new_tokens": 6},
            {"text": "Once upon", "max_new_tokens": 4, "strategy": "sample", "top_p": 0.9, "seed": 3},
            {"text": "The river", "max_new_tokens": 3, "strategy": "beam"},
        ],
    ),
    ("t5_text_run", [{"text": "The senate voted on the bill today."}, {"text": "Heavy rain hit the coast."}]),
]


@pytest.mark.parametrize(("run", "inputs"), BATCHES, ids=[b[0] for b in BATCHES])
def test_a_batch_answers_as_the_single_endpoint_in_order(api, request, run, inputs):
    client = api(request.getfixturevalue(run))
    alone = []
    for fields in inputs:
        response = client.post("/api/predict", json=fields)
        assert response.status_code == 200, response.text
        alone.append(response.json())
    batch = client.post("/api/predict/batch", json={"inputs": inputs})
    assert batch.status_code == 200, batch.text
    assert batch.json() == {"results": alone}
    assert len({repr(a) for a in alone}) == len(alone)  # distinct answers: the order is checked
    backwards = client.post("/api/predict/batch", json={"inputs": inputs[::-1]}).json()
    assert backwards == {"results": alone[::-1]}


@pytest.fixture(scope="module")
def client(api, classifier_run):
    return api(classifier_run, max_chars=100, max_batch=3)


def error(response, status: int) -> str:
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert "\n" not in message and message
    return message


def batch(client, *inputs):
    return client.post("/api/predict/batch", json={"inputs": list(inputs)})


def test_a_bad_input_is_named_by_its_index(client):
    assert (
        error(batch(client, {"text": "ok"}, {"text": 5}), 422)
        == "inputs[1].text: Input should be a valid string"
    )
    assert error(batch(client, {"text": "ok"}, {"text": "ok"}, {}), 422) == "inputs[2].text: Field required"
    unknown = error(batch(client, {"text": "ok", "path": "/etc/passwd"}), 422)
    assert unknown.startswith("unknown field 'inputs[0].path'; each input takes text, text_pair (optional)")
    assert error(batch(client, {"text": "ok"}, 7), 422) == "inputs[1] must be a JSON object"
    refused = error(batch(client, {"text": "fine"}, {"text": "fine"}, {"text": "   "}), 400)
    assert refused.startswith("inputs[2]: the input has no text")
    lone = client.post(
        "/api/predict/batch", content=b'{"inputs": [{"text": "a"}, {"text": "b\\ud800"}]}', headers=JSON
    )
    assert error(lone, 422).startswith("inputs[1].text holds an unpaired surrogate")
    named = client.post(
        "/api/predict/batch", content=b'{"inputs": [{"text": "a", "\\udc00": 1}]}', headers=JSON
    )
    assert error(named, 422).startswith("a field name of inputs[0] holds an unpaired surrogate")


def test_the_shape_of_a_batch(client):
    assert error(client.post("/api/predict/batch", json={"inputs": []}), 422).startswith(
        "inputs: List should have"
    )
    assert error(client.post("/api/predict/batch", json={"inputs": 7}), 422).startswith("inputs: ")
    assert error(client.post("/api/predict/batch", json={"texts": ["a"]}), 422).startswith(
        "unknown field 'texts'; a batch takes inputs"
    )
    extra = client.post("/api/predict/batch", json={"inputs": [{"text": "a"}], "texts": ["a"]})
    assert error(extra, 422).startswith("unknown field 'texts'; a batch takes inputs")
    assert "must be a JSON object" in error(client.post("/api/predict/batch", json=[{"text": "a"}]), 422)
    bad_json = client.post("/api/predict/batch", content=b'{"inputs": [{"text": "a"}', headers=JSON)
    assert "not valid JSON" in error(bad_json, 400)


def test_a_batch_counts_its_inputs_and_all_their_text(client):
    assert error(batch(client, *[{"text": "a"}] * 4), 413).startswith(
        "the batch has 4 inputs, over the limit of 3; send fewer (the limit is serve --max-batch)"
    )
    assert batch(client, *[{"text": "x" * 33}] * 3).status_code == 200  # 99 characters in all
    assert error(batch(client, {"text": "x" * 34}, {"text": "x" * 33}, {"text": "x" * 34}), 413).startswith(
        "the batch has 101 characters, over the limit of 100"
    )


def test_generation_limits_in_a_batch(api, gpt2_run):
    client = api(gpt2_run, max_new_tokens=10)
    too_many = batch(client, {"text": "a", "max_new_tokens": 2}, {"text": "b", "max_new_tokens": 11})
    assert error(too_many, 413).startswith("inputs[1].max_new_tokens is over the limit of 10")
    long = batch(client, {"text": "a", "max_new_tokens": 2}, {"text": "word " * 100})
    assert error(long, 400).startswith("inputs[1]: ") and "context of 64" in error(long, 400)
    slow = api(gpt2_run, timeout=1e-6)
    assert "took over" in error(batch(slow, {"text": "a", "max_new_tokens": 5}), 504)


@pytest.mark.parametrize("run", ["classifier_run", "tiny_pretrained", "t5_text_run"])
def test_text_inputs_may_be_plain_strings(api, request, run):
    """As the Hugging Face Inference API: {"inputs": ["a", "b"]} and {"inputs": "a"} for a model of text."""
    client = api(request.getfixturevalue(run))
    texts = ["A warm, funny [MASK].", "Dull and far too [MASK]."]
    objects = client.post("/api/predict/batch", json={"inputs": [{"text": t} for t in texts]}).json()
    assert client.post("/api/predict/batch", json={"inputs": texts}).json() == objects
    mixed = client.post("/api/predict/batch", json={"inputs": [texts[0], {"text": texts[1]}]})
    assert mixed.json() == objects
    one = client.post("/api/predict/batch", json={"inputs": texts[0]})
    assert one.status_code == 200, one.text
    assert one.json() == {"results": objects["results"][:1]}


@pytest.mark.parametrize("run", ["qa_run", "choice_run"])
def test_inputs_of_several_fields_stay_objects(api, request, run):
    client = api(request.getfixturevalue(run))
    assert error(client.post("/api/predict/batch", json={"inputs": ["What is Paris?"]}), 422) == (
        "inputs[0] must be a JSON object"
    )
    assert error(client.post("/api/predict/batch", json={"inputs": "What is Paris?"}), 422).startswith(
        "inputs: "
    )
