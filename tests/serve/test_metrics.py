"""GET /metrics: the Prometheus text format, read back with prometheus_client's own parser: requests by path
and status, a latency histogram by path, the inputs the model answered, and which model is served."""

from prometheus_client.parser import text_string_to_metric_families

from warmstart import __version__


def scrape(client) -> dict:
    """{(sample name, sorted labels): value} of /metrics."""
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def test_requests_latency_and_examples(api, classifier_run):
    client = api(classifier_run, max_batch=4)
    assert client.post("/api/predict", json={"text": "A warm film."}).status_code == 200
    assert client.post("/api/predict/batch", json={"inputs": ["Good.", "Bad.", "Fine."]}).status_code == 200
    assert client.post("/api/predict", json={"text": 5}).status_code == 422
    for path in ("/nope", "/other/nope"):
        assert client.get(path).status_code == 404
    got = scrape(client)
    requests = "warmstart_serve_requests_total"
    assert got[(requests, (("path", "/api/predict"), ("status", "200")))] == 1
    assert got[(requests, (("path", "/api/predict"), ("status", "422")))] == 1
    assert got[(requests, (("path", "/api/predict/batch"), ("status", "200")))] == 1
    assert got[(requests, (("path", "other"), ("status", "404")))] == 2  # one series for unknown paths
    assert got[("warmstart_serve_examples_predicted_total", ())] == 4  # a refused input is not predicted
    latency = "warmstart_serve_request_duration_seconds"
    assert got[(f"{latency}_count", (("path", "/api/predict"),))] == 2
    assert got[(f"{latency}_bucket", (("le", "+Inf"), ("path", "/api/predict")))] == 2
    assert got[(f"{latency}_sum", (("path", "/api/predict"),))] > 0
    info = ("name", classifier_run.name), ("task", "classification"), ("version", __version__)
    assert got[("warmstart_serve_model_info", info)] == 1
    again = scrape(client)  # the first scrape is counted too
    assert again[(requests, (("path", "/metrics"), ("status", "200")))] == 1


def test_a_streamed_answer_counts(api, gpt2_run):
    client = api(gpt2_run)
    with client.stream("POST", "/api/stream", json={"text": "The city", "max_new_tokens": 3}) as response:
        assert "event: done" in response.read().decode()
    got = scrape(client)
    assert got[("warmstart_serve_examples_predicted_total", ())] == 1
    assert got[("warmstart_serve_model_info", (("name", gpt2_run.name), ("task", "generation"),
                                               ("version", __version__)))] == 1  # fmt: skip
