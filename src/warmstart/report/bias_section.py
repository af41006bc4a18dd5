"""Report section of a masked-LM run probed with `warmstart fill-mask RUN --bias`: its RUN/bias_probe.json
as the probe's own table, summary and limits (checkpoints/gender_probe.py)."""

from __future__ import annotations

import json
from pathlib import Path

from warmstart.analysis import gender_probe
from warmstart.report.html import Page


def bias_probe_section(page: Page, run_dir: Path) -> None:
    """Nothing when the run has no bias_probe.json; a line instead of the table when it is unreadable."""
    path = run_dir / gender_probe.FILE
    if not path.is_file():
        return
    page.heading("Gender template probe")
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
        text, lines = gender_probe.table(result), gender_probe.notes(result)
    except (OSError, ValueError, KeyError, TypeError, StopIteration) as exc:
        page.text(f"{path} could not be read ({exc}): run `warmstart fill-mask RUN --bias` again.")
        return
    page.text(f"From {path.name} (`warmstart fill-mask RUN --bias`).")
    page.markdown_table(text)
    for line in lines:
        page.text(line)
