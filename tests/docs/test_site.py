"""Issue 39: the documentation site builds with `mkdocs build --strict` (a broken link or anchor, or a page
missing from the nav, fails it) and loads nothing from another host; the README stays short; the
architecture page that pyproject.toml cites exists and names every layer of the import contract."""

import os
import re
import subprocess
import sys

import tomllib

from tests.docs.blocks import ROOT

EXTERNAL = re.compile(r"""<(?:script|img|iframe)[^>]*\ssrc=["']https?://|<link[^>]*href=["']https?://[^"']*["'][^>]*"""
                      r"""rel=["']stylesheet|<link[^>]*rel=["']stylesheet["'][^>]*href=["']https?://|"""
                      r"""@import\s+url\(["']?https?://|fonts\.googleapis""", re.I)  # fmt: skip


def test_the_site_builds_strictly_and_offline(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    pages = list(site.rglob("*.html"))
    assert len(pages) > 30
    loads = [str(p.relative_to(site)) for p in pages if EXTERNAL.search(p.read_text(encoding="utf-8"))]
    assert not loads, f"pages that load from another host: {loads}"
    api = (site / "reference/python-api/index.html").read_text(encoding="utf-8")
    assert 'id="warmstart.finetune"' in api and 'id="warmstart.load"' in api  # mkdocstrings rendered


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 150, f"README.md has {lines} lines (at most 150: the rest belongs in docs/)"


def test_the_architecture_page_names_every_layer_of_the_contract():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "docs/development/architecture.md" in text and "ARCHITECTURE.md" not in text
    page = (ROOT / "docs/development/architecture.md").read_text(encoding="utf-8")
    contract = tomllib.loads(text)["tool"]["importlinter"]["contracts"][0]["layers"]
    missing = [m.strip() for layer in contract for m in layer.split(":") if f"`{m.strip()}`" not in page]
    assert not missing, f"docs/development/architecture.md does not name the layers {missing}"


def test_the_readme_links_resolve():
    """mkdocs checks the links of docs/; the README's (into docs/, GitHub's view) are checked here."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert len(targets) > 20
    missing = [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()]
    assert not missing, missing
