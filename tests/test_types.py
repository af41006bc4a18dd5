"""The type checker of `make lint`, held by `make test` too: mypy over the Python API and the config classes
([tool.mypy] in pyproject.toml names the files) reports nothing, and it does catch a wrong call."""

from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    """One mypy cache for both tests: the second reads the package's types from it."""
    return str(tmp_path_factory.mktemp("mypy-cache"))


@pytest.mark.slow
def test_mypy_is_clean_on_the_python_api(cache, monkeypatch):
    monkeypatch.chdir(ROOT)  # the files and settings of pyproject.toml
    out, err, code = mypy_api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", cache])
    assert code == 0, out + err
    assert "Success: no issues found" in out


@pytest.mark.slow
def test_mypy_catches_a_wrong_call_of_the_api(cache, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    user = tmp_path / "user.py"
    user.write_text(
        "import warmstart\n"
        'warmstart.finetune(init="runs/mini", lr="fast")\n'
        'warmstart.load("runs/rt").predict(["a"], top_k="all")\n'
        "config: warmstart.TrainConfig = warmstart.TrainConfig(lr=3e-5)\n"
    )
    out, _, code = mypy_api.run(
        ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", cache, str(user)]
    )
    assert code == 1
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 2 and '"lr"' in errors[0] and '"top_k"' in errors[1], out
