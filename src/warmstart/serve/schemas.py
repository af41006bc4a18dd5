"""Request bodies of the JSON API, one per kind of model: unknown fields and wrong types are refused (422)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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

BODIES = {
    "classification": PairIn,
    "tagging": TextIn,
    "extractive_qa": QuestionIn,
    "multiple_choice": ChoicesIn,
    "fill_mask": FillMaskIn,
    "generation": GenerateIn,
}
