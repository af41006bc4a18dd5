"""Issue 37, part 6: a finished `warmstart finetune` or `warmstart pretrain` ends on lines that point on: the
best checkpoint (its step and validation metric), test_metrics.json, metrics.jsonl, the TensorBoard command,
`warmstart report RUN` and `warmstart export`. Each named file is there, and each named command, run as
printed, does what the line says. Runs: tiny ones from the session's tiny pretrained BERT on real text."""

import json
import shlex

from tests.helpers.cli import run
from tests.helpers.hub import FINETUNE_FAST
from tests.helpers.shapes import TINY_MODEL
from warmstart.cli.main import main

LABELS = ["run", "best model", "test metrics", "metrics log", "curves", "share"]


def closing(out: str, labels: list[str]) -> dict[str, str]:
    """The last len(labels) lines of ``out``, each checked to start with its label: {label: the rest}."""
    lines = out.rstrip("\n").splitlines()[-len(labels) :]
    assert [line[:14].rstrip() for line in lines] == labels, out
    return {label: line[14:] for label, line in zip(labels, lines)}


def command(text: str) -> list[str]:
    """The arguments of a `warmstart ...` command printed in a line (up to two spaces or a |)."""
    words = shlex.split(text.split("  ")[0].split("|")[0])
    assert words[0] == "warmstart", text
    return words[1:]


def test_a_finetune_ends_pointing_at_its_results_and_the_next_commands(tiny_pretrained, rt_small, tmp_path,
                                                                       capsys):  # fmt: skip
    out = tmp_path / "rt"
    argv = ["finetune", "--init", tiny_pretrained, "--dataset", rt_small, "--out", out, "--epochs", "1"]
    code, said, err = run(capsys, *argv, *FINETUNE_FAST)
    assert code == 0, err
    lines = closing(said, LABELS)
    best = json.loads((out / "best" / "best.json").read_text())
    assert lines["run"] == str(out)
    assert lines["best model"] == f"{out}/best (step {best['step']}, validation accuracy {best['value']:.4f})"
    assert (
        lines["test metrics"] == f"{out}/test_metrics.json" and lines["metrics log"] == f"{out}/metrics.jsonl"
    )
    assert (out / "test_metrics.json").is_file() and (out / "metrics.jsonl").is_file()
    curves, report = lines["curves"].split("   |   ")
    assert curves == f"tensorboard --logdir {out}/tb" and (out / "tb").is_dir()
    assert report == f"warmstart report {out}  (writes {out}/report.html)"
    assert main(command(report)) == 0 and (out / "report.html").is_file()
    assert lines["share"] == f"warmstart export {out} --out {tmp_path}/rt-hf"
    assert main(command(lines["share"])) == 0 and (tmp_path / "rt-hf" / "README.md").is_file()


def test_several_seeds_point_at_the_summary_and_one_seeds_run(tiny_pretrained, rt_small, tmp_path, capsys):
    out = tmp_path / "seeds"
    argv = ["finetune", "--init", tiny_pretrained, "--dataset", rt_small, "--out", out, "--seeds", "1,2"]
    code, said, err = run(capsys, *argv, "--epochs", "1", *FINETUNE_FAST, "data.train_limit=32")
    assert code == 0, err
    lines = closing(said, ["run", "summary", "best model", *LABELS[2:]])
    assert lines["summary"] == f"{out}/summary.json (2 seeds)" and (out / "summary.json").is_file()
    # the seed named is the one whose best checkpoint scored best on validation (accuracy: higher)
    scores = {s: json.loads((out / f"seed-{s}" / "test_metrics.json").read_text()) for s in (1, 2)}
    assert {m["metric"] for m in scores.values()} == {"accuracy"}
    best = max((m["best_validation"], -s) for s, m in scores.items())[1] * -1
    assert lines["best model"].startswith(f"{out}/seed-{best}/best (step ")
    assert lines["best model"].endswith(f"the best of 2 seeds on validation, each seed's: {out}/seed-*/best")
    assert lines["test metrics"] == f"{out}/seed-{best}/test_metrics.json"
    assert lines["curves"].startswith(f"tensorboard --logdir {out}   |   warmstart report {out}")
    assert lines["share"] == f"warmstart export {out}/seed-{best} --out {tmp_path}/seeds-seed-{best}-hf"
    assert main(command(lines["share"])) == 0  # `export RUN` of several seeds is refused: one seed's is not
    assert (tmp_path / f"seeds-seed-{best}-hf" / "config.json").is_file()


def test_a_pretrain_ends_pointing_at_its_models_and_finetune(small_shards, tmp_path, capsys):
    out = tmp_path / "pre dir"  # a space: the printed commands quote it
    argv = ["pretrain", "--shards", small_shards, "--out", out, "--steps", "4", *TINY_MODEL,
            "train.batch_size=4", "train.eval_every=2", "train.save_every=2", "train.eval_batches=1",
            "train.progress=false"]  # fmt: skip
    code, said, err = run(capsys, *argv)
    assert code == 0, err
    labels = ["run", "best model", "final model", "metrics log", "curves", "share", "finetune"]
    lines = closing(said, labels)
    assert lines["best model"].startswith(f"{out}/best (step ") and "validation loss" in lines["best model"]
    assert lines["final model"].startswith(f"{out}/final") and "test metrics" not in said
    assert command(lines["curves"].split("|")[1].strip()) == ["report", str(out)]
    assert command(lines["finetune"])[:3] == ["finetune", "--init", str(out)]
    assert main(command(lines["share"])) == 0 and (tmp_path / "pre dir-hf" / "README.md").is_file()
