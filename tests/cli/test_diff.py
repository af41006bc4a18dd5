"""`warmstart diff RUN_A RUN_B` and the finetune report's weight-change section, on tiny real runs: a layer
perturbed by hand is the only row that moves, by the amount computed here; a run against itself is all zeros;
two architectures are one line and exit 2; the report shows the change from the run's --init, or says the init
is gone."""

import json
import math
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.hub import finetune_run, hf_dir


@pytest.fixture(scope="module")
def finetuned(tiny_pretrained, tmp_path_factory):
    """One epoch on 64 real rotten-tomatoes snippets from the tiny pretrained BERT: a run directory."""
    return finetune_run(tiny_pretrained, "rotten-tomatoes", tmp_path_factory.mktemp("ft") / "run")


def perturbed_copy(run_dir, out, name: str, scale: float = 0.01):
    """RUN/final copied to ``out`` with seeded noise added to the tensor ``name``: (out, the noise's norm
    as stored, the norm of every tensor of that layer)."""
    shutil.copytree(run_dir / "final", out)
    state = load_file(str(out / "model.safetensors"))
    torch.manual_seed(5)
    before = state[name].clone()
    state[name] = before + scale * torch.randn_like(before)
    save_file(state, str(out / "model.safetensors"))
    layer = name.split(".")[2]
    own = [v for k, v in state.items() if k.startswith(f"encoder.layers.{layer}.") and k != name] + [before]
    norm = math.sqrt(sum(float(t.double().square().sum()) for t in own))
    return out, float((state[name].double() - before.double()).norm()), norm


def test_a_perturbed_layer_is_the_only_row_that_moves(tiny_pretrained, tmp_path, capsys):
    name = "encoder.layers.0.attn.qkv.weight"
    model, moved, layer_norm = perturbed_copy(tiny_pretrained, tmp_path / "perturbed", name)
    code, out, _ = run(capsys, "diff", tiny_pretrained, model, "--json")
    assert code == 0
    result = json.loads(out)
    assert result["a"] == str(tiny_pretrained / "final") and result["b"] == str(model)
    rows = {g["name"]: g for g in result["groups"]}
    assert rows["layer 0"]["relative"] == pytest.approx(moved / layer_norm, rel=1e-9)
    assert rows["layer 0"]["blocks"]["feed-forward"] == 0 and rows["layer 0"]["blocks"]["attention"] > 0
    assert [n for n, g in rows.items() if g["relative"] != 0] == ["layer 0"]
    code, out, _ = run(capsys, "diff", tiny_pretrained, model)
    table = {line.split("  ")[0].strip(): line for line in out.splitlines()}
    assert "█" in table["layer 0"] and "█" not in table["layer 1"] and "█" not in table["embeddings"]


def test_a_run_against_its_copy_changes_by_zero(tiny_pretrained, tmp_path, capsys):
    shutil.copytree(tiny_pretrained, tmp_path / "copy")
    code, out, _ = run(capsys, "diff", tiny_pretrained, tmp_path / "copy", "--json")
    assert code == 0
    groups = json.loads(out)["groups"]
    assert [g["name"] for g in groups] == ["embeddings", "layer 0", "layer 1", "pooler", "head"]  # MLM head
    assert all(g["relative"] == 0 and g["norm_change"] == 0 and g["norm_a"] > 0 for g in groups)


def test_finetuned_against_pretrained_with_a_plot(tiny_pretrained, finetuned, tmp_path, capsys):
    png = tmp_path / "plots" / "change.png"
    code, out, _ = run(capsys, "diff", tiny_pretrained, finetuned, "--plot", png)
    assert code == 0 and png.read_bytes()[:4] == b"\x89PNG"
    assert f"B: {finetuned / 'best'}" in out  # a finetuned run: the checkpoint predict and evaluate load
    assert "only in A head (5 tensors); only in B classifier (2 tensors)" in out
    assert f"plot: {png}" in out


def test_two_architectures_are_one_line(tiny_pretrained, small_tokenizer, tmp_path, capsys):
    import transformers

    config = transformers.BertConfig(vocab_size=1000, hidden_size=32, num_hidden_layers=3,
                                     num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=128)  # fmt: skip
    deeper = hf_dir(tmp_path / "hf", transformers.BertForMaskedLM(config), small_tokenizer)
    code, _, err = run(capsys, "diff", tiny_pretrained, deeper)
    assert_one_line_error(code, err, "not one architecture", "layers.2.")
    code, _, err = run(capsys, "diff", tiny_pretrained, tiny_pretrained, "--plot", tmp_path / "x.pdf")
    assert_one_line_error(code, err, "PNG")


def report_section(md: str) -> str:
    return md.split("## Weight change\n", 1)[1].split("\n## ", 1)[0]


def test_the_finetune_report_shows_the_change_from_its_init(tiny_pretrained, finetuned, tmp_path, capsys):
    out = tmp_path / "r" / "ft.html"
    assert run(capsys, "report", finetuned, "--out", out)[0] == 0
    section = report_section(out.with_suffix(".md").read_text())
    assert "](ft_weight_change.png)" in section and (tmp_path / "r" / "ft_weight_change.png").is_file()
    code, got, _ = run(capsys, "diff", tiny_pretrained, finetuned, "--json")
    for g in json.loads(got)["groups"]:
        assert f"| {g['name']} | {g['params']:,} | {g['relative']:.4g} |" in section
    assert "only in the finetuned model classifier (2 tensors)" in section


def test_the_report_says_when_the_init_is_gone(tiny_pretrained, tmp_path, capsys):
    init = tmp_path / "init"
    shutil.copytree(tiny_pretrained, init)
    ft = finetune_run(init, "rotten-tomatoes", tmp_path / "ft")
    shutil.rmtree(init)
    assert run(capsys, "report", ft)[0] == 0
    section = report_section((ft / "report.md").read_text())
    assert f"({init}) is no longer on disk" in section and "![" not in section
