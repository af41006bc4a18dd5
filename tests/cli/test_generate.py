"""`warmstart generate`: text from a small gpt2 run, streamed for one prompt; bad requests are one line on
stderr with exit code 2."""

import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.config import all_keys
from warmstart.generation.decode import GenerationConfig


@pytest.fixture(scope="module")
def gpt2_run(wiki_extracts, tmp_path_factory):
    """A byte-level BPE tokenizer on 300 real extracts and a gpt2-tiny (64 positions) trained 10 steps."""
    from warmstart.commands.pretrain import pretrain
    from warmstart.data.shard_writer import prepare_shards
    from warmstart.tokenization.train import train_tokenizer

    root = tmp_path_factory.mktemp("gpt2")
    tok = train_tokenizer(wiki_extracts[:300], "bpe", 800, root / "tok", show_progress=False)
    splits = {"train": wiki_extracts[300:340], "validation": wiki_extracts[340:350]}
    prepare_shards(splits, tok, root / "shards", show_progress=False)
    overrides = ["train.progress=false", "train.batch_size=4", "data.seq_len=64", "model.n_positions=64",
                 "train.eval_batches=1"]  # fmt: skip
    flags = {"out": str(root / "run"), "data": {"shards": str(root / "shards")}, "train": {"steps": 10}}
    pretrain("gpt2-tiny", None, flags, overrides)
    return root / "run"


@pytest.fixture(scope="module", params=["t5", "bart"])
def encdec_run(request, wiki_extracts, tmp_path_factory):
    """A tiny T5 (unigram tokenizer with 20 sentinels, span corruption) or BART (bpe, denoising): 10 steps."""
    from warmstart.commands.pretrain import pretrain
    from warmstart.data.shard_writer import prepare_shards
    from warmstart.tokenization.train import train_tokenizer

    arch = request.param
    root = tmp_path_factory.mktemp(arch)
    kind, extra = ("unigram", {"sentinels": 20}) if arch == "t5" else ("bpe", {})
    tok = train_tokenizer(wiki_extracts[:300], kind, 800, root / "tok", show_progress=False, **extra)
    splits = {"train": wiki_extracts[300:340], "validation": wiki_extracts[340:350]}
    prepare_shards(splits, tok, root / "shards", show_progress=False)
    if arch == "t5":
        shape = ["model.d_kv=8", "model.d_ff=64", "model.num_layers=2", "model.num_heads=4"]
    else:
        shape = [f"model.{k}=2" for k in ("encoder_layers", "decoder_layers", "encoder_attention_heads",
                                          "decoder_attention_heads")]  # fmt: skip
        shape += ["model.encoder_ffn_dim=64", "model.decoder_ffn_dim=64", "model.max_position_embeddings=64"]
    overrides = ["train.progress=false", "train.batch_size=4", "data.seq_len=64", "train.eval_batches=1",
                 "model.d_model=32", *shape]  # fmt: skip
    flags = {"out": str(root / "run"), "data": {"shards": str(root / "shards")}, "train": {"steps": 10}}
    pretrain(f"{arch}-tiny", None, flags, overrides)
    return arch, root / "run"


def test_one_prompt_streams_the_prompt_and_its_continuation(capsys, gpt2_run):
    code, out, err = run(capsys, "generate", gpt2_run, "--prompt", "The city", "max_new_tokens=5")
    assert code == 0, err
    assert out.startswith("The city") and out.endswith("\n") and len(out) > len("The city\n")
    # the streamed text is the text printed for the same prompt in a (non-streamed) batch
    code, batch, err = run(capsys, "generate", gpt2_run, "--prompt", "The city", "--prompt", "The city",
                           "--max-new-tokens", "5")  # fmt: skip
    assert code == 0, err
    assert batch == out + out


def test_prompts_from_a_file_sampling_and_beam_search(capsys, gpt2_run, tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("The river\n\nIn 1990, the\n", encoding="utf-8")
    for opts in (["strategy=sample", "top_p=0.9", "--seed", "3"], ["--strategy", "beam", "num_beams=2"]):
        code, out, err = run(capsys, "generate", gpt2_run, "--file", prompts, "max_new_tokens=4", *opts)
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0].startswith("The river") and lines[-1].startswith("In 1990, the")
    code, again, _ = run(capsys, "generate", gpt2_run, "--file", prompts, "max_new_tokens=4", "--no-cache",
                         "--strategy", "beam", "num_beams=2")  # fmt: skip
    assert code == 0 and again == out


def test_encoder_decoder_runs_print_their_output(capsys, encdec_run):
    from warmstart.checkpoints.load import load_generator
    from warmstart.generation.decode import generate, prompt_ids

    arch, run_dir = encdec_run
    text = "The <extra_id_0> of the city"
    model, tok, config_json = load_generator(run_dir)
    new = generate(model, [prompt_ids(tok, text, model)], GenerationConfig(max_new_tokens=6),
                   eos_id=config_json["eos_token_id"], pad_id=config_json["pad_token_id"],
                   decoder_start_id=config_json["decoder_start_token_id"])[0]  # fmt: skip
    for flag, skip in (["--show-special"], False), ([], True):
        code, out, err = run(capsys, "generate", run_dir, "--prompt", text, "max_new_tokens=6", *flag)
        assert code == 0, err
        assert out == tok.decode(new, skip_special_tokens=skip) + "\n"  # the output only, not the prompt
        code, batch, err = run(capsys, "generate", run_dir, "--prompt", text, "--prompt", text,
                               "max_new_tokens=6", *flag)  # fmt: skip
        assert code == 0 and batch == out + out
    assert "<extra_id_" not in out


def test_help_lists_every_generation_key(capsys):
    with pytest.raises(SystemExit) as e:
        run(capsys, "generate", "--help")
    assert e.value.code == 0
    out = capsys.readouterr().out
    for key in all_keys(GenerationConfig):
        assert f"  {key} " in out


@pytest.mark.parametrize(
    "args,needles",
    [
        (["--prompt", "word " * 80], ["more than the model's context of 64", "shorten"]),
        (["--prompt", "word " * 25], ["exceed the model's context of 64", "lower max_new_tokens"]),
        (["--prompt", "The city", "max_length=2"], ["max_length 2", "set max_length above"]),
        (["--prompt", "The city", "strategy=nucleus"], ["strategy", "greedy, sample, beam"]),
        (["--prompt", "The city", "foo=1"], ["unknown config key 'foo'"]),
        (["--prompt", "The city", "max_tokens=3"], ["unknown config key 'max_tokens'", "max_new_tokens"]),
        (["--prompt", "The city", "strategy=sample", "temperature=0"], ["temperature must be above 0"]),
        (["--prompt", "The city", "top_k=many"], ["top_k", "expects int"]),
        ([], ["no prompt given", "--prompt"]),
        (["--file", "missing.txt"], ["no such input file"]),
    ],
)
def test_bad_requests_are_one_line_and_print_nothing(capsys, gpt2_run, args, needles):
    code, out, err = run(capsys, "generate", gpt2_run, *args)
    assert_one_line_error(code, err, *needles)
    assert out == ""


def test_a_bert_run_writes_with_its_mlm_head_and_only_it_takes_mlm_flags(capsys, tiny_pretrained, gpt2_run):
    code, out, err = run(capsys, "generate", tiny_pretrained, "--prompt", "The city", "max_new_tokens=3")
    assert code == 0 and out.startswith("The city"), err  # tests/cli/test_generate_mlm.py: the rest
    code, _, err = run(capsys, "generate", gpt2_run, "--prompt", "The city", "--mlm-sampling", "gibbs")
    assert_one_line_error(code, err, "are for masked-LM runs")
