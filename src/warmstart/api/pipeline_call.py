"""``model(inputs, ...)``: a loaded model called as a transformers pipeline is called, answering in that
pipeline's layout, so code written for ``pipeline(...)`` runs on ``warmstart.load(...)`` unchanged.

- A classifier, as ``pipeline("text-classification")``: one text gives ``[{"label", "score"}]``, a list one
  dict per text; ``top_k=None`` every label from the best down (a list per text when given a list),
  ``top_k=k`` the best k (a list per text, also for ``top_k=1``, as the pipeline nests it).
- A generator or a text_to_text model, as ``pipeline("text-generation")``: one prompt gives
  ``[{"generated_text": ...}]`` (one dict per returned sequence), a list of prompts a list of those; the
  keywords are ``Model.generate``'s (``max_new_tokens``, ``do_sample``, ``num_return_sequences``, ...).
- Tagging, extractive QA and multiple choice: what ``Model.predict`` returns.
- A pretrained encoder is not called: ``encode`` gives its sentence vectors, ``fill_mask`` its words."""

from __future__ import annotations

from typing import Any

from warmstart.errors import WarmstartError

PIPELINE_DEFAULT = "pipeline default"  # top_k not given: the pipeline's own unnested layout


def call(model, inputs: Any, top_k: Any, batch_size: int, settings: dict) -> Any:
    """The answer of ``model(inputs, top_k=, batch_size=, **settings)`` (the module doc)."""
    if model.task in ("generator", "text_to_text"):
        return _generated(model, inputs, settings)
    if settings:
        raise WarmstartError(
            f"{model.task} models take no {', '.join(sorted(settings))} when called",
            "pass the inputs, and top_k or batch_size for a classifier",
        )
    if model.task == "encoder":
        raise WarmstartError(
            f"{model.path} holds a pretrained encoder, which is not called as a pipeline",
            "use model.encode(texts) for sentence vectors, or model.fill_mask(text) for masked words",
        )
    if model.task != "classification":
        return model.predict(inputs, batch_size=batch_size, top_k=1 if top_k == PIPELINE_DEFAULT else top_k)
    got = model.predict(inputs, batch_size=batch_size)
    rows = [got] if isinstance(got, dict) else got
    if top_k == PIPELINE_DEFAULT:  # the best label of each text, one list
        return [_best(p) for p in rows]
    ranked = [model._ranked(p, top_k) for p in rows]
    return ranked[0] if isinstance(got, dict) else ranked


def _best(prediction: dict) -> dict:
    """{"label", "score"} of a prediction's most probable label (a regression's score as it is)."""
    scores = prediction.get("probabilities")
    if not isinstance(scores, dict):
        return prediction
    label = max(scores, key=scores.__getitem__)  # the first of equal ones, as the argmax
    return {"label": label, "score": scores[label]}


def _generated(model, inputs: Any, settings: dict) -> list:
    texts = model.generate(inputs, **settings)
    n = settings.get("num_return_sequences", 1)

    def sequences(written: Any) -> list[dict]:
        return [{"generated_text": t} for t in (written if n > 1 else [written])]

    return sequences(texts) if isinstance(inputs, str) else [sequences(t) for t in texts]
