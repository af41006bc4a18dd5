"""Whole-number flags in range: every ``type=int`` flag of every command takes only what the code under it
can hold (a seed, ``--seed``/``--split-seed``: 0 to 2**32-1, as config seeds; any other: a 64-bit integer),
so that ``--seed 1180591620717411303424`` is the parser's one line, not torch's overflow deep in a command.
Ranges a flag's meaning gives (``--top-k`` at least 1) are the command's to check."""

from __future__ import annotations

import argparse

from warmstart.numbers import INT_MAX, SEED_MAX


def bounded(dest: str):
    """The ``type`` of the int flag stored in ``dest``: int() and its range."""
    least, most = (0, SEED_MAX) if dest.endswith("seed") else (-INT_MAX - 1, INT_MAX)

    def parse(text: str) -> int:
        value = int(text)
        if not least <= value <= most:
            raise argparse.ArgumentTypeError(f"must be from {least} to {most}, got {text}")
        return value

    parse.__name__ = "int"  # argparse's own words for a non-number: "invalid int value: 'x'"
    return parse


def bound_int_flags(parser: argparse.ArgumentParser) -> None:
    """Give every ``type=int`` flag of ``parser`` and its subcommands its range (``bounded``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                bound_int_flags(child)
        elif action.type is int:
            action.type = bounded(action.dest)
