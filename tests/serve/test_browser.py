"""End to end in a real browser: `warmstart serve` on a free port, headless Debian Chromium driven by
selenium types an input, clicks Run, and the answer on the page equals the API's. A screenshot of each
page is saved under test-artifacts/. Skip these locally with `pytest -m "not browser"`."""

import shutil
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers.serve import live_server

pytestmark = pytest.mark.browser
CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (CHROMIUM.is_file() and DRIVER.is_file()):
        pytest.fail("the browser tests need Debian's chromium: `apt-get install -y chromium chromium-driver` "
                    "(make setup does it), or skip them with -m 'not browser'")  # fmt: skip
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1000,900", "--no-first-run", "--disable-extensions"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(str(DRIVER)))  # no driver download
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def ask(driver, url: str, fields: dict, artifact: str):
    """Open the page, fill in ``fields`` (id -> text), click Run, wait for the answer; save a screenshot."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url + "/")
    wait = WebDriverWait(driver, 60)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
    for name, value in fields.items():
        box = driver.find_element(By.ID, name)
        box.clear()
        box.send_keys(value)
    driver.find_element(By.ID, "run").click()
    wait.until(lambda d: d.find_element(By.ID, "answer").get_attribute("data-ready") == "true"
               or d.find_element(By.ID, "error").text)  # fmt: skip
    out = Path(__file__).resolve().parents[2] / "test-artifacts"
    out.mkdir(exist_ok=True)
    driver.save_screenshot(str(out / f"serve-{artifact}.png"))
    assert driver.find_element(By.ID, "error").text == ""
    return lambda selector: [
        e.get_attribute("textContent") for e in driver.find_elements(By.CSS_SELECTOR, selector)
    ]


def api_answer(url: str, body: dict) -> dict:
    response = httpx.post(f"{url}/api/predict", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def test_classification_page(browser, classifier_run):
    text = "A warm, funny and beautifully acted film."
    with live_server(classifier_run) as url:
        shown = ask(browser, url, {"text": text}, "classification")
        answer = api_answer(url, {"text": text})
    assert shown("#label") == [answer["label"]]
    probs = dict(zip(shown(".prob-row .name"), shown(".prob-row .value")))
    assert probs == {k: f"{v:.4f}" for k, v in answer["probabilities"].items()}


def test_tagging_page(browser, tagger_run):
    text = "Barack Obama visited Paris in 2009 ."
    with live_server(tagger_run) as url:
        shown = ask(browser, url, {"text": text}, "tagging")
        answer = api_answer(url, {"text": text})
    assert shown("#tags .tag") == answer["tags"]
    assert shown("mark.entity") == [e["text"] for e in answer["entities"]]


def test_extractive_qa_page(browser, qa_run):
    fields = {"question": "What is Paris?", "context": "Paris is the capital and largest city of France."}
    with live_server(qa_run) as url:
        shown = ask(browser, url, fields, "extractive_qa")
        answer = api_answer(url, fields)
    assert shown("#qa-answer") == [answer["answer"] or "(no answer)"]
    assert shown("#span") == ([answer["answer"]] if answer["start"] >= 0 else [])
    assert shown("#context-shown") == [fields["context"]]


def test_multiple_choice_page(browser, choice_run):
    fields = {"context": "The river rose all night.", "choices": "The town flooded.\nIt was dry."}
    with live_server(choice_run) as url:
        shown = ask(browser, url, fields, "multiple_choice")
        answer = api_answer(url, {**fields, "choices": fields["choices"].split("\n")})
    assert shown("#choice") == [answer["choices"][answer["choice"]]]
    assert shown(".choice .value") == [f"{p:.4f}" for p in answer["probabilities"]]


def test_fill_mask_page(browser, tiny_pretrained):
    text = "The [MASK] is a city in France."
    with live_server(tiny_pretrained) as url:
        shown = ask(browser, url, {"text": text, "top_k": "4"}, "fill_mask")
        answer = api_answer(url, {"text": text, "top_k": 4})
    assert shown(".candidate .token") == [c["token"] for c in answer["masks"][0]]


def test_generation_page_streams(browser, gpt2_run):
    with live_server(gpt2_run) as url:
        shown = ask(browser, url, {"text": "The history of the city", "max_new_tokens": "12"}, "generation")
        answer = api_answer(url, {"text": "The history of the city", "max_new_tokens": 12})
    assert shown("#output") == [answer["generated"]] and answer["generated"]
    assert shown("#generated .prompt") == ["The history of the city"]


PATHS = ".opblock-summary-path"  # Swagger UI's paths, written with zero-width spaces to break lines


def test_page_keys_edits_empty_text_and_links(browser, classifier_run):
    """Ctrl+Enter runs, an edit clears the old answer, an empty text is the page's own message (no request
    sent), and the links lead to the API docs (Swagger UI, all of it from the server) and the model card."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    lines = []
    with live_server(classifier_run, log=lines) as url:
        browser.get(url + "/")
        wait = WebDriverWait(browser, 60)
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
        answer, box = browser.find_element(By.ID, "answer"), browser.find_element(By.ID, "text")
        box.clear()
        box.send_keys("A warm, funny film.")
        box.send_keys(Keys.CONTROL, Keys.ENTER)
        wait.until(lambda d: answer.get_attribute("data-ready") == "true")
        assert (
            browser.find_element(By.ID, "label").text and box.get_attribute("value") == "A warm, funny film."
        )
        box.send_keys("!")
        assert answer.get_attribute("data-ready") is None and answer.text == ""
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(Keys.DELETE)
        browser.find_element(By.ID, "run").click()
        error = browser.find_element(By.ID, "error")
        wait.until(lambda d: error.text)
        assert error.text == "Type something in the Text box first."
        assert browser.find_element(By.ID, "docs-link").get_attribute("href") == url + "/docs"
        assert not browser.find_element(By.ID, "card-link").is_displayed()  # the run has no README.md
        browser.find_element(By.ID, "docs-link").click()
        wait.until(
            lambda d: (
                "/api/predict"
                in [e.text.replace("\u200b", "") for e in d.find_elements(By.CSS_SELECTOR, PATHS)]
            )
        )
        assert "warmstart serve" in browser.find_element(By.CSS_SELECTOR, ".info .title").text
        browser.save_screenshot(
            str(Path(__file__).resolve().parents[2] / "test-artifacts" / "serve-docs.png")
        )
        time.sleep(0.5)
    assert len([line for line in lines if '"POST /api/predict ' in line]) == 1  # the empty text was not sent
    assert [line for line in lines if '"GET /docs/swagger-ui-bundle.js ' in line and '" 200 ' in line]


def test_the_card_link_of_a_run_with_a_model_card(browser, classifier_run, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    run = tmp_path / "with-card"
    shutil.copytree(classifier_run, run, ignore=shutil.ignore_patterns("checkpoints", "tb"))
    (run / "README.md").write_text("# A tiny classifier\n\nFinetuned on 240 reviews.\n", encoding="utf-8")
    with live_server(run) as url:
        browser.get(url + "/")
        wait = WebDriverWait(browser, 60)
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
        link = browser.find_element(By.ID, "card-link")
        assert link.is_displayed() and link.get_attribute("href") == url + "/card"
        link.click()
        wait.until(lambda d: "Finetuned on 240 reviews." in d.find_element(By.TAG_NAME, "body").text)
