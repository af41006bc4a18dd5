"""Issue 39: the reference pages generated from the parser, the config classes, the presets, the dataset
table and the server's schemas are the ones committed in docs/reference (regenerate them with `make docs`),
and each config table is the one its command's --help shows."""

from tests.docs.blocks import ROOT, parser
from warmstart.cli.reference import CONFIGS, config_of, leaves, pages
from warmstart.config import help_text


def test_the_generated_pages_are_committed_as_generated():
    stale = []
    for name, text in pages().items():
        path = ROOT / "docs" / "reference" / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    assert not stale, f"docs/reference/{stale} differ from the code: run `make docs` and commit them"


def test_each_config_table_is_the_one_its_command_help_lists():
    epilogs = {path: leaf.epilog or "" for path, leaf, _ in leaves(parser())}
    keyed = {path for path, text in epilogs.items() if "config keys (set with" in text}
    assert keyed == set(CONFIGS), "a command with config keys is missing from cli/reference.py CONFIGS"
    for command in CONFIGS:
        cls, defaults = config_of(command)
        shown = [help_text(cls, defaults, config_file=f) for f in (True, False)]
        assert any(text in epilogs[command] for text in shown), command


def test_every_command_and_flag_is_in_the_commands_page():
    page = (ROOT / "docs/reference/commands.md").read_text(encoding="utf-8")
    for path, leaf, _ in leaves(parser()):
        assert f"## warmstart {path}\n" in page
        for action in leaf._actions:
            for flag in action.option_strings:
                assert flag in page, f"warmstart {path} {flag}"
