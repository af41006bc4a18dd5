"""The code blocks of README.md and docs/, collected with Sybil's fence lexer, and what tests do with them.

A fenced ``bash``, ``console`` or ``python`` block either runs in the tests (no marker) or says in its fence
why it cannot run here: ```` ```bash {norun="long"} ````, the reason one of ``REASONS``. Every shell block,
marked or not, has each ``warmstart ...`` line parsed by the real parser (``parse_warmstart``), its
``make`` targets and ``pip install`` extras checked (``check_command``).
"""

from __future__ import annotations

import io
import re
import shlex
from contextlib import redirect_stderr
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import tomllib
from sybil import Document
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

ROOT = Path(__file__).resolve().parents[2]
REASONS = {
    "gpu": "needs a CUDA device",
    "machines": "several processes or machines (torchrun)",
    "hub": "needs the network (the Hugging Face hub)",
    "long": "longer than the tests' budget for the docs (from ten seconds to hours)",
    "setup": "installs packages or changes the environment",
    "server": "starts a server and talks to it",
    "files": "needs files of your own that the docs do not ship",
}
SHELLS = ("bash", "console")
INFO = re.compile(r'(?P<language>bash|console|python)(?:[ \t]+\{norun="(?P<norun>[^"]*)"\})?[ \t]*$\n', re.M)
ANY_INFO = re.compile(r"(?P<info>[^\n]*)$\n", re.M)
# an example file a Python block includes (pymdownx.snippets) -> the test that runs it
RUN_ELSEWHERE = {
    "examples/python_api.py": "tests/api/test_readme_example.py",
    "examples/own_csv_files.py": "tests/api/test_own_csv_example.py",
}
INCLUDE = re.compile(r'^--8<-- "([^"]+)"\s*$')


@dataclass(frozen=True)
class Block:
    path: str  # relative to the repository root
    line: int
    language: str
    norun: str | None
    source: str

    @property
    def name(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def included(self) -> str | None:
        """The file a block consisting of one snippet include names."""
        lines = self.source.strip().splitlines()
        match = INCLUDE.match(lines[0]) if len(lines) == 1 else None
        return match.group(1) if match else None


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _regions(path: Path, pattern: re.Pattern) -> list:
    return list(Document.parse(str(path), RawFencedCodeBlockLexer(info_pattern=pattern)))


@cache
def blocks() -> tuple[Block, ...]:
    """Every bash, console and python block, in file order."""
    found = []
    for path in doc_files():
        for example in _regions(path, INFO):
            lex = example.region.lexemes
            found.append(
                Block(str(path.relative_to(ROOT)), example.line, lex["language"], lex["norun"], lex["source"])
            )
    return tuple(found)


def fence_infos() -> list[tuple[str, str]]:
    """(place, info string) of every fence, for fences the INFO pattern does not read."""
    return [
        (f"{path.relative_to(ROOT)}:{ex.line}", ex.region.lexemes["info"])
        for path in doc_files()
        for ex in _regions(path, ANY_INFO)
    ]


# ---------------------------------------------------------------- shell lines


def shell_lines(block: Block) -> list[tuple[str, str]]:
    """(command line, expected output) of a shell block: continuation lines joined; in a console block
    the lines after a ``$ `` prompt are what it prints."""
    joined = re.sub(r"\\\n\s*", " ", block.source)
    if block.language != "console":
        return [
            (line, "") for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")
        ]
    out: list[tuple[str, str]] = []
    for line in joined.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], ""))
        elif out:
            out[-1] = (out[-1][0], out[-1][1] + line + "\n")
    return out


def commands(line: str) -> list[list[str]]:
    """The simple commands of a line (split at |, && and ;), comments dropped."""
    words = shlex.split(line, comments=True)
    parts: list[list[str]] = [[]]
    for word in words:
        if word in ("|", "&&", ";", "||"):
            parts.append([])
        else:
            parts[-1].append(word)
    return [p for p in parts if p]


def warmstart_args(words: list[str]) -> list[str] | None:
    """The arguments of warmstart in a simple command (`warmstart ...`, `python -m warmstart ...`,
    `torchrun ... -m warmstart ...`), else None."""
    if words[0] == "warmstart":
        return words[1:]
    for i in range(len(words) - 1):
        if words[i] == "-m" and words[i + 1] == "warmstart" and words[0] in ("python", "torchrun"):
            return words[i + 2 :]
    return None


@cache
def parser():
    from warmstart.cli.main import build_parser

    return build_parser()


def parse_warmstart(args: list[str]):
    """Parse as `warmstart` does (KEY=VALUE overrides anywhere); a line with an elided `...` only has its
    command and flags checked. Returns the namespace; raises AssertionError with the parser's message."""
    from warmstart.cli.common import leaf_parser

    elided = "..." in args
    given = [a for a in args if a != "..."]
    err = io.StringIO()
    try:
        with redirect_stderr(err):
            if elided:
                ns, _ = parser().parse_known_args(_command_part(given))
            else:
                ns, extra = parser().parse_known_args(given)
    except SystemExit:
        raise AssertionError(err.getvalue().strip()) from None
    leaf = leaf_parser(parser(), ns)
    options = {s for a in leaf._actions for s in a.option_strings}
    unknown = [a.split("=")[0] for a in given if a.startswith("--") and a.split("=")[0] not in options]
    assert not unknown, f"unknown flags {unknown} for warmstart {ns.command_path}"
    if not elided:
        overrides = [x for x in extra if "=" in x and not x.startswith("-")]
        rest = [x for x in extra if x not in overrides]
        assert not rest, f"unrecognized arguments: {rest}"
        assert not overrides or hasattr(ns, "overrides"), f"{ns.command_path} takes no KEY=VALUE"
        if hasattr(ns, "overrides"):
            check_keys(ns.command_path, [*ns.overrides, *overrides])
    return ns


def _command_part(args: list[str]) -> list[str]:
    """The subcommand words of an elided line (`pretrain`, `word2vec train`), without its arguments."""
    words = []
    node = parser()
    for a in args:
        subs = [x for x in node._actions if x.__class__.__name__ == "_SubParsersAction"]
        if not subs or a not in subs[0].choices:
            break
        words.append(a)
        node = subs[0].choices[a]
    assert words, f"no warmstart command in {args}"
    return _with_required(words, node)


def _with_required(words: list[str], leaf) -> list[str]:
    """Enough stand-in values for the leaf's required arguments to parse."""
    filler = []
    for action in leaf._actions:
        if action.required and not action.option_strings:
            filler.append("X")
        elif action.required:
            filler += [action.option_strings[0], "X"]
    return words + filler


# a command's KEY=VALUE keys: the config class of its --help (cli/reference.py), study's are finetune's
KEYED = {"study": "finetune"}


@cache
def valid_keys(command: str) -> frozenset[str]:
    from warmstart.cli.reference import CONFIGS, config_of
    from warmstart.config import all_keys
    from warmstart.registry import MODELS

    command = KEYED.get(command, command)
    if command not in CONFIGS:
        return frozenset()
    keys = set(all_keys(config_of(command)[0]))
    if command == "pretrain":  # each family's model.* keys
        keys |= {f"model.{k}" for cls, _ in MODELS.values() for k in all_keys(cls)}
    return frozenset(keys)


def check_keys(command: str, overrides: list[str]) -> None:
    keys = valid_keys(command)
    if not keys:
        return
    unknown = [o.split("=", 1)[0] for o in overrides if o.split("=", 1)[0] not in keys]
    assert not unknown, f"unknown config keys for warmstart {command}: {unknown}"


# ---------------------------------------------------------------- make and pip


@cache
def make_targets() -> frozenset[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return frozenset(m.group(1) for m in re.finditer(r"^([a-z][\w-]*):", text, re.M))


@cache
def extras() -> frozenset[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return frozenset(data["project"]["optional-dependencies"])


def check_command(words: list[str], cwd: Path = ROOT) -> None:
    """`make`, `pip install` and `python FILE` lines: the target, the extras and the files exist."""
    if words[0] == "make":
        missing = [t for t in words[1:] if not t.startswith("-") and t not in make_targets()]
        assert not missing, f"no make target {missing}"
    elif words[:2] == ["pip", "install"]:
        for word in words[2:]:
            named = re.search(r"\[([\w,-]+)\]", word)
            if named:
                missing = set(named.group(1).split(",")) - extras()
                assert not missing, f"no extra {sorted(missing)} in pyproject.toml"
        for flag, value in zip(words, words[1:]):
            if flag in ("-r", "-c"):
                assert (ROOT / value).is_file(), f"no file {value}"
    elif words[0] == "python" and len(words) > 1 and words[1].endswith(".py"):
        assert (cwd / words[1]).is_file() or (ROOT / words[1]).is_file(), f"no script {words[1]}"


def is_error(output: str) -> bool:
    """Whether a console block's output is warmstart's one-line refusal (exit code 2)."""
    return output.lstrip().startswith("error:") or ": error:" in output


def check_shell_block(block: Block) -> None:
    """Every simple command of a shell block: warmstart parsed, make / pip / python checked."""
    for line, shown in shell_lines(block):
        if is_error(shown):  # a console block showing a refused command: run and compared, not parsed
            continue
        cwd = ROOT
        for words in commands(line):
            if words[0] == "cd" and len(words) > 1:
                cwd = ROOT / words[1]
                continue
            args = warmstart_args(words)
            try:
                if args is not None:
                    parse_warmstart(args)
                else:
                    check_command(words, cwd)
            except AssertionError as e:
                raise AssertionError(f"{block.name}: {line.strip()}\n{e}") from None
