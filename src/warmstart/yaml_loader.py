"""YAML as users write numbers: ``1e-4`` is a float.

PyYAML follows YAML 1.1, where a float needs a dot, so ``lr: 1e-4`` (what everyone types, and what YAML 1.2,
JSON and Python read as 0.0001) came back as the string '1e-4': a search space ``{low: 1e-5, high: 1e-4}``
was refused as "not numbers". ``Loader`` is PyYAML's safe loader with YAML 1.2's float forms added
(``1e-4``, ``1E5``, ``-2e+3``); everything else reads as before.
"""

from __future__ import annotations

import re
from typing import Any

import yaml


class Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that also reads exponent-only numbers (``1e-4``) as floats."""


Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def load(text: str) -> Any:
    """``yaml.safe_load`` with ``Loader``'s numbers."""
    loader = Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
