"""Tokens and labels as a report shows them: in double quotes where a bare one would read as punctuation."""

from __future__ import annotations

import json


def quoted(token: str) -> str:
    """'"."', '","', '"##ing"': a token in double quotes (escapes as JSON writes them)."""
    return json.dumps(str(token), ensure_ascii=False)


def label(name: str) -> str:
    """A class name as it is ('NOUN', 'fresh'), quoted when it has no letter or digit ('"."', '"--"')."""
    name = str(name)
    return name if any(c.isalnum() for c in name) else quoted(name)
