"""/docs is Swagger UI served by the app itself: the page names no other site, and the script, style and icon
it loads come from the server; /card serves the run's model card where it has one, and /api/info says
where both are for the page's links."""

import re
from html.parser import HTMLParser
from pathlib import Path

import fastapi_offline

from tests.helpers.serve import live_server

STATIC = Path(fastapi_offline.__file__).parent / "static"


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        self.found += [(tag, value) for name, value in attrs if name in ("src", "href") and value]


def test_docs_load_nothing_from_elsewhere(api, classifier_run):
    client = api(classifier_run)
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert not re.search(r"https?://", page.text)  # no CDN
    assert "default-src 'self'" in page.headers["content-security-policy"]
    parser = Links()
    parser.feed(page.text)
    kinds = {"script": "javascript", "link": "css"}
    assert {tag for tag, _ in parser.found} >= {"script", "link"}
    for tag, url in parser.found:
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.content == (STATIC / url.rsplit("/", 1)[1]).read_bytes(), url
        if url.endswith((".js", ".css")):
            assert kinds[tag] in asset.headers["content-type"], url
    assert "url: '/openapi.json'" in page.text
    assert client.get("/openapi.json").status_code == 200


def test_docs_from_the_command_line(tiny_pretrained):
    import httpx

    with live_server(tiny_pretrained) as url:
        page = httpx.get(f"{url}/docs")
        assert page.status_code == 200 and "swagger-ui-bundle.js" in page.text
        assert httpx.get(f"{url}/docs/swagger-ui-bundle.js").status_code == 200


def test_the_model_card_and_the_links(api, classifier_run):
    card = "---\nlicense: mit\n---\n# A tiny classifier\n"
    client = api(classifier_run, card=card)
    answer = client.get("/card")
    assert answer.status_code == 200 and answer.text == card
    assert answer.headers["content-type"].startswith("text/markdown")
    info = client.get("/api/info").json()
    assert (info["docs"], info["card"]) == ("/docs", "/card")
    bare = api(classifier_run)
    assert bare.get("/card").status_code == 404 and bare.get("/api/info").json()["card"] is None


def test_the_card_of_a_run_directory(tmp_path):
    from warmstart.serve.run import model_card

    assert model_card(str(tmp_path)) is None
    (tmp_path / "README.md").write_text("# Card\n", encoding="utf-8")
    assert model_card(str(tmp_path)) == "# Card\n"
