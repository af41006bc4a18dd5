"""`--help` describes every option, and the module entry point works."""

import subprocess
import sys

import pytest

from warmstart.cli.main import build_parser, main
from warmstart.config import all_keys
from warmstart.pretraining.config import PretrainConfig


def test_pretrain_help_lists_every_config_key_and_preset(capsys):
    with pytest.raises(SystemExit) as e:
        main(["pretrain", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for key in all_keys(PretrainConfig):
        assert f"  {key} " in out
    assert "bert-mini" in out and "bert-large" in out


def test_every_flag_of_every_command_has_help():
    parser = build_parser()
    seen = 0

    def walk(p):
        nonlocal seen
        for action in p._actions:
            if action.dest in ("help", "version", "command") or action.dest.endswith("_cmd"):
                if hasattr(action, "choices") and isinstance(action.choices, dict):
                    for sub in action.choices.values():
                        walk(sub)
                continue
            seen += 1
            assert action.help, f"{p.prog}: {action.option_strings or action.dest} has no help"

    walk(parser)
    assert seen > 30


def test_python_dash_m_entry_point():
    out = subprocess.run([sys.executable, "-m", "warmstart", "data", "list"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "rotten-tomatoes" in out.stdout and "wiki-leads" in out.stdout


def test_the_command_line_starts_without_the_compiler_or_matplotlib():
    """Every command builds the whole parser first: torch.compile's machinery (1.7 s) and matplotlib (0.6 s)
    wait until a command needs them (nn/outside_compile.py; the plots import where they draw)."""
    code = (
        "import sys; from warmstart.cli.main import build_parser; build_parser(); "
        "print(sorted(m for m in ('torch._dynamo', 'matplotlib', 'matplotlib.pyplot') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
