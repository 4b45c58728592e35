"""The site as a visitor uses it: headless Chromium over HTTP under a sub-path, and from file://."""
import functools
import http.server
import os
import shutil
import threading
from urllib.parse import urljoin, urlparse

import pytest

from kernellab.cli import main
from labfixtures import DEVICE, artifact, decision, make_project, winning_results

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if os.environ.get("CI") and not CHROMIUM:
    raise RuntimeError("CI must install Debian's chromium for the browser tests (.ci/run does)")
playwright = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[test]'")
pytestmark = pytest.mark.skipif(not CHROMIUM, reason="Debian's chromium is not installed")

# Flags for a sandboxed machine with no network: nothing may phone home.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SUBPATH = "/lab/"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A site built from fixtures, served over HTTP on loopback under a sub-path."""
    tmp = tmp_path_factory.mktemp("browser")
    older = artifact("20261120T100000Z-fixture", winning_results(), started="2026-11-20T10:00:00Z")
    newer = artifact("20261121T100000Z-fixture", winning_results(candidate_ms=0.012))
    root = make_project(tmp, [older, newer], {"0001-win.md": decision(1, DEVICE, "supported")})
    serve_root = tmp / "www"
    assert main(["--root", str(root), "--out", str(serve_root / SUBPATH.strip("/"))]) == 0
    handler = functools.partial(_QuietHandler, directory=str(serve_root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"base": f"http://127.0.0.1:{server.server_port}{SUBPATH}", "dir": serve_root / SUBPATH.strip("/")}
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        """Keep test output clean."""


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module."""
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def watched_page(browser, problems: list, **context):
    """A page that records console errors, failed requests and HTTP errors into problems."""
    page = browser.new_context(**context).new_page()
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    # A navigation aborts the lazy image loads of the page it leaves: that is not a failure.
    page.on("requestfailed", lambda r: problems.append(f"failed request: {r.url} ({r.failure})")
            if "ERR_ABORTED" not in (r.failure or "") else None)
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    return page


def all_pages(site) -> list:
    """Every HTML page of the site, as URLs."""
    return sorted(urljoin(site["base"], p.relative_to(site["dir"]).as_posix()) for p in site["dir"].rglob("*.html"))


def test_every_page_loads_cleanly_and_every_link_and_image_resolves(site, browser):
    problems, checked = [], set()
    page = watched_page(browser, problems)
    for url in all_pages(site):
        page.goto(url, wait_until="load")
        assert page.locator("h1").count() == 1, url
        targets = page.eval_on_selector_all(
            "a[href], img[src], link[href]", "els => els.map(e => e.href || e.src)")
        for target in targets:
            if target == "data:,":  # the empty favicon: stops a request for /favicon.ico
                continue
            parsed = urlparse(target)
            assert parsed.scheme == "http" and parsed.netloc == urlparse(site["base"]).netloc, (url, target)
            assert parsed.path.startswith(SUBPATH), f"{url} links outside the site's sub-path: {target}"
            if target in checked:
                continue
            checked.add(target)
            assert page.request.get(target).status == 200, (url, target)
            if parsed.fragment:
                html = page.request.get(target.split("#")[0]).text()
                assert f'id="{parsed.fragment}"' in html, f"{url}: anchor #{parsed.fragment} not found"
        for img in page.locator("img").all():
            assert img.get_attribute("alt"), f"{url}: an image has no alt text"
            img.scroll_into_view_if_needed()  # plots load lazily
            handle = img.element_handle()
            page.wait_for_function("i => i.complete", arg=handle)
            assert page.evaluate("i => i.naturalWidth > 0", handle), url
    assert not problems, problems
    assert len(checked) > 10


def test_visitor_clicks_from_index_to_experiment_to_decision_and_back(site, browser):
    problems = []
    page = watched_page(browser, problems)
    page.goto(site["base"] + "index.html")
    page.get_by_role("link", name="Row Softmax Fusion").click()
    assert page.url.endswith("experiments/row-softmax-fusion.html")
    assert page.locator("h1").inner_text() == "Row Softmax Fusion"
    assert "supported" in page.locator("section", has=page.locator("#h-verdict")).inner_text()
    page.get_by_role("link", name="0001 Decision 1").click()
    assert page.url.endswith("decisions/0001-win.html")
    page.get_by_role("link", name="Row Softmax Fusion").first.click()
    assert page.url.endswith("experiments/row-softmax-fusion.html")
    page.go_back()
    page.go_back()
    assert page.url.endswith("experiments/row-softmax-fusion.html")
    page.go_back()
    assert page.url.endswith("index.html")
    assert not problems, problems


def test_keyboard_reaches_the_skip_link_first(site, browser):
    page = watched_page(browser, [])
    page.goto(site["base"] + "index.html")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"


@pytest.mark.parametrize("width", [360, 1600])
def test_layout_fits_phone_and_wide_screens(site, browser, width):
    problems = []
    page = watched_page(browser, problems, viewport={"width": width, "height": 800})
    for url in all_pages(site):
        page.goto(url)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{url} scrolls sideways by {overflow}px at {width}px wide"
    assert not problems, problems


def test_site_works_from_file_urls(site, browser):
    problems = []
    page = watched_page(browser, problems)
    page.goto((site["dir"] / "index.html").as_uri())
    page.get_by_role("link", name="Row Softmax Fusion").click()
    assert page.locator("h1").inner_text() == "Row Softmax Fusion"
    assert page.evaluate("getComputedStyle(document.body).fontFamily")  # the stylesheet loaded
    for img in page.locator("img").all():
        img.scroll_into_view_if_needed()
        page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=img.element_handle())
    assert not problems, problems
