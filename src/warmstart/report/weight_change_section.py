"""Where finetuning moved the weights: two runs' weights compared group by group (`warmstart diff`), and the
finetune report's section comparing the finetuned weights with the pretrained ones they started from.

A run is read as warmstart reads it elsewhere: a run directory gives the checkpoint warmstart uses for it (a
finetuned run's best/, else final/; :func:`warmstart.hub.runs.choose`), a model directory itself, a
transformers directory its import (as ``finetune --init`` imports one); a LoRA step checkpoint's adapters are
merged. The finetune report's baseline is the run's ``init`` from its config.yaml, resolved as `finetune`
resolved it (final/ first).
"""

from __future__ import annotations

from pathlib import Path

from warmstart.analysis.weight_change import WeightChange, weight_change
from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import read_config, resolve_checkpoint
from warmstart.errors import WarmstartError
from warmstart.hub.adapter import lora_of, merge_adapters, where_trained
from warmstart.hub.on_the_fly import warmstart_dir
from warmstart.hub.runs import choose, run_config
from warmstart.report.html import Page
from warmstart.report.run_report import run_name
from warmstart.report.weight_plot import change_plot
from warmstart.train.checkpoint import read_tensors

BLOCK_ORDER = ["attention", "cross-attention", "feed-forward", "norms", "forward", "backward"]


def run_weights(path: str | Path) -> tuple[Path, dict, dict]:
    """(model directory, its config.json, its tensors) of a run, model or transformers directory."""
    chosen = choose(warmstart_dir(str(path)))
    config = read_config(chosen.path)
    state = read_tensors(chosen.path / "model.safetensors")
    state = merge_adapters(state, lora_of(run_config(chosen.root), chosen.root), chosen.path)
    return chosen.path, config, state


def compare_runs(a: str | Path, b: str | Path) -> tuple[Path, Path, WeightChange]:
    """(A's model directory, B's, the change from A's weights to B's); two families: WarmstartError."""
    dir_a, config_a, state_a = run_weights(a)
    dir_b, config_b, state_b = run_weights(b)
    arch_a, arch_b = RunCard.read(config_a).arch, RunCard.read(config_b).arch
    if arch_a != arch_b:
        raise WarmstartError(
            f"{a} holds a {arch_a} model and {b} a {arch_b} model: not one architecture",
            "compare two checkpoints of the same model (e.g. a finetuned run and its --init)",
        )
    return dir_a, dir_b, weight_change(state_a, state_b, str(a), str(b))


def fmt_change(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.4g}"


def blocks_of(change: WeightChange) -> list[str]:
    """The sub-blocks the groups of ``change`` have, in a fixed order."""
    found = {s for g in change.groups for s in g.blocks}
    return [s for s in BLOCK_ORDER if s in found] + sorted(found - set(BLOCK_ORDER))


def modules(only: dict[str, list[str]]) -> str:
    """'head (5 tensors), classifier (2 tensors)': the groups of tensors one side alone has."""
    return ", ".join(f"{g} ({len(v)} tensor{'s' if len(v) > 1 else ''})" for g, v in only.items()) or "none"


def weight_change_section(page: Page, run_dir: Path, dirs: dict[str, Path], cfg: dict, plot: Path) -> None:
    """The finetune report's section: each seed's (``dirs``) weights against the run's --init."""
    page.heading("Weight change")
    init = where_trained(str(cfg.get("init") or ""), str(cfg.get("out") or ""), run_dir)
    if cfg.get("from_scratch"):
        page.text("This run started from random weights (the scratch twin): there are no pretrained weights "
                  "it moved away from.")  # fmt: skip
        return
    try:
        base = resolve_checkpoint(warmstart_dir(init)) if init else None
    except WarmstartError:
        base = None
    if base is None:
        page.text(f"The pretrained model this run started from ({init or 'not recorded'}) is no longer on "
                  "disk: no weight change to show.")  # fmt: skip
        return
    series, where = {}, {}
    for name, d in dirs.items():
        try:
            _, where[name], series[name] = compare_runs(base, d)
        except WarmstartError as exc:  # weights deleted (a study cell keeps its metrics only), damaged
            page.text(f"{'This run' if d == run_dir else name}: no weight change to show ({exc.problem}).")
    if not series:
        return
    page.text(
        f"How far finetuning moved each group of weights from the pretrained ones it started from ({base}): "
        "||W_finetuned - W_pretrained||_F / ||W_pretrained||_F over all the group's tensors (embeddings, "
        "each layer from the bottom up, then the other modules). Finetuned checkpoint: "
        + ", ".join(f"{p.name}/" if dirs[n] == run_dir else f"{n}/{p.name}/" for n, p in where.items())
        + "."
    )
    title = f"weight change: {Path(init).name} -> {run_name(run_dir)}"
    page.image(change_plot(series, plot, title, siblings=True), "relative weight change per layer")
    _table(page, series)
    first = next(iter(series.values()))
    page.text(f"Not compared: only in the pretrained model {modules(first.only_a)}; only in the finetuned "
              f"model {modules(first.only_b)}.")  # fmt: skip


def _table(page: Page, series: dict[str, WeightChange]) -> None:
    first = next(iter(series.values()))
    if len(series) == 1:
        subs = blocks_of(first)
        rows = [[g.name, f"{g.params:,}", fmt_change(g.relative), *[fmt_change(g.blocks[s]) if s in g.blocks
                 else "" for s in subs]] for g in first.groups]  # fmt: skip
        page.table(["group", "parameters", "relative change", *subs], rows)
        return
    rows = []
    for g in first.groups:
        cells = [{x.name: x for x in c.groups}.get(g.name) for c in series.values()]
        rows.append([g.name, f"{g.params:,}", *[fmt_change(x.relative) if x else "" for x in cells]])
    page.table(["group", "parameters", *[f"{n} relative change" for n in series]], rows)
