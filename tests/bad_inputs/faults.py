"""The fault table (issue 22), beside the bad-input table of cases.py and run by the same test: inputs and
damage that once lost data, resumed the wrong run, ended in a traceback or poisoned a run. Each row: exit
code 2, one line, every file present before byte-identical after (test_table.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.bad_inputs.cases import FT, TINY, case, copy, lines, model

EMBED = "embed {tmp}/m --data {csv} --out {tmp}/e.npy"


def edit_json(name: str, **changes):
    """damage: set keys of a JSON file."""

    def damage(path: Path) -> None:
        data = json.loads(path.read_text())
        data.update(changes)
        path.write_text(json.dumps(data))

    return damage


def edit_text(old: str, new: str):
    def damage(path: Path) -> None:
        path.write_text(path.read_text().replace(old, new))

    return damage


def interrupted(*remove: str, damage=None, name: str = ""):
    """setup: a copy of the pretraining run as {tmp}/r without its final model (as if killed before the
    end), the paths ``remove`` deleted from it and ``damage`` applied to RUN/``name``."""

    def setup(tmp: Path, fx: dict) -> None:
        shutil.copytree(fx["pre"], tmp / "r")
        for rel in ("final", *remove):
            shutil.rmtree(tmp / "r" / rel)
        if damage:
            damage(tmp / "r" / name)

    return setup


LAST = "checkpoints/step-00000012"
SHARDED_INDEX = '{"metadata": {}, "wieght_map": {"a": "model-00001-of-00002.safetensors"}}'
HF_CONFIG = '{"model_type": "bert", "vocab_size": 1000, "hidden_size": 32}'

SQUAD = json.dumps(
    {
        "data": [
            {
                "title": "t",
                "paragraphs": [
                    {
                        "context": "A short context.",
                        "qas": [
                            {
                                "id": "q1",
                                "question": "What?",
                                "answers": [{"text": "context", "answer_start": 400}],
                            }
                        ],
                    }
                ],
            }
        ]
    }
)

MIXED = lines('{"text": "t %d", "label": 1}\n', 30) + '{"text": "x", "label": true}\n'

FAULTS = [
    # data loss: an output that is, holds or lies inside an input
    case("overwrite-own-init", f"pretrain --shards {{shards}} --init {{tmp}}/r --out {{tmp}}/r --overwrite "
         f"{TINY}", "is the --init", setup=copy("pre", "r")),
    case("overwrite-run-holding-init", f"finetune --init {{tmp}}/r/final --dataset {{csv}} --out {{tmp}}/r "
         f"--overwrite {FT}", "contains the --init", setup=copy("pre", "r")),
    case("overwrite-own-shards", f"pretrain --shards {{tmp}}/s --out {{tmp}}/s --overwrite {TINY}",
         "is the --shards", setup=copy("shards", "s")),
    case("overwrite-the-dataset-file", f"finetune --init {{pre}} --dataset {{tmp}}/d.csv --out {{tmp}}/d.csv "
         f"--overwrite {FT}", "is the --dataset", files={"d.csv": "text,label\na,x\nb,y\n"}),
    case("overwrite-finished-run-empty-corpus", "pretrain --tokenizer {tok} --corpus {tmp}/empty.txt "
         f"--out {{tmp}}/r --overwrite {TINY}", "has no text", setup=copy("pre", "r"),
         files={"empty.txt": ""}),
    # a resume is the same run
    case("resume-other-dataset", "finetune --resume {tmp}/f --dataset {tmp}/other.csv", "cannot resume",
         "data.dataset (was", setup=copy("ft", "f"), files={"other.csv": "text,label\na,x\nb,y\n"}),
    case("resume-other-task-settings", "finetune --resume {tmp}/f task.max_length=64 --epochs 5",
         "epochs (was 1", "task.max_length (was 32, now 64)", setup=copy("ft", "f")),
    case("resume-more-steps", "pretrain --resume {tmp}/r --steps 99", "train.steps (was",
         setup=interrupted()),
    # tracebacks where one line belongs
    case("config-json-edited-away-from-weights", EMBED, "config.json does not match the weights",
         "[1000, 32] there, the config makes it [1000, 64]",
         setup=model(damage=edit_json("c", hidden_size=64), name="config.json")),
    case("config-json-asks-for-2-gb", f"finetune --init {{tmp}}/m --dataset {{csv}} --out {{tmp}}/o {FT}",
         "config makes it [16000000, 32]", setup=model(damage=edit_json("c", vocab_size=16_000_000),
                                                       name="config.json")),
    case("config-json-vocab-beyond-the-rules", EMBED, "the model's config.json: vocab_size must be at most",
         setup=model(damage=edit_json("c", vocab_size=400_000_000), name="config.json")),
    case("config-json-negative-layers", EMBED, "config.json: num_hidden_layers must be at least 1, got -2",
         setup=model(damage=edit_json("c", num_hidden_layers=-2), name="config.json")),
    case("config-json-float-heads", EMBED, "config.json: num_attention_heads must be a whole number, got 2.0",
         setup=model(damage=edit_json("c", num_attention_heads=2.0), name="config.json")),
    case("model-flags-ask-for-terabytes", f"pretrain --shards {{shards}} --out {{tmp}}/r {TINY} "
         "model.hidden_size=400000 model.num_attention_heads=1 model.intermediate_size=400000",
         "describes a model of", "GB of memory free"),
    case("config-yaml-edited-away-from-weights", "pretrain --resume {tmp}/r", "config.yaml does not match",
         setup=interrupted(damage=edit_text("hidden_size: 32", "hidden_size: 48"), name="config.yaml")),
    case("trainer-folder-missing", "pretrain --resume {tmp}/r", "step-00000012 is damaged",
         "trainer/optimizer.json is missing", setup=interrupted(f"{LAST}/trainer")),
    case("trainer-state-truncated", "pretrain --resume {tmp}/r", "state.json is not valid JSON",
         setup=interrupted(damage=lambda p: p.write_text('{"step": 12, "rn'),
                           name=f"{LAST}/trainer/state.json")),
    case("trainer-state-step-1e30", "pretrain --resume {tmp}/r", "step-00000012 is damaged",
         "holds step 1e+30",
         setup=interrupted(damage=edit_json("s", step=1e30), name=f"{LAST}/trainer/state.json")),
    case("trainer-state-step-of-another-checkpoint", "pretrain --resume {tmp}/r", "holds step 7",
         "not the step of step-00000012",
         setup=interrupted(damage=edit_json("s", step=7), name=f"{LAST}/trainer/state.json")),
    case("trainer-state-negative-epoch", "pretrain --resume {tmp}/r", "holds epoch -3, not a count",
         setup=interrupted(damage=edit_json("s", epoch=-3), name=f"{LAST}/trainer/state.json")),
    case("trainer-state-best-value-text", "pretrain --resume {tmp}/r", "holds best_value low",
         setup=interrupted(damage=edit_json("s", best_value="low"), name=f"{LAST}/trainer/state.json")),
    case("sharded-index-without-weight-map", "import {tmp}/h --out {tmp}/i", "has no weight_map",
         files={"h/config.json": HF_CONFIG, "h/model.safetensors.index.json": SHARDED_INDEX}),
    case("w2v-header-claims-a-billion-rows", "word2vec similar cat --vectors {tmp}/v.txt",
         "announces 1,000,000,000 vectors", files={"v.txt": "1000000000 3\ncat 0.1 0.2 0.3\n"}),
    case("w2v-binary-header-claims-huge-dim", "word2vec similar cat --vectors {tmp}/v.bin",
         "announces 2 vectors of 1,000,000,000 values", files={"v.bin": b"2 1000000000\ncat \x00\x00\x80?"}),
    case("output-name-too-long", f"pretrain --shards {{shards}} --out {{tmp}}/{'n' * 300} {TINY}",
         "too long", proc=True),
    case("yaml-nested-thousands-deep", "pretrain --shards {shards} --out {tmp}/r --config {tmp}/c.yaml",
         "nested too deeply", files={"c.yaml": "train:\n  lr: " + "[" * 50_000 + "]" * 50_000 + "\n"}),
    # values that poison a run
    case("lr-above-one", f"pretrain --shards {{shards}} --out {{tmp}}/r {TINY} train.lr=1e30", "train.lr",
         "in [0, 1]"),
    case("lr-infinite-as-flag", f"pretrain --shards {{shards}} --out {{tmp}}/r {TINY} --lr inf", "finite"),
    case("mask-prob-zero", f"pretrain --shards {{shards}} --out {{tmp}}/r {TINY} mlm.mask_prob=0",
         "mask_prob is 0"),
    case("labels-mix-booleans-and-numbers", f"finetune --init {{pre}} --dataset {{tmp}}/d.jsonl "
         f"--out {{tmp}}/o {FT}", "line", files={"d.jsonl": MIXED}),
    case("squad-answer-past-its-context", f"finetune --init {{pre}} --task extractive_qa "
         f"--dataset {{tmp}}/q.json --out {{tmp}}/o {FT}", "q1", files={"q.json": SQUAD}),
    case("jsonl-lone-surrogate", f"finetune --init {{pre}} --dataset {{tmp}}/d.jsonl --out {{tmp}}/o {FT}",
         "unpaired surrogate", files={"d.jsonl": lines('{"text": "t %d", "label": "a"}\n', 30)
                                      + '{"text": "bad \\ud800 text", "label": "b"}\n'}),
    case("predict-lone-surrogate", "predict {ft} --input {tmp}/in.jsonl", "unpaired surrogate",
         files={"in.jsonl": '{"text": "fine"}\n{"text": "\\udc00"}\n'}),
    case("corpus-one-line-of-2-mb", "prepare --corpus {tmp}/c.txt --tokenizer {tok} --out {tmp}/s",
         "line 1", "longer than the limit", files={"c.txt": "word " * 400_000}),
    case("resume-with-nan-lr", "pretrain --resume {tmp}/r train.lr=nan", "finite", setup=interrupted()),
]  # fmt: skip
