"""DeBERTa as the paper trains it, from the command line: the deberta-mini preset (at a tiny size) pretrained
with the enhanced mask decoder (mlm.emd) and SiFT, fill-mask through the decoder, finetuned with SiFT; the
transformers export leaves the decoder out with one warning line."""

import json

import torch
import transformers
import yaml
from safetensors.torch import load_file

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.hub import batch
from tests.helpers.shapes import TINY_MODEL
from warmstart.checkpoints.load import load_encoder
from warmstart.objectives.mlm import MLMHead
from warmstart.tokenization.tokenizer import Tokenizer

PRETRAIN = ["train.batch_size=8", "train.eval_every=6", "train.eval_batches=2", "train.progress=false",
            "train.save_every=0", "train.lr=2e-3", "mlm.emd=true"]  # fmt: skip
FINETUNE = ["train.progress=false", "task.max_length=48", "train.batch_size=16", "evals_per_epoch=1"]


def pretrain(capsys, shards, out, *extra):
    argv = ["pretrain", "--shards", shards, "--out", out, "--steps", "6", *TINY_MODEL, *PRETRAIN, *extra]
    return run(capsys, *argv)


def test_deberta_pretrains_with_emd_and_sift_and_finetunes_with_sift(
    small_shards, rt_small, tmp_path, capsys
):
    run_dir = tmp_path / "deberta"
    code, _, err = pretrain(capsys, small_shards, run_dir, "--preset", "deberta-mini", "sift.weight=1")
    assert code == 0, err
    config = json.loads((run_dir / "final" / "config.json").read_text())
    assert config["relative_attention"] and not config["position_biased_input"]
    assert config["warmstart"]["emd"] == {"passes": 2}
    train = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in train if r["split"] == "validation"] == [0, 6]
    code, out, err = run(capsys, "fill-mask", run_dir, "The river flows into the [MASK].", "--json")
    assert code == 0, err
    assert len(json.loads(out)["masks"][0]) == 5

    ft = tmp_path / "ft"
    argv = [
        "finetune",
        "--init",
        run_dir,
        "--dataset",
        rt_small,
        "--out",
        ft,
        "--lr",
        "1e-3",
        "--epochs",
        "1",
    ]
    code, _, err = run(capsys, *argv, "sift.weight=3", *FINETUNE)
    assert code == 0, err
    assert yaml.safe_load((ft / "config.yaml").read_text())["sift"]["weight"] == 3.0
    metrics = json.loads((ft / "test_metrics.json").read_text())
    assert 0 <= metrics["test"]["accuracy"] <= 1 and metrics["steps"] >= 1


def test_export_leaves_the_decoder_out_with_a_warning_and_deberta_export_is_refused_as_before(
    small_shards, wiki_extracts, tmp_path, capsys
):
    bert = tmp_path / "bert-emd"
    assert pretrain(capsys, small_shards, bert)[0] == 0  # BERT's absolute input positions, plus the decoder
    code, _, err = run(capsys, "export", bert, "--out", tmp_path / "hf")
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "enhanced mask decoder" in warnings[0]
    # the export is the encoder and its head as finetuning reads them: the last layer, no decoder
    encoder, _, _ = load_encoder(bert)
    c = encoder.config
    head = MLMHead(c.hidden_size, c.vocab_size, c.hidden_act, c.layer_norm_eps, encoder.word_embeddings)
    state = load_file(str(bert / "final" / "model.safetensors"))
    head.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("head.")})
    hf = transformers.AutoModelForMaskedLM.from_pretrained(tmp_path / "hf").eval()
    ids, mask, types = batch(Tokenizer.load(bert / "final"), wiki_extracts[:3])
    with torch.no_grad():
        ours = head(encoder.eval()(ids, mask, types))
        theirs = hf(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
    keep = mask.bool()
    torch.testing.assert_close(theirs[keep], ours[keep], atol=2e-4, rtol=1e-4)

    deberta = tmp_path / "deberta"
    assert pretrain(capsys, small_shards, deberta, "--preset", "deberta-mini")[0] == 0
    code, _, err = run(capsys, "export", deberta, "--out", tmp_path / "hf2")
    assert_one_line_error(code, err, "relative_attention")
