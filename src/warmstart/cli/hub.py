"""`warmstart import` and `warmstart export`: transformers checkpoints in, warmstart models out."""

from __future__ import annotations

from warmstart.cli.common import head_flag


def _import(a):
    from warmstart.errors import WarmstartError

    elmo, vectors = str(a.src).startswith("elmo:"), str(a.src).startswith("vectors:")
    if (elmo or vectors) and a.generator is not None:
        raise WarmstartError("--generator goes with an ELECTRA discriminator, not with " + a.src, "drop it")
    if not elmo and a.vocab is not None:
        raise WarmstartError("--vocab goes with an ELMo release (elmo:OPTIONS.json:WEIGHTS.hdf5)", "drop it")
    if elmo:
        from warmstart.hub.elmo_release import import_elmo

        out = import_elmo(a.src, a.out, a.vocab, overwrite=a.overwrite)
    elif vectors:
        from warmstart.hub.static_vectors import import_vectors

        out = import_vectors(a.src, a.out, overwrite=a.overwrite)
    else:
        from warmstart.hub.convert import import_hf

        out = import_hf(a.src, a.out, overwrite=a.overwrite, generator=a.generator)
    print(f"imported {a.src} into {out} (use it with --init)")


def _export(a):
    from warmstart.errors import WarmstartError
    from warmstart.hub.convert import export_hf
    from warmstart.hub.runs import choose

    chosen = choose(a.run, a.checkpoint).one_task(a.head)  # refused here, in one line, before any write
    if a.to == "hf" and a.quantize:
        raise WarmstartError("--quantize goes with --to onnx or --to torch", "add one, or drop --quantize")
    if a.to != "onnx" and (a.optimize or a.calibrate is not None):
        raise WarmstartError("--optimize and --calibrate go with --to onnx", "add --to onnx, or drop them")
    if a.to == "torch":
        from warmstart.deploy.torch_int8 import export_torch_int8

        if a.quantize != "int8":
            raise WarmstartError("--to torch writes int8 weights", "add --quantize int8 (fp32: --to hf)")
        out, measured = export_torch_int8(a.run, a.out, a.overwrite, a.checkpoint, a.head)
        print(
            f"exported {chosen.says()} to {out} (torch, int8; scores within "
            f"{measured['max_abs_difference']:.1e} of fp32's on a sample; predict, evaluate, serve and "
            "warmstart.load take it)"
        )
        return
    if a.to == "onnx":
        from warmstart.deploy.onnx_export import export_onnx

        out, measured = export_onnx(
            a.run, a.out, a.overwrite, a.checkpoint, a.quantize, a.optimize, a.calibrate, a.head
        )
        gap, how = measured["max_abs_difference"], "static" if a.calibrate else "dynamic"
        precision = f"int8 {how}" if a.quantize else "fp32"
        print(
            f"exported {chosen.says()} to {out} (ONNX, {precision}; outputs within {gap:.1e} of "
            "PyTorch's on a sample; predict or embed, evaluate, serve and warmstart.load take it)"
        )
        return
    out = export_hf(a.run, a.out, a.overwrite, a.checkpoint, a.adapter, a.head)
    extra = ", PEFT adapters in adapter/ on base/" if (out / "adapter").is_dir() else ""
    print(
        f"exported {chosen.says()} to {out} (transformers: AutoModel*.from_pretrained({str(out)!r}){extra})"
    )


def add_import(sub) -> None:
    from warmstart.hub.families import SUPPORTED  # the families import reads: the help cannot go stale

    im = sub.add_parser(
        "import",
        help=f"a transformers checkpoint ({', '.join(SUPPORTED)}), an ELMo release or word vectors as a "
        "model",
    )
    im.add_argument(
        "src",
        help="a local transformers model directory, a hub id (needs huggingface_hub), or "
        "elmo:OPTIONS.json:WEIGHTS.hdf5: an original ELMo release (bilm-tf / AllenNLP; with --vocab), or "
        "vectors:RUN_OR_FILE: static word vectors (a word2vec run, a vectors file, glove) under a task model",
    )
    im.add_argument(
        "--out", required=True, help="the warmstart model directory to write (use it with --init)"
    )
    im.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    im.add_argument(
        "--generator",
        metavar="SRC",
        help="ELECTRA: the generator (ElectraForMaskedLM) beside the discriminator SRC, giving the whole "
        "electra run (default: SRC/generator when there is one)",
    )
    im.add_argument(
        "--vocab",
        metavar="VOCAB.txt",
        help="ELMo: the release's vocabulary file, one word per line (the words the model reads)",
    )
    im.set_defaults(func=_import)


def add_export(sub) -> None:
    ex = sub.add_parser(
        "export", help="a warmstart run's model as a transformers directory, an ONNX graph or int8 weights"
    )
    ex.add_argument(
        "run",
        help="run directory (finetuned: its best model, the one predict, evaluate and test_metrics.json "
        "use; pretrained: its final model) or a model/checkpoint directory",
    )
    ex.add_argument(
        "--to", default="hf", choices=["hf", "onnx", "torch"],
        help="format: hf (transformers from_pretrained), onnx (a finetuned model's scores or an encoder's "
        "sentence vectors as a graph for onnxruntime), or torch (with --quantize int8: torch.ao's dynamic "
        "int8 of a finetuned model); predict, evaluate, serve, embed and warmstart.load take onnx and torch",
    )  # fmt: skip
    ex.add_argument(
        "--quantize", choices=["int8"],
        help="--to onnx or torch: int8 weights (dynamic quantization: activations quantized per batch)",
    )  # fmt: skip
    ex.add_argument(
        "--calibrate", type=int, metavar="N",
        help="--to onnx --quantize int8: static quantization, activations calibrated on the run's first N "
        "training rows",
    )  # fmt: skip
    ex.add_argument(
        "--optimize",
        action="store_true",
        help="--to onnx: BERT-style attention as onnxruntime's fused Attention node, and its graph "
        "optimizations saved (the graph then runs in onnxruntime only)",
    )
    ex.add_argument("--out", required=True, help="output directory")
    ex.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    ex.add_argument(
        "--checkpoint",
        metavar="NAME",
        help="the run's checkpoint to export: best, final or step-N (default: best for a finetuned run, else "
        "final)",
    )
    ex.add_argument(
        "--no-adapter",
        dest="adapter",
        action="store_false",
        help="a LoRA run: export the merged model only, not also its adapters in PEFT's format (adapter/ and "
        "the --init model as base/)",
    )
    head_flag(ex)
    ex.set_defaults(func=_export)
