"""A tiny BERT multitask run (`--task multitask` on an encoder: one head per task) on real classification,
tagging and QA data, shared by the tests of multitask heads (tests/tasks/conftest.py's ``mt_run``)."""

from pathlib import Path

from warmstart.commands.finetune import finetune

HEADS = ("rotten-tomatoes", "brown-pos-universal", "wiki-qa")
TASKS = f"multitask.tasks={','.join(HEADS)}"
FAST = ["train.progress=false", "task.max_length=48", "task.doc_stride=16", "train.batch_size=8"]
FAST += ["data.train_limit=32", "multitask.eval_limit=8", "train.lr=1e-3", "breakdown=false"]


def flags(init, out, steps=12) -> dict:
    return {"init": str(init), "out": str(out), "task": {"name": "multitask"}, "train": {"steps": steps}}


def multitask_run(init, out: Path) -> Path:
    """12 steps on the three HEADS, evaluated and saved every 6 (best/ and final/)."""
    finetune(None, flags(init, out), FAST + [TASKS, "train.eval_every=6", "train.save_every=6"])
    return out
