"""Issue 39: every shell and Python block of README.md and docs/ runs in the tests at tiny size, or says in
its fence why it cannot run here, and even then has each `warmstart` line parsed by the real parser."""

import pytest

from tests.docs.blocks import (
    INFO,
    REASONS,
    ROOT,
    RUN_ELSEWHERE,
    SHELLS,
    Block,
    blocks,
    check_shell_block,
    fence_infos,
    parse_warmstart,
)
from tests.docs.runner import missing_setup, run_python_block, run_shell_block, run_warmstart

BLOCKS = blocks()
CODE_WORDS = ("bash", "sh", "shell", "zsh", "console", "python", "py", "pycon", "python3")


def run_elsewhere(block: Block) -> str | None:
    """The example file a Python block includes or repeats word for word, when a test of its own runs it."""
    if block.language != "python":
        return None
    for example in RUN_ELSEWHERE:
        if block.included == example or block.source == (ROOT / example).read_text(encoding="utf-8"):
            return example
    return None


RUNNABLE = [b for b in BLOCKS if b.norun is None and not run_elsewhere(b)]


def test_the_documents_have_blocks_of_each_kind():
    languages = {b.language for b in BLOCKS}
    assert languages == {"bash", "console", "python"} and len(RUNNABLE) >= 5


def test_every_code_fence_is_one_the_tests_read():
    """A shell or Python fence spelled another way (```sh, a typo in the marker) would escape the tests."""
    unread = []
    for place, info in fence_infos():
        word = info.strip().lstrip("{.").split(" ")[0].rstrip("}")
        if word in CODE_WORDS and not INFO.match(info.strip() + "\n"):
            unread.append(f"{place}: ```{info}")
    assert not unread, unread


def test_every_marker_gives_a_known_reason():
    bad = [f"{b.name}: {b.norun!r}" for b in BLOCKS if b.norun is not None and b.norun not in REASONS]
    assert not bad, f"{bad}; a reason is one of {sorted(REASONS)}"


def test_examples_run_elsewhere_are_run_by_their_tests():
    for example, test in RUN_ELSEWHERE.items():
        assert example in (ROOT / test).read_text(encoding="utf-8"), f"{test} does not run {example}"
    assert "examples/python_api.py" in (ROOT / "README.md").read_text(encoding="utf-8")  # named there


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language in SHELLS], ids=lambda b: b.name)
def test_each_warmstart_line_parses(block):
    check_shell_block(block)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language == "python"], ids=lambda b: b.name)
def test_each_python_block_compiles(block):
    if block.included:
        assert (ROOT / block.included).is_file(), f"{block.name} includes a missing {block.included}"
        return
    compile(block.source, block.name, "exec")


def test_the_parse_check_catches_what_it_should():
    parse_warmstart(["finetune", "--init", "r", "--dataset", "d", "train.lr=3e-5"])
    for bad in (
        ["finetune", "--epoch", "1"],  # a misspelt flag
        ["finetune", "--init", "r", "train.lrr=3e-5"],  # an unknown config key
        ["pretrian"],  # an unknown command
        ["pretrain", "...", "--sheds", "x"],  # an elided line still has its flags checked
    ):
        with pytest.raises(AssertionError):
            parse_warmstart(bad)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """One work directory for the module's runnable blocks, in document order (the Python quick start
    finetunes the model the command-line quick start imported); the checkout's npm data linked in."""
    path = tmp_path_factory.mktemp("docs-work")
    if (ROOT / ".npm").is_dir():
        (path / ".npm").symlink_to(ROOT / ".npm")
    return path


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.name)
def test_each_unmarked_block_runs(block, workdir):
    missing = missing_setup(block, ROOT)
    if missing:
        pytest.skip(missing)
    if (
        block.language == "python"
        and "runs/minilm" in block.source
        and not (workdir / "runs/minilm").exists()
    ):
        from tests.helpers.models import minilm_dir

        assert run_warmstart(["import", str(minilm_dir()), "--out", str(workdir / "runs/minilm")])[0] == 0
    if block.language == "python":
        run_python_block(block, workdir)
    else:
        run_shell_block(block, workdir)


def test_a_console_block_is_compared(tmp_path):
    """What a console block shows is checked line by line: a wrong line fails."""
    good = Block("x.md", 1, "console", None, "$ warmstart pretrian\nerror: unknown command 'pretrian'; "
                 "did you mean pretrain?\n")  # fmt: skip
    run_shell_block(good, tmp_path)
    bad = Block("x.md", 1, "console", None, good.source.replace("pretrain?", "prepare?"))
    with pytest.raises(AssertionError):
        run_shell_block(bad, tmp_path)
