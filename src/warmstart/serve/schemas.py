"""Request bodies of the JSON API, one per served task (and a batch of each): unknown fields and wrong
types are refused (422). The answers of a fixed shape, the one error body and what each status means."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

from warmstart.registry import TASKS


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class TextIn(Strict):
    text: str = Field(description="the input text")


class PairIn(TextIn):
    text_pair: str | None = Field(None, description="the second text, for models finetuned on pairs")


class QuestionIn(Strict):
    question: str = Field(description="the question")
    context: str = Field(description="the text that holds the answer")


class ChoicesIn(Strict):
    context: str = Field(description="the text the choices continue or answer")
    choices: list[str] = Field(min_length=2, max_length=16, description="the candidate answers")


class FillMaskIn(TextIn):
    top_k: int = Field(5, ge=1, le=50, description="candidates per mask token")


class GenerateIn(TextIn):
    max_new_tokens: int | None = Field(None, ge=1, description="most new tokens (default: the server's)")
    strategy: Literal["greedy", "sample", "beam"] = Field("greedy", description="decoding strategy")
    temperature: float = Field(1.0, gt=0, le=10, description="sampling temperature")
    top_k: int = Field(0, ge=0, description="sample from the k likeliest tokens (0 = off)")
    top_p: float = Field(1.0, gt=0, le=1, description="nucleus sampling mass (1 = off)")
    seed: int = Field(0, ge=0, description="sampling seed")


# The fields that hold the client's text: what --max-chars counts (options such as strategy do not count).
TEXT_FIELDS = ("text", "text_pair", "question", "context", "choices")

# a task's serve_input -> its body; the bodies of each served task: the tasks', then pretrained models'
INPUTS = {"text_pair": PairIn, "text": TextIn, "question": QuestionIn, "choices": ChoicesIn}
BODIES = {
    **{name: INPUTS[task.serve_input] for name, task in TASKS.items() if task.serve_input},
    "fill_mask": FillMaskIn,
    "generation": GenerateIn,
}


def _as_text(value):
    return {"text": value} if isinstance(value, str) else value


def _as_list(value):
    return [value] if isinstance(value, str) else value


def _batch_of(body: type[Strict]) -> type[Strict]:
    """The batch of ``body``; for a body with ``text`` (a text task, fill-mask, generation) an input may
    also be a plain string, and ``inputs`` one string, as the Hugging Face Inference API takes them."""
    about = "the inputs, each as /api/predict takes it"
    inputs = list[body]
    if issubclass(body, TextIn):
        item = Annotated[body, BeforeValidator(_as_text, json_schema_input_type=body | str)]
        taken = Annotated[list[body | str], Field(min_length=1)] | str
        inputs = Annotated[list[item], BeforeValidator(_as_list, json_schema_input_type=taken)]
        about += ', or a plain string for {"text": ...}; one string is a batch of one'
    return create_model(
        f"Batch{body.__name__}",
        __base__=Strict,
        __doc__=f"Several inputs at once, each one a {body.__name__} (the body of /api/predict).",
        inputs=(inputs, Field(min_length=1, description=about)),
    )


BATCHES = {task: _batch_of(body) for task, body in BODIES.items()}


class BatchOut(BaseModel):
    results: list[dict[str, Any]] = Field(description="the answers, in input order, as /api/predict gives")


class Health(BaseModel):
    status: Literal["ok"] = Field(description="always ok: the server is up and answering")
    model: str = Field(description="the name of the served run (its directory)")
    kind: str = Field(description="the served task, as /api/info's task")


class Error(BaseModel):
    """The body of every error: one line saying what is wrong and, where it helps, what to do."""

    model_config = ConfigDict(extra="forbid")
    error: str = Field(description="what is wrong, in one line")


# What each error status of the API means; an endpoint documents the ones it can answer.
STATUS = {
    400: "the body is not valid JSON, or the model refuses the input (the message says why)",
    408: "the request headers (serve --header-timeout) or body (--body-timeout) took too long to arrive",
    413: "too much: characters of text (serve --max-chars), new tokens (--max-new-tokens), or body bytes",
    422: "an unknown field, a wrong type or value, or text that is not valid Unicode (a lone surrogate)",
    503: "no room for the connection: this client or the server has as many requests in progress as it "
    "takes (Retry-After says when to try again)",
    504: "the model took longer than serve --timeout",
}


def errors(*codes: int, says: dict[int, str] | None = None) -> dict:
    """The ``responses`` of an endpoint that answers ``codes`` with an Error; ``says`` words a status for
    this endpoint (``{413: "..."}``) where the general meaning would say more than it can answer."""
    return {c: {"model": Error, "description": (says or {}).get(c, STATUS[c])} for c in codes}
