"""Which checkpoint answers (issue 38): `predict`, `evaluate`, `warmstart.load` and `export` of a finetuned
run use RUN/best. Without best/ they fell back to final/ or the last step checkpoint and said nothing, so the
answers came from another model; now one line on stderr names the checkpoint that answers. A best/ that is
there but cannot be loaded (no model.safetensors, or its weights only in a pickle) is refused in one line, and
the pickle is never unpickled."""

import json
import pickle
import shutil
from pathlib import Path

import pytest

import warmstart
from tests.helpers.cli import assert_one_line_error
from warmstart.cli.main import main
from warmstart.errors import WarmstartError

pytestmark = pytest.mark.integration

TEXTS = ["A warm, funny film.", "Dull and far too long.", "The cast is wonderful."]


@pytest.fixture(scope="module")
def finetuned(tiny_pretrained, rt_small, tmp_path_factory) -> Path:
    """A short classification run from ``tiny_pretrained``: best/, final/ and one step checkpoint."""
    from warmstart.commands.finetune import finetune

    out = tmp_path_factory.mktemp("which") / "run"
    flags = {"init": str(tiny_pretrained), "data": {"dataset": str(rt_small)}, "out": str(out)}
    overrides = ["train.steps=4", "train.eval_every=2", "train.save_every=2", "train.batch_size=16",
                 "task.max_length=32", "train.progress=false"]  # fmt: skip
    finetune(None, flags, overrides)
    assert {p.name for p in out.iterdir()} >= {"best", "final", "checkpoints"}
    return out


@pytest.fixture
def run(finetuned, tmp_path) -> Path:
    """A copy of the run, for a test to take a checkpoint away from."""
    return Path(shutil.copytree(finetuned, tmp_path / "run"))


@pytest.fixture
def inputs(tmp_path) -> Path:
    path = tmp_path / "inputs.txt"
    path.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return path


def predict(target: Path, inputs: Path, capsys) -> tuple[int, list[dict], str]:
    """(exit code, predictions, stderr) of `warmstart predict TARGET --input INPUTS`."""
    code = main(["predict", str(target), "--input", str(inputs)])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


class Planted:
    """Unpickled, it writes the file ``path``: the proof that a pickle was loaded."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def plant_pickle(checkpoint: Path, marker: Path) -> None:
    """Replace the checkpoint's safetensors weights with a pickle that writes ``marker`` when loaded."""
    (checkpoint / "model.safetensors").unlink()
    with open(checkpoint / "pytorch_model.bin", "wb") as fh:
        pickle.dump({"weights": Planted(marker)}, fh)


def test_without_best_predict_says_that_final_answers(run, inputs, capsys):
    shutil.rmtree(run / "best")
    code, preds, err = predict(run, inputs, capsys)
    assert code == 0, err
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert (
        f"{run} has no best/: predicting with {run / 'final'} (the model at the end of training, step " in err
    )
    assert f"step {steps[-1]})" in err
    code, direct, quiet = predict(run / "final", inputs, capsys)
    assert code == 0 and preds == direct and "has no" not in quiet  # the answers are final/'s


def test_without_best_or_final_the_last_step_checkpoint_is_named(run, inputs, capsys):
    shutil.rmtree(run / "best")
    shutil.rmtree(run / "final")
    last = sorted((run / "checkpoints").glob("step-*"))[-1]
    code, preds, err = predict(run, inputs, capsys)
    assert code == 0 and len(preds) == len(TEXTS), err
    assert f"{run} has no best/: predicting with {last} (step {int(last.name[5:])})" in err


def test_without_best_evaluate_says_that_final_answers(run, rt_small, capsys):
    shutil.rmtree(run / "best")
    code = main(["evaluate", str(run), "--data", str(rt_small), "--split", "test"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"{run} has no best/: evaluating {run / 'final'}" in err


def test_with_best_nothing_extra_is_said(run, inputs, capsys):
    code, _, err = predict(run, inputs, capsys)
    assert code == 0 and "has no" not in err, err


def test_a_pickled_best_is_refused_and_never_loaded(run, inputs, tmp_path, capsys):
    marker = tmp_path / "unpickled"
    plant_pickle(run / "best", marker)
    code, preds, err = predict(run, inputs, capsys)
    assert_one_line_error(code, err, str(run / "best"), "pytorch_model.bin", "a pickle", "never loads")
    assert preds == []  # not final/'s answers either
    code = main(["evaluate", str(run), "--data", str(inputs)])
    assert_one_line_error(code, capsys.readouterr().err, "pytorch_model.bin", "a pickle")
    code = main(["export", str(run), "--out", str(tmp_path / "hf")])
    assert_one_line_error(code, capsys.readouterr().err, "pytorch_model.bin", "a pickle")
    assert not (tmp_path / "hf").exists()
    with pytest.raises(WarmstartError, match="only pytorch_model.bin: a pickle"):
        warmstart.load(run)
    with pytest.raises(WarmstartError, match="only pytorch_model.bin: a pickle"):
        warmstart.load(run / "best")  # the checkpoint itself, named directly
    assert not marker.exists()


def test_a_best_without_weights_is_refused_naming_the_others(run, inputs, capsys):
    (run / "best" / "model.safetensors").unlink()
    code, _, err = predict(run, inputs, capsys)
    assert_one_line_error(code, err, f"{run / 'best'} has no model.safetensors", "final")


def test_load_says_which_checkpoint_answers(run, capsys):
    shutil.rmtree(run / "best")
    model = warmstart.load(run, device="cpu")
    assert model.path == run / "final"
    assert f"{run} has no best/: loading {run / 'final'}" in capsys.readouterr().err
    assert set(model.predict(TEXTS[0])["probabilities"]) == {"fresh", "rotten"}


def test_load_of_a_pretraining_run_is_its_final_model(tiny_pretrained, tmp_path, capsys):
    """A pretraining's best/ only had the lowest validation loss: load takes final/, as its docstring,
    export and `finetune --init` do; without final/ it takes best/ and says so."""
    assert warmstart.load(tiny_pretrained, device="cpu").path == tiny_pretrained / "final"
    assert "has no" not in capsys.readouterr().err
    run = Path(shutil.copytree(tiny_pretrained, tmp_path / "pre"))
    shutil.rmtree(run / "final")
    assert warmstart.load(run, device="cpu").path == run / "best"
    assert f"{run} has no final/: loading {run / 'best'} (the best model: step " in capsys.readouterr().err
