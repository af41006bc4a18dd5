"""The text of a request: --max-chars counts the characters of the decoded text (not body bytes, not
options), and text that is not valid Unicode (a lone surrogate) is a 422 with one line, never a 500."""

import typing

import pytest

from warmstart.serve.limits import Limits, unpaired_surrogate
from warmstart.serve.schemas import BODIES, TEXT_FIELDS

JSON = {"content-type": "application/json"}
NOT_UNICODE = "holds an unpaired surrogate (a lone \\ud800-\\udfff escape); the text must be valid Unicode"


def post(client, path: str, raw_fields: str):
    """POST the JSON object ``{raw_fields}``, written by hand: escapes go through as they are."""
    return client.post(path, content=("{" + raw_fields + "}").encode(), headers=JSON)


def error(response, status: int) -> str:
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert "\n" not in message and message
    return message


@pytest.mark.parametrize("escape", ["\\ud83d\\ude00", "\\u00e9"])  # an emoji (12 bytes), é (6 bytes)
def test_max_chars_counts_characters_of_the_decoded_text(api, classifier_run, escape):
    client = api(classifier_run)  # the default --max-chars, 2000
    limit = Limits().max_chars
    accepted = post(client, "/api/predict", f'"text": "{escape * limit}"')
    assert accepted.status_code == 200, accepted.text[:200]
    assert len(accepted.json()["text"]) == limit
    refused = error(post(client, "/api/predict", f'"text": "{escape * (limit + 1)}"'), 413)
    assert refused.startswith(f"the input has {limit + 1:,} characters, over the limit of {limit:,}")


def test_max_chars_counts_text_not_options(api, gpt2_run):
    client = api(gpt2_run, max_chars=10)  # strategy ("greedy" by default) is no text of the client's
    fields = '"max_new_tokens": 2, "strategy": "greedy", "text": '
    assert post(client, "/api/predict", fields + '"' + "\\u00e9" * 10 + '"').status_code == 200
    assert "11 characters" in error(post(client, "/api/predict", fields + '"' + "\\u00e9" * 11 + '"'), 413)


def test_every_string_field_counts_as_text():
    for body in BODIES.values():
        for name, field in body.model_fields.items():
            kind = field.annotation
            if typing.get_origin(kind) is not typing.Literal and "str" in repr(kind):
                assert name in TEXT_FIELDS, f"{body.__name__}.{name} holds text --max-chars does not count"


SURROGATES = [  # (run, endpoint, the body with {} where the text holds a character, its field)
    ("classifier_run", "/api/predict", '"text": "bad {} text"', "text"),
    ("classifier_run", "/api/predict", '"text": "fine", "text_pair": "{}"', "text_pair"),
    ("tiny_pretrained", "/api/predict", '"text": "The [MASK] {} is."', "text"),
    ("gpt2_run", "/api/predict", '"text": "{} once", "max_new_tokens": 2', "text"),
    ("gpt2_run", "/api/stream", '"text": "once {}", "max_new_tokens": 2', "text"),
]


@pytest.mark.parametrize(("run", "path", "fields", "name"), SURROGATES)
@pytest.mark.parametrize("lone", ["\\ud800", "\\udfff", "\\ud83d"])  # a high, a low, a pair's first half
def test_a_lone_surrogate_is_422_with_one_line(api, request, run, path, fields, name, lone):
    client = api(request.getfixturevalue(run))
    message = error(post(client, path, fields.replace("{}", lone)), 422)
    assert message == f"{name} {NOT_UNICODE}"
    paired = post(client, path, fields.replace("{}", "\\ud83d\\ude00"))  # the same, valid: answered
    assert paired.status_code == 200, paired.text


def test_a_lone_surrogate_in_a_field_name_or_a_list(api, classifier_run):
    message = error(post(api(classifier_run), "/api/predict", '"text": "a", "\\ud800x": 1'), 422)
    assert message == f"a field name {NOT_UNICODE}"
    assert unpaired_surrogate({"context": "fine", "choices": ["yes", "no \udc80"]}) == "choices"
    assert unpaired_surrogate({"text": "\U0001f600 é", "choices": ["ok"], "top_k": 3}) is None
