"""Running a documentation block for real, in-process, in a work directory, at tiny size.

Shell lines run through ``warmstart.cli.main.main`` with ``TINY`` settings added to the commands that train
(so a quick start's finetuning takes seconds), ``echo TEXT | warmstart ...`` feeds stdin, ``python -c CODE``
and ``NAME=$(python -c CODE)`` run the code here. Anything else in an unmarked block is an error: mark the
block instead. Python blocks run with ``TINY_PYTHON``'s replacements.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
from pathlib import Path

from tests.docs.blocks import Block, commands, is_error, shell_lines, warmstart_args

# added to a command's line (they win: later flags and overrides take precedence)
TINY = {
    "finetune": [
        "data.train_limit=16", "data.validation_limit=8", "data.test_limit=8", "--max-length", "16",
        "--batch-size", "16", "evals_per_epoch=1", "train.progress=false", "train.report_to=none",
    ],
}  # fmt: skip
# (what the block says, what runs instead) in Python blocks, each of which must be there
_TINY_QUICKSTART = [
    ('"data.train_fraction=0.2",', '"data.train_limit=16", "data.validation_limit=8", '
     '"data.test_limit=8", "evals_per_epoch=1", "train.progress=false", "train.report_to=none",'),
    ("max_length=64", "max_length=16"),
]  # fmt: skip
TINY_PYTHON = {  # the README repeats the Python quick start: the second run writes beside the first
    "README.md": _TINY_QUICKSTART,
    "docs/get-started/quickstart-python.md": [
        *_TINY_QUICKSTART,
        ('"runs/reviews-py"', '"runs/reviews-py-2"'),
        ('"hf/reviews-py"', '"hf/reviews-py-2"'),
    ],
}  # fmt: skip


def run_python(code: str) -> str:
    """Run Python source here; what it prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<docs>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the docs' own code
    return out.getvalue()


def run_warmstart(args: list[str], stdin: str | None = None) -> tuple[int, str]:
    """(exit code, stdout + stderr) of `warmstart ARGS` run in this process."""
    from warmstart.cli.main import main

    out = io.StringIO()
    old_stdin = sys.stdin
    try:
        sys.stdin = io.StringIO(stdin) if stdin is not None else old_stdin
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                code = main(args)
            except SystemExit as e:  # argparse's own exits
                code = e.code if isinstance(e.code, int) else 2
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue()


def _substitute(line: str, variables: dict[str, str]) -> str:
    """$(python -c CODE) replaced by what CODE prints, $NAME by its value."""

    def command(match: re.Match) -> str:
        words = shlex.split(match.group(1))
        assert words[:2] == ["python", "-c"], f"only $(python -c ...) runs here: {match.group(0)}"
        return run_python(words[2]).strip()

    line = re.sub(r"\$\((.*?)\)(?=\s|/|$)", command, line)
    return re.sub(r"\$(\w+)", lambda m: variables[m.group(1)], line)


def run_line(line: str, variables: dict[str, str]) -> tuple[int, str]:
    """Run one shell line of a block; (exit code, output)."""
    assign = re.match(r"^(\w+)=(.*)$", line.strip())
    if assign:
        variables[assign.group(1)] = _substitute(assign.group(2), variables).strip("\"'")
        return 0, ""
    parts = commands(_substitute(line, variables))
    stdin = None
    if len(parts) == 2 and parts[0][0] == "echo":  # echo TEXT | warmstart ...
        stdin, parts = " ".join(parts[0][1:]) + "\n", parts[1:]
    assert len(parts) == 1, f"one command per line here, or mark the block: {line}"
    words = parts[0]
    args = warmstart_args(words)
    if args is not None:
        command = args[0] if args else ""
        return run_warmstart(args + TINY.get(command, []), stdin)
    if words[:2] == ["python", "-c"]:
        return 0, run_python(words[2])
    raise AssertionError(f"this line cannot run in the tests; mark its block: {line}")


def run_shell_block(block: Block, workdir: Path) -> None:
    variables: dict[str, str] = {}
    with contextlib.chdir(workdir):
        for line, expected in shell_lines(block):
            code, output = run_line(line, variables)
            if block.language == "console":
                assert _lines(output) == _lines(expected), f"{block.name}: {line}\n{output}"
                wanted = 2 if is_error(expected) else 0
                assert code == wanted, f"{block.name}: {line} exited {code}\n{output[-2000:]}"
            else:
                assert code == 0, f"{block.name}: {line} exited {code}\n{output[-3000:]}"


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def run_python_block(block: Block, workdir: Path) -> None:
    code = block.source
    for old, new in TINY_PYTHON.get(block.path, []):
        assert old in code, f"{block.name}: the tests replace {old!r}, no longer in the block"
        code = code.replace(old, new)
    with contextlib.chdir(workdir):
        run_python(code)


def missing_setup(block: Block, root: Path) -> str | None:
    """What a runnable block needs from `make setup` that this checkout lacks (npm data), or None."""
    if block.language == "python":
        return None
    for line, _ in shell_lines(block):
        for word in shlex.split(line):
            if word.startswith(".npm/") and not (root / word).exists():
                return f"{word} is missing (make setup installs it)"
    return None
