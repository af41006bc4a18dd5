"""The bad-input table: one row per case, across every command.

A row is a command line (``{tmp}`` is the case's own directory, the other names are session fixtures: see
conftest.py ``fx``), the files to write into ``{tmp}`` first, an optional ``setup(tmp, fx)`` for copies of
runs that it damages, and words the one error line must contain. ``proc=True`` rows run the installed
``warmstart`` script in a real subprocess; the others call ``warmstart.cli.main`` in this process.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TINY = "train.progress=false train.batch_size=4 train.eval_batches=1 --steps 2 data.seq_len=64"
FT = "train.progress=false task.max_length=32 --epochs 1"
INIT = f"pretrain --shards {{shards}} --init {{tmp}}/m --out {{tmp}}/r {TINY}"


@dataclass
class Case:
    id: str
    argv: str
    needles: tuple[str, ...]
    files: dict[str, str | bytes] = field(default_factory=dict)
    setup: Callable[[Path, dict], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    proc: bool = False


def case(id, argv, *needles, files=None, setup=None, env=None, proc=False) -> Case:
    return Case(id, argv, needles, files or {}, setup, env or {}, proc)


# ------------------------------------------------------------------------------------- damage helpers
def half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def garbage(path: Path) -> None:
    path.write_bytes(bytes((i * 37 + 11) % 256 for i in range(path.stat().st_size)))


def model(run: str = "pre", damage: Callable[[Path], None] | None = None, name: str = "model.safetensors"):
    """setup: a copy of RUN/final (or RUN/best for a finetuned run) as {tmp}/m, one file damaged."""

    def setup(tmp: Path, fx: dict) -> None:
        src = fx[run] / ("best" if run == "ft" else "final")
        shutil.copytree(src, tmp / "m")
        if damage:
            damage(tmp / "m" / name)

    return setup


def copy(key: str, to: str, damage: Callable[[Path], None] | None = None, name: str = ""):
    """setup: a copy of the fixture ``key`` (a run, tokenizer or shards directory) as {tmp}/``to``."""

    def setup(tmp: Path, fx: dict) -> None:
        shutil.copytree(fx[key], tmp / to)
        if damage:
            damage(tmp / to / name)

    return setup


def swap_tokenizer(tmp: Path, fx: dict) -> None:
    """A model directory whose tokenizer (800 tokens) is not the model's (1,000)."""
    model()(tmp, fx)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(fx["other_tok"] / name, tmp / "m" / name)


def bad_tokenizer_config(tmp: Path, fx: dict) -> None:
    copy("tok", "t")(tmp, fx)
    (tmp / "t" / "tokenizer_config.json").write_text("{oops")


def hf_export(**edits):
    """setup: the tiny pretrained run exported as a transformers directory {tmp}/h, its config.json edited."""

    def setup(tmp: Path, fx: dict) -> None:
        from warmstart.hub.convert import export_hf

        export_hf(fx["pre"], tmp / "h")
        config = json.loads((tmp / "h" / "config.json").read_text())
        (tmp / "h" / "config.json").write_text(json.dumps({**config, **edits}))

    return setup


def lines(template: str, n: int = 60) -> str:
    return "".join(template % i for i in range(n))


CHOICES = lines('{"context": "c %d", "choices": ["a", "b"], "label": "x"}\n')
HF_CONFIG = '{"model_type": "bert", "vocab_size": 1000}'
HUGE = 2**70  # more than any seed, size or count can be

# --------------------------------------------------------------------------------------------- the table
CASES = [
    # tokenizer train
    case("tok-binary-corpus", "tokenizer train --corpus {tmp}/c.txt --out {tmp}/t", "binary", "NUL",
         files={"c.txt": bytes(range(256)) * 8}, proc=True),
    case("tok-utf16-corpus", "tokenizer train --corpus {tmp}/c.txt --out {tmp}/t", "UTF-16",
         files={"c.txt": "a text saved as UTF-16\n".encode("utf-16") * 50}),
    case("tok-unsupported-type", "tokenizer train --corpus {tmp}/c.pdf --out {tmp}/t",
         "unsupported file type", files={"c.pdf": b"%PDF-1.4"}),
    case("tok-vocab-zero", "tokenizer train --corpus {csv} --vocab-size 0 --out {tmp}/t", "vocab_size 0"),
    case("tok-negative-min-frequency", "tokenizer train --corpus {csv} --min-frequency -1 --out {tmp}/t",
         "min_frequency -1"),
    case("tok-out-exists", "tokenizer train --corpus {csv} --vocab-size 300 --out {tmp}/t",
         "already contains a tokenizer", setup=copy("tok", "t")),
    case("tok-out-under-a-file", "tokenizer train --corpus {csv} --vocab-size 300 --out {tmp}/f/t",
         "is a file, not a directory", files={"f": "a file"}),
    # prepare
    case("prep-garbage-tokenizer-json", "prepare --corpus {csv} --tokenizer {tmp}/t --out {tmp}/s",
         "not a valid tokenizer.json", files={"t/tokenizer.json": "{not json"}),
    case("prep-bad-tokenizer-config", "prepare --corpus {csv} --tokenizer {tmp}/t --out {tmp}/s",
         "tokenizer_config.json is not valid JSON", setup=bad_tokenizer_config),
    case("prep-csv-unclosed-quote", "prepare --corpus {tmp}/c.csv --tokenizer {tok} --out {tmp}/s",
         "bad CSV quoting on line 3", files={"c.csv": 'text,label\n"an open quote,a\nnext,b\n'}),
    case("prep-csv-missing-text-column", "prepare --corpus {tmp}/c.csv --tokenizer {tok} --out {tmp}/s",
         "no column 'text'", "columns: body, label", files={"c.csv": "body,label\nsome words,a\n"}),
    case("prep-empty-csv", "prepare --corpus {tmp}/c.csv --tokenizer {tok} --out {tmp}/s",
         "c.csv is empty: it has no header row", "write a header row", files={"c.csv": b""}),
    case("prep-jsonl-bad-json", "prepare --corpus {tmp}/c.jsonl --tokenizer {tok} --out {tmp}/s",
         "bad JSON on line 2", files={"c.jsonl": '{"text": "fine"}\n{"text": \n'}),
    case("prep-jsonl-not-object", "prepare --corpus {tmp}/c.jsonl --tokenizer {tok} --out {tmp}/s",
         "line 1", "not a JSON object", files={"c.jsonl": "[1, 2]\n"}),
    case("prep-jsonl-text-is-object", "prepare --corpus {tmp}/c.jsonl --tokenizer {tok} --out {tmp}/s",
         "column 'text' holds a dict", files={"c.jsonl": '{"text": {"a": 1}}\n'}),
    case("prep-parquet-garbage", "prepare --corpus {tmp}/c.parquet --tokenizer {tok} --out {tmp}/s",
         "not a readable Parquet file", files={"c.parquet": b"PAR1 not really parquet"}),
    case("prep-huge-single-line", "prepare --corpus {tmp}/c.txt --tokenizer {tok} --out {tmp}/s",
         "split has no text", files={"c.txt": "word " * 60_000 + "\n"}),
    case("prep-out-exists", "prepare --corpus {csv} --tokenizer {tok} --out {tmp}/s", "already exists",
         setup=copy("shards", "s")),
    # data show
    case("data-tsv-extra-field", "data show {tmp}/d.tsv", "line 2", "3 fields but the header has 2",
         files={"d.tsv": "text\tlabel\nsome text\ta\tstray\n"}),
    case("data-conll-binary", "data show {tmp}/d.conll", "binary", files={"d.conll": b"EU\x00B-ORG\n" * 9}),
    case("data-squad-not-json", "data show {tmp}/d.json", "not valid JSON", files={"d.json": "{squad"}),
    case("data-hf-offline", "data show hf:imdb", "hf:imdb", env={"HF_HUB_OFFLINE": "1"}),
    # pretrain: config typos and out-of-range values
    case("pt-negative-lr", "pretrain --shards {shards} --out {tmp}/r --lr -1", "train.lr must be in [0, 1]"),
    case("pt-zero-batch", "pretrain --shards {shards} --out {tmp}/r --batch-size 0", "train.batch_size"),
    case("pt-negative-steps", "pretrain --shards {shards} --out {tmp}/r --steps -3", "train.steps"),
    case("pt-dropout-above-one", "pretrain --shards {shards} --out {tmp}/r model.hidden_dropout_prob=2",
         "model.hidden_dropout_prob", "fraction"),
    case("pt-steps-not-a-number", "pretrain --shards {shards} --out {tmp}/r train.steps=ten",
         "train.steps", "expects int"),
    case("pt-yaml-section-typo", "pretrain --shards {shards} --out {tmp}/r --config {tmp}/c.yaml",
         "unknown config key 'trian'", "did you mean", files={"c.yaml": "trian:\n  lr: 0.001\n"}),
    case("pt-config-not-utf8", "pretrain --shards {shards} --out {tmp}/r --config {tmp}/c.yaml",
         "not UTF-8", files={"c.yaml": "train:\n  lr: 0.001 # caf\xe9\n".encode("latin-1")}),
    case("pt-yaml-syntax", "pretrain --shards {shards} --out {tmp}/r --config {tmp}/c.yaml",
         "not valid YAML at line 2", files={"c.yaml": "train: [1,\n"}),
    case("pt-heads-do-not-divide", f"pretrain --shards {{shards}} --out {{tmp}}/r {TINY} "
         "model.hidden_size=32 model.num_attention_heads=3", "not divisible"),
    case("pt-shards-dir-is-not-shards", "pretrain --shards {tok} --out {tmp}/r", "no token shards"),
    case("pt-shards-truncated", f"pretrain --shards {{tmp}}/s --out {{tmp}}/r {TINY}", "truncated",
         setup=copy("shards", "s", half, "train-00000.bin")),
    # pretrain data.max_tokens: none, fewer than one window, fewer than one batch of windows
    case("pt-max-tokens-zero", "pretrain --shards {shards} --out {tmp}/r data.max_tokens=0",
         "data.max_tokens must be at least 1, got 0"),
    case("pt-max-tokens-negative", "pretrain --shards {shards} --out {tmp}/r data.max_tokens=-5",
         "data.max_tokens must be at least 1, got -5"),
    case("pt-max-tokens-below-a-window", f"pretrain --shards {{shards}} --out {{tmp}}/r {TINY} "
         "data.max_tokens=10", "data.max_tokens=10 is too few tokens", "fewer than one sequence of 64"),
    case("pt-max-tokens-below-a-batch", f"pretrain --shards {{shards}} --out {{tmp}}/r {TINY} "
         "data.max_tokens=200", "gives 3 training windows of 62 tokens, fewer than one batch of 4",
         "data.max_tokens=248 or more"),
    # pretrain --init: damaged checkpoints, another family
    case("pt-init-truncated-safetensors", INIT, "model.safetensors is damaged", setup=model(damage=half),
         proc=True),
    case("pt-init-garbage-safetensors", INIT, "model.safetensors is damaged", setup=model(damage=garbage)),
    case("pt-init-config-not-json", INIT, "config.json is not valid JSON",
         setup=model(damage=half, name="config.json")),
    case("pt-init-other-family", "pretrain --shards {shards} --init {pre} --arch gpt2 --objective clm "
         "--out {tmp}/r", "holds a bert model but arch is gpt2"),
    case("pt-out-under-a-file", f"pretrain --shards {{shards}} --out {{tmp}}/f/r {TINY}",
         "is a file, not a directory", files={"f": "a file"}),
    case("pt-resume-config-damaged", "pretrain --resume {tmp}/r", "not valid YAML",
         setup=copy("pre", "r", lambda p: p.write_text("train: [\n"), "config.yaml")),
    # finetune
    case("ft-init-truncated-safetensors", f"finetune --init {{tmp}}/m --dataset {{csv}} --out {{tmp}}/o {FT}",
         "model.safetensors is damaged", setup=model(damage=half)),
    case("ft-tokenizer-vocab-mismatch", f"finetune --init {{tmp}}/m --dataset {{csv}} --out {{tmp}}/o {FT}",
         "has 800 tokens, the model 1000", setup=swap_tokenizer),
    case("ft-max-length-above-positions", "finetune --init {pre} --dataset {csv} --out {tmp}/o "
         "--max-length 4096", "task.max_length 4096 exceeds the model's 128 positions"),
    case("ft-negative-epochs", "finetune --init {pre} --dataset {csv} --out {tmp}/o --epochs -1",
         "epochs must be above 0"),
    case("ft-strategy-typo", f"finetune --init {{pre}} --dataset {{csv}} --out {{tmp}}/o {FT} "
         "--strategy lorra", "unknown finetuning strategy 'lorra'", "did you mean lora"),
    case("ft-task-typo", "finetune --init {pre} --dataset {csv} --out {tmp}/o --task clasification",
         "unknown task 'clasification'"),
    case("ft-seeds-not-numbers", "finetune --init {pre} --dataset {csv} --out {tmp}/o --seeds one,two",
         "config key 'seeds' expects int"),
    case("ft-one-label", f"finetune --init {{pre}} --dataset {{tmp}}/d.csv --out {{tmp}}/o {FT}",
         "at least 2 labels", files={"d.csv": "text,label\n" + lines("text number %d,same\n")}),
    case("ft-missing-label-column", "finetune --init {pre} --dataset {csv} --out {tmp}/o "
         "--label-column sentiment", "needs a labeled dataset", "data.label_column"),
    case("ft-label-is-a-list", f"finetune --init {{pre}} --dataset {{tmp}}/d.jsonl --out {{tmp}}/o {FT}",
         "column 'label' holds a list", files={"d.jsonl": lines('{"text": "t %d", "label": [{"x": 1}]}\n')}),
    case("ft-regression-label-not-number", f"finetune --init {{pre}} --dataset {{csv}} --out {{tmp}}/o {FT} "
         "task.problem=regression", "the label 'a' is not a number"),
    case("ft-choice-label-not-index", f"finetune --init {{pre}} --task multiple_choice "
         f"--dataset {{tmp}}/d.jsonl --out {{tmp}}/o {FT}", "has label 'x' but 2 choices",
         files={"d.jsonl": CHOICES}),
    case("ft-csv-extra-field", f"finetune --init {{pre}} --dataset {{tmp}}/d.csv --out {{tmp}}/o {FT}",
         "line 2", "3 fields", files={"d.csv": "text,label\n" + lines("text %d, with a comma,a\n")}),
    case("ft-csv-text-after-quote", f"finetune --init {{pre}} --dataset {{tmp}}/d.csv --out {{tmp}}/o {FT}",
         "bad CSV quoting on line 2", files={"d.csv": 'text,label\n"quoted" then not,a\n'}),
    case("ft-out-exists", f"finetune --init {{pre}} --dataset {{csv}} --out {{tmp}}/o {FT}", "already exists",
         setup=copy("ft", "o")),
    # evaluate, predict
    case("ev-pretrained-run", "evaluate {pre} --data {csv}", "holds a pretrained model, not a finetuned one"),
    case("ev-unseen-label", "evaluate {ft} --data {tmp}/d.csv --split all", "not trained on: zzz",
         files={"d.csv": "text,label\nsome text,a\nmore text,zzz\n"}),
    case("ev-garbage-weights", "evaluate {tmp}/m --data {csv}", "model.safetensors is damaged",
         setup=model("ft", garbage)),
    case("ev-config-not-an-object", "evaluate {tmp}/m --data {csv}",
         "config.json does not hold a JSON object",
         setup=model("ft", lambda p: p.write_text("[1, 2]"), "config.json")),
    case("pd-bad-json-keeps-old-output", "predict {ft} --input {tmp}/in.txt --out {tmp}/old.jsonl",
         "bad JSON on line 2", files={"in.txt": 'fine text\n{"text": \n', "old.jsonl": '{"label": "a"}\n'},
         proc=True),
    case("pd-text-not-a-string", "predict {ft} --input {tmp}/in.txt", "'text' must be a string",
         files={"in.txt": '{"text": ["two", "texts"]}\n'}),
    case("pd-binary-input", "predict {ft} --input {tmp}/in.txt", "binary",
         files={"in.txt": b"\x00\x01" * 99}),
    # embed, probe
    case("em-max-length-above-positions", "embed {pre} --data {csv} --max-length 5000 --out {tmp}/e.npy",
         "--max-length 5000 exceeds the model's 128 positions"),
    case("em-layer-out-of-range", "embed {pre} --data {csv} --layer 99 --out {tmp}/e.npy", "layer 99"),
    case("em-plot-not-a-picture", "embed {pre} --data {csv} --word the --plot {tmp}/x.csv --out {tmp}/e.npy",
         "--plot", "x.csv is not the name of a picture file", "--plot x.png"),
    case("em-empty-word", "embed {pre} --data {csv} --word '' --out {tmp}/e.npy", "--word is empty"),
    case("em-out-under-a-file", "embed {pre} --data {csv} --out {tmp}/f/e.npy", "is a file, not a directory",
         files={"f": "a file"}),
    case("fm-bias-finetuned-run", "fill-mask {ft} --bias --out {tmp}/b.json",
         "holds a finetuned classification model", "the pretrained run it was finetuned from"),
    case("fm-finetuned-run", "fill-mask {ft} 'a [MASK] text'", "holds a finetuned classification model"),
    case("pb-one-label", "probe {pre} --data {tmp}/d.csv --out {tmp}/p --no-scratch", "needs 2 labels",
         files={"d.csv": "text,label\n" + lines("text number %d,same\n")}),
    # generate, prompt: a finetuned encoder is another family; a masked LM writes, but not by beam search
    case("gen-encoder-run", "generate {ft} --prompt hello", "(model_type bert), which does not generate"),
    case("gen-mlm-beam", "generate {pre} --prompt hello --strategy beam", "beam search is not available"),
    case("gen-top-p-above-one", "generate {pre} --prompt hello top_p=2", "top_p must be in (0, 1]"),
    case("prompt-encoder-run", "prompt {pre} --dataset {csv}", "does not generate text"),
    # import, export
    case("im-hub-offline", "import hf:bert-base-uncased --out {tmp}/i", "HF_HUB_OFFLINE is set",
         env={"HF_HUB_OFFLINE": "1"}, proc=True),
    case("im-unknown-model-type", "import {tmp}/h --out {tmp}/i", "model_type 'llama'",
         files={"h/config.json": '{"model_type": "llama"}'}),
    case("im-garbage-safetensors", "import {tmp}/h --out {tmp}/i", "model.safetensors is damaged",
         files={"h/config.json": HF_CONFIG, "h/model.safetensors": b"\xff" * 64}),
    case("im-config-not-json", "import {tmp}/h --out {tmp}/i", "config.json is not valid JSON",
         files={"h/config.json": "model_type: bert"}),
    case("ex-truncated-safetensors", "export {tmp}/m --out {tmp}/x", "model.safetensors is damaged",
         setup=model(damage=half)),
    case("ex-out-exists", "export {pre} --out {tmp}/x", "already exists", files={"x/keep.txt": "keep"}),
    # word2vec
    case("w2v-negative-lr", "word2vec train --corpus {csv} --out {tmp}/w --lr -1", "lr must be above 0"),
    case("w2v-empty-vectors-file", "word2vec evaluate {tmp}/v.txt", "expected the header",
         files={"v.txt": b""}),
    case("w2v-vectors-not-utf8", "word2vec similar cat --vectors {tmp}/v.txt", "line 3", "not UTF-8",
         files={"v.txt": b"2 2\ncat 1 0\nd\xf6g 0 1\n"}),
    case("w2v-unknown-word", "word2vec similar zebra --vectors {tmp}/v.txt",
         "'zebra' is not in the vocabulary", files={"v.txt": "2 2\ncat 1 0\ndog 0 1\n"}),
    case("w2v-export-under-a-file", "word2vec export {tmp}/v.txt --out {tmp}/f/v.bin", "is a file",
         files={"v.txt": "2 2\ncat 1 0\ndog 0 1\n", "f": "a file"}),
    # sizes, counts and seeds: checked where the config is read, as a class (issue 38)
    case("pt-negative-width", f"pretrain --shards {{shards}} --out {{tmp}}/r {TINY} model.hidden_size=-4 "
         "model.num_attention_heads=2", "model.hidden_size must be at least 1, got -4"),
    case("pt-billion-layers", f"pretrain --shards {{shards}} --out {{tmp}}/r {TINY} "
         "model.num_hidden_layers=1000000000", "model.num_hidden_layers must be at most 4096"),
    case("pt-seed-too-large", f"pretrain --shards {{shards}} --out {{tmp}}/r {TINY} train.seed={HUGE}",
         "train.seed must be at most 4294967295"),
    case("ft-aux-negative-batch", f"finetune --init {{pre}} --dataset {{csv}} --out {{tmp}}/o {FT} "
         "aux.objectives=mlm aux.batch_size=-1", "aux.batch_size must be 0 or more, got -1"),
    case("ft-seed-too-large", f"finetune --init {{pre}} --dataset {{csv}} --out {{tmp}}/o {FT} "
         f"--seeds 1,{HUGE}", "seeds must be at most 4294967295"),
    case("gen-seed-too-large", f"generate {{pre}} --prompt hello --seed {HUGE}", "argument --seed",
         "must be from 0 to 4294967295"),
    case("fm-seed-too-large", f"fill-mask {{pre}} 'a [MASK] text' --random-init --seed {HUGE}",
         "argument --seed", "must be from 0 to 4294967295"),
    case("fm-top-k-too-large", f"fill-mask {{pre}} 'a [MASK] text' --top-k {HUGE}", "argument --top-k"),
    case("serve-port-out-of-range", "serve {ft} --port 99999", "argument --port", "1 to 65535"),
    case("im-negative-layers", "import {tmp}/h --out {tmp}/i", "config.json: num_hidden_layers must be at "
         "least 1, got -2", setup=hf_export(num_hidden_layers=-2)),
    case("im-float-layers", "import {tmp}/h --out {tmp}/i",
         "num_hidden_layers must be a whole number, got 2.5", setup=hf_export(num_hidden_layers=2.5)),
    case("im-billion-layers", "import {tmp}/h --out {tmp}/i", "num_hidden_layers must be at most 4096",
         setup=hf_export(num_hidden_layers=10**9)),
    case("im-huge-width", "import {tmp}/h --out {tmp}/i", "hidden_size must be at most 16777216",
         setup=hf_export(hidden_size=2**40)),
    case("im-layers-as-text", "import {tmp}/h --out {tmp}/i", "num_attention_heads must be a whole number",
         setup=hf_export(num_attention_heads="4")),
    case("pt-out-dot-overwrite", f"pretrain --shards {{shards}} --out . --overwrite {TINY}",
         "--out . is the working directory", files={"notes.txt": "mine"}),
    case("pt-out-dotdot-overwrite", f"pretrain --shards {{shards}} --out .. --overwrite {TINY}",
         "--out .. holds the working directory"),
    case("ex-out-dot-overwrite", "export {pre} --out . --overwrite", "--out . is the working directory",
         files={"notes.txt": "mine"}),
]  # fmt: skip
