"""A transformers config.json's sizes and counts, checked by config.py's rules (numbers.py) before anything
is computed or built from them, and said of the file they came from."""

from __future__ import annotations

import contextlib

from warmstart.errors import WarmstartError
from warmstart.numbers import check_values


@contextlib.contextmanager
def located(where: str):
    """A config error, said of the file ``where`` it came from."""
    try:
        yield
    except WarmstartError as e:
        raise WarmstartError(
            f"{where}: {e.problem}", "correct that value, or pass a model directory transformers wrote"
        ) from None


def check_sizes(config_cls: type, given: dict, where: str) -> None:
    """Refuse a config.json (``where``) whose fields ``given`` (those of warmstart's ``config_cls`` it sets)
    hold sizes, layer or head counts that are not whole numbers in the range warmstart's configs take."""
    with located(where):
        check_values(config_cls, given, nested=False)
