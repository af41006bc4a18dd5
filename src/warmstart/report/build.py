"""`warmstart report RUN_OR_STUDY`: which type of directory it is, and its page (HTML + Markdown)."""

from __future__ import annotations

import json
from pathlib import Path

from warmstart.atomic import check_writable
from warmstart.errors import WarmstartError
from warmstart.registry import generates
from warmstart.report import run_report as R
from warmstart.report.bias_section import bias_probe_section
from warmstart.report.html import Page
from warmstart.report.study_report import study_page
from warmstart.report.weight_change_section import weight_change_section
from warmstart.report.word2vec_section import word2vec_section


def run_type_of(d: Path) -> str:
    """study, search, word2vec, finetune, pretrain or model (a bare model directory, e.g. an imported
    checkpoint)."""
    if (d / "study.yaml").is_file():
        return "study"
    if (d / "search.yaml").is_file():
        return "search"
    if (d / "vectors.npy").is_file() or _has(d / "metrics.json", "analogy"):
        return "word2vec"
    cfg = R.run_config(d)
    if "task" in cfg or R.finetune_dirs(d):
        return "finetune"
    if "objective" in cfg or "arch" in cfg or (d / "metrics.jsonl").is_file():
        return "pretrain"
    if (d / "config.json").is_file() and (d / "model.safetensors").is_file():
        return "model"
    raise WarmstartError(
        f"{d} is not a warmstart run or study directory",
        "pass a directory from `warmstart pretrain`, `finetune`, `word2vec train` or `study`",
    )


def _has(path: Path, key: str) -> bool:
    try:
        return key in json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


def run_page(d: Path, run_type: str, out: Path) -> Page:
    cfg = R.run_config(d)
    page = Page(f"warmstart {run_type} run: {d.name}")
    page.text(f"Run directory: {d.absolute()}")
    if run_type == "word2vec":
        word2vec_section(page, d, out)
    elif run_type == "finetune":
        R.finetune_section(page, d, out, cfg)
        if R.finetune_dirs(d):
            weight_change_section(page, d, R.finetune_dirs(d), cfg, R.plot_path(out, "weight_change"))
    else:
        R.pretraining_section(page, d, out, cfg)
        arch = cfg.get("arch")
        if run_type == "model":
            arch = json.loads((d / "config.json").read_text()).get("model_type")
        if generates(arch):
            R.generation_samples(page, d, cfg)
        bias_probe_section(page, d)
    page.heading("Provenance")
    R.config_blocks(page, d, d.name)
    R.footer(page)
    return page


def write_report(target: str | Path, out: str | Path | None = None) -> Path:
    """Write the report of a run or study directory; returns the HTML path (report.md is beside it)."""
    d = Path(target)
    if not d.is_dir():
        raise WarmstartError(f"no such run or study directory: {d}", "pass a run or study directory")
    run_type = run_type_of(d)
    out = Path(out) if out else d / "report.html"
    if out.suffix.lower() not in (".html", ".htm"):
        raise WarmstartError(f"the report is an HTML file, got {out}", "pass --out FILE.html")

    check_writable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if run_type == "search":
        from warmstart.report.search_report import write_search_report

        if not (d / "search.json").is_file():
            raise WarmstartError(
                f"{d} holds a search that has not finished", "rerun its command to finish it"
            )
        return write_search_report(d, out=out)
    if run_type == "study":
        page = study_page(d, out)
    else:
        page = run_page(d, run_type, out)
    return page.write(out)[0]
