"""The help names every family and objective warmstart has (issue 40: `--arch` listed 4 families,
`--objective` omitted bilm and plm, `import` said "(bert, gpt2, t5, bart)")."""

from warmstart.cli.main import build_parser
from warmstart.hub.families import FAMILIES
from warmstart.registry import MODELS, OBJECTIVES


def _help(command: str, dest: str) -> str:
    sub = next(a for a in build_parser()._actions if getattr(a, "choices", None) and command in a.choices)
    leaf = sub.choices[command]
    return " ".join(next(a.help for a in leaf._actions if a.dest == dest).split())


def test_pretrain_help_lists_every_family_and_objective():
    arch, objective = _help("pretrain", "arch"), _help("pretrain", "objective")
    assert all(f in arch for f in MODELS), arch
    assert all(o in objective for o in OBJECTIVES), objective
    for family in MODELS:  # each family with the objectives that train it
        assert f"{family}: " in objective


def test_import_help_lists_every_transformers_family_it_reads():
    sub = next(a for a in build_parser()._actions if getattr(a, "choices", None) and "import" in a.choices)
    text = next(a.help for a in sub._choices_actions if a.dest == "import")
    assert all(f in text for f in FAMILIES), text
