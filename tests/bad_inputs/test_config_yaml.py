"""A --config YAML file is read whole or refused (issue 38): a ``!!set`` section (keys without values) was
dropped without a word, and a key given twice kept its last value without a word. Both are one line now,
naming the key and its line, through the command line and through the loader the commands share."""

import pytest

from tests.helpers.cli import assert_one_line_error
from warmstart import config as C
from warmstart.cli.main import main
from warmstart.errors import WarmstartError

pytestmark = pytest.mark.integration

REFUSED = [
    ("duplicate-nested", "train:\n  lr: 0.1\n  steps: 3\n  lr: 0.2\n", ["line 4", "'train.lr'", "line 2"]),
    ("duplicate-top", "epochs: 1\ntask: {name: tagging}\nepochs: 2\n", ["line 3", "'epochs'", "line 1"]),
    ("duplicate-quoted", "train:\n  lr: 0.1\n  'lr': 0.2\n", ["line 3", "'train.lr'"]),
    ("duplicate-in-flow", "train: {lr: 0.1, lr: 0.2}\n", ["line 1", "'train.lr'"]),
    ("duplicate-deep", "data:\n  a:\n    b: 1\n    b: 2\n", ["line 4", "'data.a.b'"]),
    ("set-section", "train: !!set {lr, steps}\n", ["line 1", "'train'", "!!set"]),
    ("set-empty-section", "epochs: 1\ntrain: !!set {}\n", ["line 2", "'train'", "!!set"]),
    ("set-document", "!!set {train}\n", ["line 1", "!!set"]),
    ("set-empty-document", "!!set {}\n", ["!!set"]),
    ("list-document", "- train\n- lr\n", ["must hold a mapping", "list"]),
    ("empty-list-document", "[]\n", ["must hold a mapping"]),
    ("false-document", "false\n", ["must hold a mapping"]),
]


@pytest.mark.parametrize("text,needles", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
@pytest.mark.parametrize("command", ["finetune", "pretrain"])
def test_config_file_refused_in_one_line_naming_key_and_line(command, text, needles, tmp_path, capsys):
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    code = main([command, "--config", str(path), "--out", str(out)])
    assert_one_line_error(code, capsys.readouterr().err, str(path), *needles)
    assert not out.exists()


def test_a_set_deep_inside_a_section_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("task:\n  name: classification\n  label_words: !!set {a, b}\n", encoding="utf-8")
    with pytest.raises(WarmstartError, match=r"line 3: 'task.label_words' is a !!set"):
        C.load_yaml(path)


def test_what_yaml_allows_is_still_read(tmp_path):
    """The same key in two mappings, a merge key overridden after it (YAML's own way to override), an empty
    file and a file of comments: all read as before."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "base: &b {lr: 0.1, steps: 3}\ntrain:\n  <<: *b\n  lr: 0.2\nother:\n  lr: 0.3\n", encoding="utf-8"
    )
    assert C.load_yaml(path) == {
        "base": {"lr": 0.1, "steps": 3},
        "train": {"lr": 0.2, "steps": 3},
        "other": {"lr": 0.3},
    }
    path.write_text("", encoding="utf-8")
    assert C.load_yaml(path) == {}
    path.write_text("# nothing yet\n", encoding="utf-8")
    assert C.load_yaml(path) == {}


def test_every_preset_reads_under_the_stricter_rules():
    for name in C.preset_names():
        assert isinstance(C.load_preset(name), dict)


def test_a_key_given_twice_at_the_start_of_a_long_file_names_its_lines(tmp_path):
    path = tmp_path / "c.yaml"
    body = "".join(f"k{i}: {i}\n" for i in range(50))
    path.write_text("train:\n  lr: 0.1\n" + body + "train:\n  lr: 0.2\n", encoding="utf-8")
    with pytest.raises(WarmstartError) as caught:
        C.load_yaml(path)
    assert "line 53: the key 'train' is given twice (first at line 1)" in str(caught.value)
