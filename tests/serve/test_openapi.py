"""/openapi.json says what the server really answers: every error status an endpoint can give is documented
for it with the one Error schema ({"error": str}), FastAPI's {"detail": [...]} is gone, and each error we can
cause, through the app or the real server, has a documented status and a body that fits the schema."""

import json
import socket
import time

import pytest

from warmstart.serve.limits import Limits

JSON = {"content-type": "application/json"}
POST = {400, 408, 413, 422, 503, 504}  # bad JSON, slow, too much, wrong fields, no room, too slow a model
GET = {408, 503}  # a GET's body is not read: only the connection's limits (headers in time, room) apply
ENDPOINTS = {("/api/info", "get"): GET, ("/api/health", "get"): GET, ("/api/predict", "post"): POST,
             ("/api/predict/batch", "post"): POST}  # fmt: skip
STREAM = {("/api/stream", "post"): POST}


def conforms(value, schema: dict, components: dict, where: str = "body") -> None:
    """Assert ``value`` fits ``schema`` (the JSON Schema words FastAPI writes: $ref, type, properties,
    required, additionalProperties, items, enum/const)."""
    if "$ref" in schema:
        return conforms(value, components[schema["$ref"].rsplit("/", 1)[1]], components, where)
    types = {
        "object": dict,
        "string": str,
        "integer": int,
        "number": (int, float),
        "boolean": bool,
        "array": list,
    }
    if "type" in schema:
        assert isinstance(value, types[schema["type"]]), f"{where}: {value!r} is not {schema['type']}"
    if "const" in schema or "enum" in schema:
        assert value in schema.get("enum", [schema.get("const")]), f"{where}: {value!r} not allowed"
    if isinstance(value, dict):
        props = schema.get("properties", {})
        assert set(schema.get("required", [])) <= set(value), f"{where}: misses {schema['required']}"
        if schema.get("additionalProperties") is False:
            assert set(value) <= set(props), f"{where}: {set(value) - set(props)} not in the schema"
        for key, item in value.items():
            conforms(item, props.get(key, {}), components, f"{where}.{key}")
    if isinstance(value, list):
        for i, item in enumerate(value):
            conforms(item, schema.get("items", {}), components, f"{where}[{i}]")


def detail_shaped(node) -> list:
    """Every schema in ``node`` with a "detail" property (FastAPI's HTTPValidationError)."""
    if isinstance(node, list):
        return [x for item in node for x in detail_shaped(item)]
    if not isinstance(node, dict):
        return []
    found = [node] if "detail" in node.get("properties", {}) else []
    return found + [x for item in node.values() for x in detail_shaped(item)]


@pytest.mark.parametrize("run", ["classifier_run", "gpt2_run"])
def test_every_error_status_is_documented_with_the_error_schema(api, request, run):
    schema = api(request.getfixturevalue(run)).get("/openapi.json").json()
    components = schema["components"]["schemas"]
    error = components["Error"]
    assert (
        error["type"] == "object"
        and error["required"] == ["error"]
        and error["additionalProperties"] is False
    )
    field = error["properties"]["error"]
    assert error["properties"] == {
        "error": {"type": "string", "title": "Error", "description": field["description"]}
    }
    assert not {"HTTPValidationError", "ValidationError"} & set(components) and detail_shaped(schema) == []
    expected = {**ENDPOINTS, **(STREAM if run == "gpt2_run" else {})}
    documented = {(path, method): op for path, ops in schema["paths"].items() for method, op in ops.items()}
    assert set(documented) == set(expected)
    for endpoint, op in documented.items():
        codes = {int(code) for code in op["responses"] if int(code) >= 400}
        assert codes == expected[endpoint], endpoint
        for code in codes:
            response = op["responses"][str(code)]
            assert response["content"] == {
                "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
            }
            assert response["description"] and "Validation Error" not in response["description"]


def check(schema: dict, path: str, method: str, status: int, body: bytes) -> str:
    """Assert ``status`` is documented for the endpoint and ``body`` fits the schema documented for it."""
    responses = schema["paths"][path][method]["responses"]
    assert str(status) in responses, f"{method} {path} answered {status}, which it does not document"
    content = json.loads(body)
    conforms(
        content,
        responses[str(status)]["content"]["application/json"]["schema"],
        schema["components"]["schemas"],
    )
    return content.get("error", "")


CAUSES = [  # (path, request keywords, status): the app of a classifier, --max-chars 100, --max-batch 2
    ("/api/predict", {"content": b'{"text": "unclosed', "headers": JSON}, 400),
    ("/api/predict", {"json": {"text": "   "}}, 400),
    ("/api/predict", {"json": {"text": "x" * 101}}, 413),
    (
        "/api/predict",
        {"content": b'{"text": "' + b"x" * Limits(max_chars=100, max_batch=2).max_body + b'"}'},
        413,
    ),
    ("/api/predict", {"json": {"text": 5}}, 422),
    ("/api/predict", {"json": {"text": "a", "path": "/etc/passwd"}}, 422),
    ("/api/predict", {"content": b'{"text": "\\ud800"}', "headers": JSON}, 422),
    ("/api/predict/batch", {"content": b'{"inputs": [', "headers": JSON}, 400),
    ("/api/predict/batch", {"json": {"inputs": [{"text": "a"}, {"text": " "}]}}, 400),
    ("/api/predict/batch", {"json": {"inputs": [{"text": "a"}] * 3}}, 413),
    ("/api/predict/batch", {"json": {"inputs": [{"text": "x" * 51}] * 2}}, 413),
    ("/api/predict/batch", {"json": {"inputs": [{"text": 5}]}}, 422),
    ("/api/predict/batch", {"content": b'{"inputs": [{"text": "\\udfff"}]}', "headers": JSON}, 422),
]

GENERATOR_CAUSES = [  # (path, body, status): the app of gpt2 (64 positions), --max-new-tokens 5
    ("/api/stream", {"text": "a", "max_new_tokens": 6}, 413),
    ("/api/stream", {"prompt": "a"}, 422),
    ("/api/stream", {"text": "word " * 100}, 400),
    ("/api/predict/batch", {"inputs": [{"text": "a", "max_new_tokens": 6}]}, 413),
]


def test_the_errors_the_app_gives_are_documented(api, classifier_run, gpt2_run):
    client = api(classifier_run, max_chars=100, max_batch=2)
    schema = client.get("/openapi.json").json()
    for path, how, status in CAUSES:
        response = client.post(path, **how)
        assert response.status_code == status, (path, how, response.text)
        assert check(schema, path, "post", status, response.content)
    several = {"inputs": [{"text": "Fine."}, {"text": "Dull."}]}
    answers = [
        ("/api/health", "get", None),
        ("/api/info", "get", None),
        ("/api/predict/batch", "post", several),
    ]
    for path, method, body in answers:
        response = client.request(method, path, json=body)  # answers fit their schemas too
        assert response.status_code == 200, response.text
        documented = schema["paths"][path][method]["responses"]["200"]["content"]["application/json"][
            "schema"
        ]
        conforms(response.json(), documented, schema["components"]["schemas"])
    generator = api(gpt2_run, max_new_tokens=5)
    schema = generator.get("/openapi.json").json()
    for path, fields, status in GENERATOR_CAUSES:
        response = generator.post(path, json=fields)
        assert response.status_code == status, response.text
        assert check(schema, path, "post", status, response.content)
    slow = api(gpt2_run, timeout=1e-6)
    for path, fields in [("/api/predict", {"text": "a"}), ("/api/stream", {"text": "a"}),
                         ("/api/predict/batch", {"inputs": [{"text": "a"}]})]:  # fmt: skip
        response = slow.post(path, json=fields)
        assert response.status_code == 504, response.text
        assert "took over" in check(schema, path, "post", 504, response.content)


def raw(port: int, request: bytes, within: float = 5.0) -> tuple[int, bytes]:
    """Send ``request`` (a part of one, maybe); the status and body the server answers, and it must close the
    connection after them."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request)
        sock.settimeout(within)
        data = b""
        try:
            while chunk := sock.recv(1 << 16):
                data += chunk
        except ConnectionResetError:
            pass
        except TimeoutError:
            raise AssertionError(
                f"no answer, or the connection left open, after {within} s: {data!r}"
            ) from None
    head, body = data.split(b"\r\n\r\n", 1)
    return int(head.split()[1]), body


def test_the_errors_of_the_connection_are_documented(api, classifier_run, running):
    """The real server: a body or headers too slow (408), no room for one more connection (503)."""
    limits = Limits(body_timeout=0.3, header_timeout=0.3, max_per_client=1)
    client = api(classifier_run, **vars(limits))
    schema = client.get("/openapi.json").json()
    head = b"POST /api/predict/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    with running(client.app, limits) as port:
        status, body = raw(port, head + b"Content-Length: 100\r\n\r\n{")
        assert status == 408 and "request body took over 0.3 s" in check(
            schema, "/api/predict/batch", "post", 408, body
        )
        status, body = raw(port, b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
        assert status == 408 and "headers took over 0.3 s" in check(schema, "/api/health", "get", 408, body)
    limits = Limits(body_timeout=5, max_per_client=1)
    with running(api(classifier_run, **vars(limits)).app, limits) as port:
        with socket.create_connection(("127.0.0.1", port)) as busy:
            busy.sendall(head + b"Content-Length: 100\r\n\r\n{")  # a request in progress: it holds its place
            time.sleep(0.2)
            status, body = raw(port, b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == 503 and "requests in progress" in check(schema, "/api/health", "get", 503, body)
