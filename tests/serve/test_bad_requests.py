"""Bad requests get a 4xx status and one line saying what is wrong; no request names a file to read."""

import pytest

from warmstart.serve.limits import Limits


@pytest.fixture(scope="module")
def client(api, classifier_run):
    return api(classifier_run, max_chars=100)


def error(response, status: int) -> str:
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert "\n" not in message and message
    return message


def test_oversized_input_is_413(client):
    assert "over the limit of 100" in error(client.post("/api/predict", json={"text": "x" * 101}), 413)
    pair = {"text": "x" * 60, "text_pair": "y" * 60}  # all text fields count together
    assert "120 characters" in error(client.post("/api/predict", json=pair), 413)
    huge = b'{"text": "' + b"x" * Limits(max_chars=100).max_body + b'"}'  # refused before it is parsed
    assert "request body is over" in error(client.post("/api/predict", content=huge), 413)


def test_wrong_types_are_422(client):
    assert error(client.post("/api/predict", json={"text": 5}), 422) == "text: Input should be a valid string"
    assert "text: Field required" == error(client.post("/api/predict", json={}), 422)
    assert "must be a JSON object" in error(client.post("/api/predict", json=["a", "b"]), 422)


def test_a_wrong_item_of_a_list_is_named_by_its_index(api, choice_run):
    fields = {"context": "The river rose.", "choices": ["The town flooded.", 5]}
    assert error(api(choice_run).post("/api/predict", json=fields), 422) == (
        "choices[1]: Input should be a valid string"
    )


def test_unknown_fields_are_422(client):
    message = error(client.post("/api/predict", json={"text": "fine", "path": "/etc/passwd"}), 422)
    assert message.startswith("unknown field 'path'; this model takes text, text_pair (optional)")
    misnamed = error(client.post("/api/predict", json={"review": "fine"}), 422)  # a run's CSV column name
    assert misnamed.startswith("unknown field 'review'; this model takes text")  # not "text: Field required"


def test_bad_json_is_400(client):
    body = b'{"text": "unclosed'
    headers = {"content-type": "application/json"}
    assert "not valid JSON" in error(client.post("/api/predict", content=body, headers=headers), 400)


def test_input_the_model_refuses_is_400(client):
    assert error(client.post("/api/predict", json={"text": "   "}), 400).startswith("the input has no text")


def test_unknown_routes_and_methods(client):
    assert error(client.get("/etc/passwd"), 404) == "Not Found"
    assert error(client.get("/api/predict"), 405) == "Method Not Allowed"
    assert error(client.post("/api/stream", json={"text": "a"}), 404) == "Not Found"  # not a generator


def test_generation_limits(api, gpt2_run):
    client = api(gpt2_run, max_new_tokens=10)
    assert "max_new_tokens is over" in error(
        client.post("/api/predict", json={"text": "a", "max_new_tokens": 11}), 413
    )
    too_hot = {"text": "a", "strategy": "sample", "temperature": 0}
    assert error(client.post("/api/predict", json=too_hot), 422).startswith("temperature:")
    assert error(client.post("/api/stream", json={"text": "a", "strategy": "top"}), 422).startswith(
        "strategy:"
    )
    long = {"text": "word " * 100}  # more tokens than the model's 64 positions: 400 before any event
    assert "context of 64" in error(client.post("/api/stream", json=long), 400)


def test_time_limit_is_504(api, gpt2_run):
    client = api(gpt2_run, timeout=1e-6)
    assert "took over" in error(client.post("/api/predict", json={"text": "a", "max_new_tokens": 5}), 504)


def test_a_body_that_does_not_arrive_is_408():
    import anyio

    from warmstart.serve.limits import BodyLimit

    sent = []

    async def trickle():
        await anyio.sleep(5)
        return {"type": "http.request", "body": b"{}"}

    async def send(message):
        sent.append(message)

    async def app(scope, receive, send):
        raise AssertionError("the app must not be called")

    anyio.run(BodyLimit(app, max_body=100, timeout=0.05), {"type": "http", "method": "POST"}, trickle, send)
    assert sent[0]["status"] == 408 and b"took over 0.05 s" in sent[1]["body"]


def test_a_get_is_answered_without_waiting_for_a_body():
    """No GET reads its body: GET /api/health answers at once even if a client trickles one after its
    headers (so no GET gets a 408 or 413 for its body)."""
    import time

    import anyio

    from warmstart.serve.limits import BodyLimit

    called = []

    async def never():
        await anyio.sleep(5)
        return {"type": "http.request", "body": b"x" * 100}

    async def app(scope, receive, send):
        called.append(scope["method"])

    start = time.monotonic()
    anyio.run(BodyLimit(app, max_body=1, timeout=5), {"type": "http", "method": "GET"}, never, None)
    assert called == ["GET"] and time.monotonic() - start < 1
