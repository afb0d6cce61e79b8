"""The website (`make site`): built from the stored outputs, served on 127.0.0.1 and opened page by
page in Debian's chromium (Playwright), with every request to another host refused — so each page
must load offline, render its math, show its images, keep its solutions collapsed, and link only
to pages that exist; the search must find softmax in notebook 05."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import re
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest
from conftest import CHROMIUM, needs_browser
from playwright.sync_api import Page, sync_playwright

from notebooks import notebook_paths, repository_url

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [path.stem for path in notebook_paths()]
REPOSITORY = repository_url().removeprefix("https://github.com/")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = ROOT / "build" / "site-screenshots"
SHOT_PAGES = ("index", "05_exponentials_logarithms_and_softmax",
              "17_complexity_and_tiled_attention")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "html"
    subprocess.run([sys.executable, str(ROOT / "tools" / "site.py"), "--out", str(out)],
                   check=True, cwd=ROOT)
    return out


def test_site_has_every_page_and_nothing_from_the_network(site: Path) -> None:
    pages = {p.stem for p in site.glob("*.html")}
    assert {"index", "search", *NOTEBOOKS} <= pages
    assert (site / "glossary.html").exists() == (ROOT / "notebooks" / "glossary.md").exists()
    # Every script, style sheet, font and image comes from the site folder.
    remote = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["']https?://""")
    for page in site.glob("*.html"):
        assert not remote.search(page.read_text()), f"{page.name} loads something from the network"
    # Every notebook page offers its .ipynb for download, links to Colab, and links to the
    # notebooks before and after it (the sidebar lists them all, in course order).
    for i, name in enumerate(NOTEBOOKS):
        html = (site / f"{name}.html").read_text()
        previous = re.search(r'class="left-prev"\s+href="([^"]+)"', html)
        following = re.search(r'class="right-next"\s+href="([^"]+)"', html)
        assert previous and previous.group(1) == (f"{NOTEBOOKS[i - 1]}.html" if i else "index.html")
        if i + 1 < len(NOTEBOOKS):
            assert following and following.group(1) == f"{NOTEBOOKS[i + 1]}.html", name
        sidebar = re.findall(r'class="reference internal" href="(\d\d_\w+)\.html"', html)
        others = [other for other in NOTEBOOKS if other != name]  # its own entry links to "#"
        assert [p for p in dict.fromkeys(sidebar) if p in NOTEBOOKS] == others, name
        assert f"_sources/{name}.ipynb" in html and (site / "_sources" / f"{name}.ipynb").exists()
        assert "  0%|" not in html, f"{name}: a stored progress bar shows its 0% line"
        assert f"colab.research.google.com/github/{REPOSITORY}/blob/main/notebooks/{name}.ipynb" \
            in html


def _site_module():
    """tools/site.py, loaded by its path (``import site`` is Python's own module)."""
    spec = importlib.util.spec_from_file_location("course_site", ROOT / "tools" / "site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_stored_progress_bar_renders_as_one_line() -> None:
    # As COURSE_STORED_OUTPUTS=1 stores tqdm's bar: its 0% and its 100% write, each after "\r"
    start = "  0%|          | 0/600 [00:00<?, ?it/s]"
    end = "100%|##########| 600/600 [00:29<00:00, 20.47it/s, loss 0.0038]"
    outputs = [{"name": "stdout", "output_type": "stream", "text": ["\r", start]},
               {"name": "stdout", "output_type": "stream", "text": ["\r", end]},
               {"name": "stdout", "output_type": "stream", "text": ["\n"]},
               {"name": "stdout", "output_type": "stream", "text": ["loss 0.0038\n"]},
               {"name": "stderr", "output_type": "stream", "text": ["a\r\nb\n"]},
               {"output_type": "display_data", "data": {"text/plain": ["x"]}, "metadata": {}},
               {"name": "stdout", "output_type": "stream", "text": ["12345\rab\n"]}]
    merged = _site_module().merge_streams(outputs)
    assert [o.get("name") for o in merged] == ["stdout", "stderr", None, "stdout"]
    assert merged[0]["text"] == f"{end}\nloss 0.0038\n"  # one line: the 100% write
    assert merged[1]["text"] == "a\nb\n"  # "\r\n" is a line end
    assert merged[2] == outputs[5]
    assert merged[3]["text"] == "ab345\n"  # a shorter write leaves the rest, as in a terminal
    assert outputs[0]["text"] == ["\r", start]  # the notebook itself is not changed


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args) -> None:  # noqa: A002 (the base class's name)
        pass


@pytest.fixture(scope="module")
def server(site: Path):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            functools.partial(QuietHandler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def open_page(browser, url: str) -> tuple[Page, list[str], list[str]]:
    """The page at ``url`` once loaded and typeset, its console errors and refused requests."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    refused: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(request_route):
        if urlparse(request_route.request.url).hostname == "127.0.0.1":
            request_route.continue_()
        else:
            refused.append(request_route.request.url)
            request_route.abort()

    page.route("**/*", route)
    page.goto(url, wait_until="load")
    page.wait_for_function("() => !window.MathJax || (window.MathJax.startup &&"
                           " window.MathJax.startup.promise)", timeout=60_000)
    page.evaluate("() => window.MathJax ? window.MathJax.startup.promise : null")
    return page, errors, refused


def internal_links(page: Page, url: str) -> set[str]:
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    links = set()
    for href in hrefs:
        target = urljoin(url, href)
        if urlparse(target).hostname == "127.0.0.1":
            links.add(target)
    return links


@needs_browser
def test_every_page_in_a_browser(site: Path, server: str, browser) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    names = ["index", *NOTEBOOKS] + (["glossary"] if (site / "glossary.html").exists() else [])
    links: set[str] = set()
    for name in names:
        url = f"{server}{name}.html"
        page, errors, refused = open_page(browser, url)
        assert not errors, f"{name}: console errors {errors}"
        assert not refused, f"{name}: asked the network for {refused}"
        broken = page.eval_on_selector_all(
            "img", "els => els.filter(e => !(e.complete && e.naturalWidth > 0)).map(e => e.src)")
        assert not broken, f"{name}: images that did not load: {broken}"
        assert page.locator("mjx-merror").count() == 0, f"{name}: a MathJax error"
        if name != "index":
            assert page.locator("mjx-container").count() > 0, f"{name}: no math was typeset"
        prose = page.evaluate("""() => {
            const body = document.querySelector('main') || document.body;
            const clone = body.cloneNode(true);
            clone.querySelectorAll('pre, code, mjx-container, script').forEach(e => e.remove());
            return clone.innerText; }""")
        for raw in ("$$", "\\begin{", "\\frac", "\\sum"):
            assert raw not in prose, f"{name}: raw LaTeX {raw!r} left in the text"
        details = page.locator("details")
        if details.count():
            assert page.locator("details[open]").count() == 0, f"{name}: a solution shows open"
            first = details.first
            assert not first.locator(":scope > :not(summary)").first.is_visible()
            first.locator("summary").click()
            assert first.evaluate("e => e.open")
            assert first.locator(":scope > :not(summary)").first.is_visible()
        if name in SHOT_PAGES:
            page.screenshot(path=SCREENSHOTS / f"{name}.png")
        links |= internal_links(page, url)
        page.close()
    # Every internal link resolves: the page exists and so does its anchor.
    ids: dict[str, set[str]] = {}
    for link in sorted(links):
        parsed = urlparse(link)
        path = site / (parsed.path.lstrip("/") or "index.html")
        if path.is_dir():
            path = path / "index.html"
        assert path.exists(), f"broken link {link}"
        if parsed.fragment and path.suffix == ".html":
            if path.name not in ids:
                ids[path.name] = set(re.findall(r'\bid="([^"]+)"', path.read_text()))
            assert parsed.fragment in ids[path.name], f"no anchor #{parsed.fragment} in {path.name}"


@needs_browser
def test_search_finds_softmax_in_notebook_05(server: str, browser) -> None:
    page, errors, refused = open_page(browser, f"{server}search.html?q=softmax")
    results = page.locator("#search-results a, .search a")
    results.first.wait_for(timeout=60_000)
    hrefs = results.evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert any("05_exponentials_logarithms_and_softmax" in h for h in hrefs), hrefs
    assert not errors and not refused, (errors, refused)
    page.close()
