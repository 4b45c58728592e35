"""The README's screenshots, from the committed runs: `python scripts/screenshots.py`.

Builds the site into a temporary folder, opens the index and the Row Softmax Fusion page in
headless Chromium (Debian's `chromium`, driven by Playwright, as the browser tests do) at
1100x1500 in the light theme, and writes docs/index.png, docs/row-softmax-fusion.png and
docs/softmax-bandwidth-sweep.png.
"""
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernellab.cli import main as build  # noqa: E402

PAGES = {"index.png": "index.html", "row-softmax-fusion.png": "experiments/row-softmax-fusion.html",
         "softmax-bandwidth-sweep.png": "experiments/softmax-bandwidth-sweep.html"}
VIEWPORT = {"width": 1100, "height": 1500}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def main() -> int:
    """Build, then photograph each page of PAGES into docs/."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("error: Debian's chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "site"
        if build(["--root", str(REPO), "--out", str(out)]) != 0:
            return 1
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=VIEWPORT, color_scheme="light")
            for png, html in PAGES.items():
                page.goto((out / html).as_uri())
                page.screenshot(path=str(REPO / "docs" / png))
                print(f"wrote docs/{png}")
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
