"""The JSON API of each kind of model answers as `warmstart predict` (or `warmstart generate`) does."""

import json

from warmstart.inference.predict import predict_lines


def predicted(run, fields: dict) -> dict:
    (pred,) = predict_lines(str(run), [json.dumps(fields)])
    return pred


def test_info_and_openapi_describe_the_model(api, classifier_run):
    client = api(classifier_run)
    info = client.get("/api/info").json()
    assert info["task"] == "classification" and info["labels"] == ["fresh", "rotten"]
    assert info["max_chars"] == 2000 and info["max_batch"] == 64 and info["streams"] is False
    schema = client.get("/openapi.json").json()
    body = schema["components"]["schemas"]["PairIn"]
    assert body["additionalProperties"] is False and body["required"] == ["text"]
    batch = schema["components"]["schemas"]["BatchPairIn"]["properties"]["inputs"]
    one = [{"$ref": "#/components/schemas/PairIn"}, {"type": "string"}]  # an input, or its text alone
    assert batch["anyOf"] == [{"type": "array", "items": {"anyOf": one}, "minItems": 1}, {"type": "string"}]
    assert {"/api/predict", "/api/predict/batch", "/api/health"} <= set(schema["paths"])
    assert "/api/stream" not in schema["paths"]
    page = client.get("/")
    assert page.status_code == 200 and "<script>" in page.text and "http" not in page.text.split("<body>")[1]


def test_classification(api, classifier_run):
    text = "A warm, funny and beautifully acted film."
    answer = api(classifier_run).post("/api/predict", json={"text": text}).json()
    assert answer == predicted(classifier_run, {"text": text})
    assert answer["label"] in ("fresh", "rotten") and abs(sum(answer["probabilities"].values()) - 1) < 1e-4


def test_tagging(api, tagger_run):
    text = "Barack Obama visited Paris in 2009 ."
    answer = api(tagger_run).post("/api/predict", json={"text": text}).json()
    assert answer["tokens"] == text.split() and len(answer["tags"]) == 7
    assert {k: answer[k] for k in ("tokens", "tags", "entities")} == {
        k: v for k, v in predicted(tagger_run, {"text": text}).items() if k in ("tokens", "tags", "entities")
    }


def test_extractive_qa(api, qa_run):
    fields = {"question": "What is Paris?", "context": "Paris is the capital and largest city of France."}
    answer = api(qa_run).post("/api/predict", json=fields).json()
    assert answer["answer"] == fields["context"][answer["start"] : answer["end"]]
    assert answer["answer"] == predicted(qa_run, fields)["answer"]


def test_multiple_choice(api, choice_run):
    fields = {"context": "The river rose all night.", "choices": ["The town flooded.", "It was dry."]}
    answer = api(choice_run).post("/api/predict", json=fields).json()
    assert answer["choice"] in (0, 1) and len(answer["probabilities"]) == 2
    assert answer["probabilities"] == predicted(choice_run, fields)["probabilities"]


def test_fill_mask_ranks_the_vocabulary(api, tiny_pretrained):
    client = api(tiny_pretrained)
    assert client.get("/api/info").json()["mask_token"] == "[MASK]"
    answer = client.post("/api/predict", json={"text": "The [MASK] is a city in [MASK].", "top_k": 3}).json()
    assert len(answer["masks"]) == 2 and all(len(m) == 3 for m in answer["masks"])
    scores = [c["score"] for c in answer["masks"][0]]
    assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1
    refused = client.post("/api/predict", json={"text": "No mask here."})
    assert refused.status_code == 400 and "has no [MASK]" in refused.json()["error"]


def test_xlnet_fills_masks_and_classifies(api, xlnet_runs):
    from warmstart.inference.fill_mask import FillMask

    pretrained, classifier = xlnet_runs
    client = api(pretrained)
    mask = client.get("/api/info").json()["mask_token"]
    text = f"The {mask} is a city in {mask}."
    answer = client.post("/api/predict", json={"text": text, "top_k": 3}).json()
    assert answer == FillMask(str(pretrained)).fill(text, 3) and len(answer["masks"]) == 2
    review = "A warm, funny and beautifully acted film."
    scored = api(classifier).post("/api/predict", json={"text": review}).json()
    assert scored == predicted(classifier, {"text": review}) and scored["label"] in ("fresh", "rotten")


def sse(text: str) -> list[tuple[str, dict]]:
    events = []
    for block in text.strip().split("\n\n"):
        name, data = (line.split(": ", 1)[1] for line in block.splitlines())
        events.append((name, json.loads(data)))
    return events


def test_gpt2_streams_what_generate_prints(api, gpt2_run, capsys):
    from warmstart.cli.main import main

    client = api(gpt2_run)
    fields = {"text": "The city", "max_new_tokens": 8}
    answer = client.post("/api/predict", json=fields).json()
    capsys.readouterr()
    assert main(["generate", str(gpt2_run), "--prompt", "The city", "max_new_tokens=8"]) == 0
    assert "The city" + answer["generated"] + "\n" == capsys.readouterr().out
    with client.stream("POST", "/api/stream", json=fields) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        events = sse(r.read().decode())
    pieces = [d["text"] for name, d in events if name == "text"]
    assert (
        events[-1] == ("done", {"generated": answer["generated"]}) and "".join(pieces) == answer["generated"]
    )
    sampled = client.post("/api/predict", json={**fields, "strategy": "sample", "top_p": 0.9, "seed": 3})
    assert sampled.status_code == 200


def test_text_to_text_streams_the_output(api, t5_text_run):
    client = api(t5_text_run)
    info = client.get("/api/info").json()
    assert info["task"] == "generation" and info["max_new_tokens"] == 8 and info["echoes_prompt"] is False
    text = "The senate voted on the bill today."
    answer = client.post("/api/predict", json={"text": text}).json()
    assert answer["generated"] == predicted(t5_text_run, {"text": text})["generated"]
    events = sse(client.post("/api/stream", json={"text": text}).text)
    assert events[-1] == ("done", {"generated": answer["generated"]})
