"""`finetune ... aux.objectives=mlm`: the task trained jointly with self-supervised objectives on its text."""

import json

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers.cli import assert_one_line_error
from tests.helpers.runs import Interrupt
from warmstart.checkpoints.load import load_finetuned
from warmstart.cli.main import main
from warmstart.commands.finetune import finetune
from warmstart.tasks.joint import JointUnit, task_texts

FAST = ["train.progress=false", "task.max_length=48", "train.batch_size=16", "evals_per_epoch=2"]


def flags(init, data, out, epochs=1):
    return {"init": str(init), "data": {"dataset": str(data)}, "out": str(out), "epochs": epochs}


def test_task_texts_are_the_inputs_without_labels():
    rows = [
        {"text": "a fine film", "label": "fresh"},
        {"words": ["The", "cat"], "tags": ["DT", "NN"]},
        {"question": "Who?", "context": "Ann did.", "answers": ["Ann"]},
    ]
    assert task_texts(rows) == ["a fine film", "The cat", "Who? Ann did."]


def test_joint_run_saves_the_task_model_alone(tiny_pretrained, rt_small, tmp_path):
    aux = ["aux.objectives=mlm", "aux.weights=[0.5]", "train.lr=1e-3"]
    joint = finetune(None, flags(tiny_pretrained, rt_small, tmp_path / "joint"), FAST + aux)
    plain = finetune(None, flags(tiny_pretrained, rt_small, tmp_path / "plain"), FAST + ["train.lr=1e-3"])
    a = load_file(str(tmp_path / "joint" / "best" / "model.safetensors"))
    b = load_file(str(tmp_path / "plain" / "best" / "model.safetensors"))
    assert a.keys() == b.keys()  # no MLM head, no joint-unit prefixes: loads as any finetuned model
    assert any(not a[k].equal(b[k]) for k in a)  # the masked-LM loss moved the shared weights
    load_finetuned(tmp_path / "joint" / "best")
    metrics = json.loads((tmp_path / "joint" / "test_metrics.json").read_text())
    assert metrics["aux_weights"] == {"mlm": pytest.approx(0.5)}
    assert joint["runs"][0]["test_metrics"]["test"].keys() == plain["runs"][0]["test_metrics"]["test"].keys()
    rows = [json.loads(r) for r in (tmp_path / "joint" / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in rows if r["split"] == "train"]
    assert train  # the training loss is the task's plus half the masked-LM loss


def build_joint(init, data, tmp_path, extra):
    """(joint unit, its batches, the task unit, the encoder) as finetune builds them, batch 16, seed 0."""
    from warmstart.checkpoints.load import load_encoder
    from warmstart.commands.finetune import joint_training, resolve
    from warmstart.registry import TASKS

    cfg = resolve(None, flags(init, data, tmp_path / "x"), FAST + ["aux.objectives=mlm", *extra])
    task = TASKS["classification"](cfg.task)
    encoder, tokenizer, config_json = load_encoder(str(init))
    task.bind(tokenizer, config_json, None)
    records, _ = task.read_splits(cfg)
    labels = task.labels(records["train"])
    features = {s: task.encode(r, tokenizer, labels, s) for s, r in records.items()}
    unit = task.build(encoder, labels)
    texts = [r["text"] for r in records["train"]]
    batches = task.train_batches(features["train"], 16, 0)
    joint, batches = joint_training(cfg, unit, batches, texts, features, tokenizer, 0)
    return joint, batches, unit, encoder


def test_joint_loss_is_task_plus_weighted_objective(tiny_pretrained, rt_small, tmp_path):
    """The joint unit's loss on one batch equals the task unit's plus w x the MLM unit's, each recomputed."""
    joint, batches, unit, _ = build_joint(tiny_pretrained, rt_small, tmp_path, ["aux.weights=[0.25]"])
    from warmstart.checkpoints.load import backbone

    assert isinstance(joint, JointUnit) and backbone(unit) is joint.backbone[0]
    names = {n for n, _ in joint.named_parameters()}
    assert not any(n.startswith("aux.mlm.encoder.") for n in names)  # the encoder is the task's, once
    joint.eval()
    batch = batches.batch(3)
    with torch.no_grad():
        loss, stats = joint(batch)
        task_loss, _ = unit({k: v for k, v in batch.items() if k not in ("aux", "dev")})
        mlm_loss, _ = joint.aux["mlm"](batch["aux"][0])
    assert float(loss) == pytest.approx(float(task_loss) + 0.25 * float(mlm_loss), rel=1e-6)
    assert torch.equal(batches.batch(3)["aux"][0]["input_ids"], batch["aux"][0]["input_ids"])  # pure in i


def test_learned_weights_move_by_the_gradient_cosine(tiny_pretrained, rt_small, tmp_path):
    extra = ["aux.learn_weights=true", "aux.meta_every=3", "aux.meta_lr=0.5"]
    joint, batches, unit, encoder = build_joint(tiny_pretrained, rt_small, tmp_path, extra)
    assert "dev" in batches.batch(0) and "dev" not in batches.batch(1) and "dev" in batches.batch(3)
    batch = batches.batch(3)
    shared = [p for p in encoder.parameters() if p.requires_grad]

    def flat_grad(loss):
        grads = torch.autograd.grad(loss, shared, allow_unused=True)  # the pooler is unused by one of them
        return torch.cat(
            [(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, shared)]
        )

    joint.train()
    torch.manual_seed(5)  # the same dropout masks here and in the joint unit's update (same order)
    g_dev = flat_grad(unit(batch["dev"])[0])
    g_mlm = flat_grad(joint.aux["mlm"](batch["aux"][0])[0])
    cosine = float(g_dev @ g_mlm / (g_dev.norm() * g_mlm.norm()))
    torch.manual_seed(5)
    joint(batch)
    assert joint.weights()["mlm"] == pytest.approx(float(torch.tensor(0.5 * cosine).exp()), rel=1e-4)
    before = joint.weights()["mlm"]
    joint(batches.batch(4))  # not a meta step: the weight stays
    assert joint.weights()["mlm"] == before


def test_joint_run_resumes_bit_for_bit(tiny_pretrained, rt_small, tmp_path):
    over = FAST + ["train.lr=1e-3", "train.save_every=3", "aux.objectives=mlm", "aux.learn_weights=true",
                   "aux.meta_every=2"]  # fmt: skip
    finetune(None, flags(tiny_pretrained, rt_small, tmp_path / "full", epochs=2), over)

    def stop(step, loss):
        if step == 7:
            raise Interrupt

    with pytest.raises(Interrupt):
        finetune(None, flags(tiny_pretrained, rt_small, tmp_path / "cut", epochs=2), over, hooks=[stop])
    finetune(resume=str(tmp_path / "cut"))
    a = load_file(str(tmp_path / "full" / "final" / "model.safetensors"))
    b = load_file(str(tmp_path / "cut" / "final" / "model.safetensors"))
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)
    ma = json.loads((tmp_path / "full" / "test_metrics.json").read_text())
    mb = json.loads((tmp_path / "cut" / "test_metrics.json").read_text())
    assert ma["aux_weights"] == mb["aux_weights"] and ma["aux_weights"]["mlm"] != 1.0


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["aux.objectives=clm"], "clm cannot train a bert model beside a task"),
        (["aux.objectives=nope"], "unknown objective 'nope'"),
        (["aux.objectives=mlm", "aux.weights=[1,2]"], "aux.weights has 2 values for 1 objectives"),
        (["aux.objectives=mlm+nsp"], "mlm+nsp cannot train a bert model"),
        (["aux.objectives=mlm,electra,mlm"], "aux.objectives names mlm more than once"),
    ],
)
def test_bad_aux_settings_are_one_line(tiny_pretrained, rt_small, tmp_path, capsys, extra, needle):
    out = tmp_path / "bad"
    argv = ["finetune", "--init", str(tiny_pretrained), "--dataset", str(rt_small), "--out", str(out)]
    code = main([*argv, *FAST, *extra])
    assert_one_line_error(code, capsys.readouterr().err, needle)
    assert not out.exists()
