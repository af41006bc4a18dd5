"""A report page built from a few block kinds, written as one self-contained HTML file and as Markdown.

The HTML needs no network: inline CSS, no scripts, PNG plots embedded as base64 data URIs. The Markdown
(report.md beside it, for terminals and pull requests) links the same PNGs, written next to it.
"""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path

from warmstart.atomic import write_atomic

CSS = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       color: #222; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8rem 0; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f3f3; }
pre { background: #f7f7f7; padding: 0.6rem; overflow-x: auto; font-size: 12.5px; }
img { max-width: 100%; display: block; margin: 0.6rem 0; }
"""


class Page:
    """Blocks in order: heading, text, table, image (a PNG file), code (config files)."""

    def __init__(self, title: str):
        self.title = title
        self.blocks: list[tuple] = []

    def heading(self, text: str) -> None:
        self.blocks.append(("heading", text))

    def text(self, text: str) -> None:
        self.blocks.append(("text", text))

    def table(self, header: list[str], rows: list[list], note: str | None = None) -> None:
        self.blocks.append(("table", [str(h) for h in header], [[str(c) for c in r] for r in rows]))
        if note:
            self.blocks.append(("text", note))

    def markdown_table(self, text: str) -> None:
        """A Markdown table (as warmstart's table helpers write them) and the lines after it as text."""
        lines = text.strip().splitlines()
        rows = [
            [c.strip().strip("*") for c in ln.strip().strip("|").split("|")] for ln in lines if ln[:1] == "|"
        ]
        rows = [r for r in rows if not all(set(c) <= set("-: ") for c in r)]
        rest = " ".join(ln for ln in lines if ln.strip() and ln[:1] != "|")
        self.table(rows[0], rows[1:], rest or None)

    def image(self, path: Path, alt: str) -> None:
        self.blocks.append(("image", Path(path), alt))

    def code(self, text: str, title: str) -> None:
        self.blocks.append(("code", text, title))

    def html(self) -> str:
        e = html.escape
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{e(self.title)}</title><style>{CSS}</style></head><body>",
            f"<h1>{e(self.title)}</h1>",
        ]
        for kind, *a in self.blocks:
            if kind == "heading":
                parts.append(f"<h2>{e(a[0])}</h2>")
            elif kind == "text":
                parts.append(f"<p>{e(a[0])}</p>")
            elif kind == "table":
                head = "".join(f"<th>{e(h)}</th>" for h in a[0])
                body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in a[1])
                parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            elif kind == "image":
                data = base64.b64encode(a[0].read_bytes()).decode("ascii")
                parts.append(f'<img alt="{e(a[1])}" src="data:image/png;base64,{data}">')
            elif kind == "code":
                parts.append(f"<details><summary>{e(a[1])}</summary><pre>{e(a[0])}</pre></details>")
        parts.append("</body></html>")
        return "\n".join(parts) + "\n"

    def markdown(self, base: Path) -> str:
        """Markdown; image links relative to ``base`` (the directory report.md is written to)."""
        out = [f"# {self.title}", ""]
        for kind, *a in self.blocks:
            if kind == "heading":
                out += [f"## {a[0]}", ""]
            elif kind == "text":
                out += [a[0], ""]
            elif kind == "table":
                out.append("| " + " | ".join(a[0]) + " |")
                out.append("|" + "|".join("---" for _ in a[0]) + "|")
                out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in a[1]]
                out.append("")
            elif kind == "image":
                out += [f"![{a[1]}]({Path(os.path.relpath(a[0], base)).as_posix()})", ""]
            elif kind == "code":
                out += [
                    f"<details><summary>{a[1]}</summary>",
                    "",
                    "```",
                    a[0].rstrip(),
                    "```",
                    "",
                    "</details>",
                    "",
                ]
        return "\n".join(out)

    def write(self, out: Path) -> tuple[Path, Path]:
        """``out`` (HTML) and report.md beside it (OUT.md when ``out`` is not report.html)."""
        out = Path(out)
        md = out.with_suffix(".md")
        write_atomic(out, lambda fh: fh.write(self.html()), text=True)
        write_atomic(md, lambda fh: fh.write(self.markdown(out.parent)), text=True)
        return out, md
