"""What each command writes and reads, declared before it works (the output guard: warmstart.outputs).

Every flag whose value is written is named in ``OUTPUT_DESTS`` and every flag whose value is read in
``INPUT_DESTS``; a command's side files (written beside an output) and the files it writes into its input
by default are in ``SIDE``. tests/bad_inputs/test_output_guard.py walks every command of the parser: a
flag that writes and is not declared here fails it, so a new command cannot skip the guard."""

from __future__ import annotations

from pathlib import Path

OUTPUT_DESTS = ("out", "plot")  # flags whose value is a file or directory the command writes
INPUT_DESTS = (  # flags (and positionals) whose value may be a file or directory the command reads
    "run", "run_a", "run_b", "target", "vectors", "src", "data", "dataset", "name", "train_file",
    "validation_file", "test_file", "input", "corpus", "tokenizer", "shards", "init", "resume", "config",
    "generator", "vocab", "file", "space", "glue_dir",
)  # fmt: skip
NOT_PATHS = (  # string flags that are never a path (names, words, numbers, templates)
    "a", "b", "c", "arch", "checkpoint", "entailment_label", "fractions", "full_seeds", "host",
    "label_column", "layer", "mlm_sampling", "objective", "overrides", "pairs", "preset", "prompt", "seeds",
    "sense", "shots", "strategy", "target_column", "task", "tasks", "template", "text", "text_column",
    "text_pair_column", "texts", "word", "storage", "study_name", "pruner", "head",
)  # fmt: skip
REPORT_PLOTS = (  # report/run_report.py plot_path(out, NAME): OUT_NAME.png (+ .svg, .pdf) beside the HTML
    "confusion", "convergence", "expected_max", "fractions", "joint", "pretraining", "projection", "slices",
    "stability", "training", "validation", "weight_change",
)  # fmt: skip
IMPORT_PREFIXES = ("elmo:", "vectors:")  # `import elmo:OPTIONS.json:WEIGHTS.hdf5`, `import vectors:RUN`


def _embed(a) -> tuple[dict, tuple]:
    if getattr(a, "word", None) is None:
        return {}, ()
    out = Path(a.out)
    side = {"--out (its sentences, OUT.json)": out.with_suffix(".json")}
    if a.plot is not None:
        side["--plot"] = Path(a.plot) if a.plot else out.with_suffix(".png")
    return side, ()


def _report(a) -> tuple[dict, tuple]:
    def files(html: Path) -> dict:
        plots = {
            f"--out (its plot {html.stem}_{n}.{ext})": html.with_name(f"{html.stem}_{n}.{ext}")
            for n in REPORT_PLOTS
            for ext in ("png", "svg", "pdf")
        }
        return {"--out": html, "--out (its .md beside it)": html.with_suffix(".md"), **plots}

    default = Path(a.target) / "report.html"
    return files(Path(a.out) if a.out else default), tuple(files(default).values())


def _fill_mask(a) -> tuple[dict, tuple]:
    if not a.bias:
        return {}, ()
    default = Path(a.run) / "bias_probe.json"
    return {"--out": Path(a.out) if a.out else default}, (default,)


def _debias(a) -> tuple[dict, tuple]:
    out = Path(a.out)
    side = {"--out (its figures, OUT.debias.json)": out.with_suffix(".debias.json")}
    if out.suffix.lower() == ".npy":
        side["--out (its words, OUT.vocab.txt)"] = out.with_suffix(".vocab.txt")
    return side, ()


SIDE = {  # command -> args -> ({what: extra output}, paths it may write again inside its input)
    "embed": _embed,
    "report": _report,
    "fill-mask": _fill_mask,
    "word2vec debias": _debias,
}


def _paths(value) -> list[str]:
    values = value if isinstance(value, (list, tuple)) else [value]
    found = []
    for v in values:
        if not isinstance(v, (str, Path)) or not str(v):
            continue
        v = str(v)
        prefix = next((p for p in IMPORT_PREFIXES if v.startswith(p)), None)
        found += v[len(prefix) :].split(":") if prefix else [v]
    return found


def declared(args) -> tuple[dict, dict, tuple]:
    """(outputs, inputs, rewrites) of the parsed command line ``args``."""
    outputs = {
        f"--{dest}": getattr(args, dest)
        for dest in OUTPUT_DESTS
        if isinstance(getattr(args, dest, None), str) and getattr(args, dest)
    }
    inputs, names = {}, getattr(args, "flag_names", {})
    for dest in INPUT_DESTS:
        for n, path in enumerate(_paths(getattr(args, dest, None))):
            inputs[f"{names.get(dest, dest)}{f' {n + 1}' if n else ''}"] = path
    extra, rewrites = SIDE.get(getattr(args, "command_path", ""), lambda a: ({}, ()))(args)
    return {**outputs, **extra}, inputs, rewrites
