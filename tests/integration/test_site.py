"""The documentation site builds with ``mkdocs build --strict`` and works with no network.

The example notebooks are executed first by ``bub-nb run`` (each on a copy of ``examples/`` with its own Bub home,
on the offline model), and the site renders those executed copies with their outputs. Then the built handout is
opened in headless Chromium with every request that does not go to the local server aborted: the five diagrams
must be drawn by the Mermaid the site serves itself, and no text in them may be under 12 px as shown, that is its
computed font size times the scale at which the diagram's SVG is drawn in the content column.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from harness.browser import CHROMIUM, CHROMIUM_ARGS, chromium_missing_reason, keep
from harness.notebooks import EXAMPLES, NOTEBOOKS

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MERMAID = Path("node_modules", "mermaid", "dist", "mermaid.min.js")
#: The handout's diagrams: five ideas, the overflow drawn in two.
DIAGRAMS = (ROOT / "docs" / "handout.md").read_text(encoding="utf-8").count("```mermaid")
SMALLEST_PX = 12.0
#: Material's widest content column, for a window wide enough to show the navigation and the table of contents.
VIEWPORT = {"width": 1280, "height": 900}
REPOSITORY_FACTS = "https://api.github.com/repos/"

pytestmark = [pytest.mark.timeout(600)]


def mermaid_installed() -> bool:
    """Whether the Mermaid the site serves is installed where the site's build looks for it."""
    places = [ROOT / ".ci" / "site"]
    if os.environ.get("BUB_NB_SITE_ASSETS"):
        places.insert(0, Path(os.environ["BUB_NB_SITE_ASSETS"]))
    return any((place / MERMAID).is_file() for place in places)


def missing_mermaid() -> str | None:
    if mermaid_installed():
        return None
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        raise RuntimeError(f"CI={os.environ['CI']!r} but Mermaid is not installed: .ci/run installs it from npm")
    return "Mermaid for the site is not installed (cd .ci/site && npm ci); set CI=true to make this a failure"


def executed_examples(folder: Path) -> Path:
    """Every example notebook, executed by ``bub-nb run`` on the offline model; the folder of executed copies."""
    copy = folder / "examples"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.idx", "*.lock"))
    executed = folder / "executed" / "examples"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("BUB_HOME", "BUB_MODEL", "JPY_"))}
    for name in NOTEBOOKS:
        done = subprocess.run(
            [str(BIN / "bub-nb"), "run", name, "-o", str(executed / name), "--home", str(folder / "home" / name)],
            cwd=copy,
            env={**env, "BUB_MODEL": "offline"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{name}: {done.stderr[-2000:]}"
    return executed


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = missing_mermaid()
    if reason is not None:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("site")
    executed = executed_examples(folder)
    built = folder / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(built)],
        cwd=ROOT,
        env={**os.environ, "BUB_NB_SITE_NOTEBOOKS": str(executed)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return built


def test_the_site_builds_strictly_with_the_examples_and_their_outputs(site: Path) -> None:
    assert (site / "assets" / "javascripts" / "mermaid.min.js").is_file()
    handout = (site / "handout" / "index.html").read_text(encoding="utf-8")
    assert "assets/javascripts/mermaid.min.js" in handout
    assert handout.count('class="mermaid"') == DIAGRAMS
    assert "fonts.googleapis.com" not in handout
    for name in NOTEBOOKS:
        page = site / "examples" / Path(name).stem / "index.html"
        assert page.is_file(), f"{name} is not on the site"
        # The committed notebooks have no outputs: these are the ones bub-nb run wrote.
        assert "jp-OutputArea-output" in page.read_text(encoding="utf-8"), f"{name} is shown without outputs"


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1, as ``mkdocs serve`` or any static server would show it."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# Material draws each diagram in a closed shadow root; opened here so the page can be measured.
_OPEN_SHADOWS = """(() => { const attach = Element.prototype.attachShadow;
    Element.prototype.attachShadow = function (options) { return attach.call(this, {...options, mode: 'open'}); };
})()"""

# Each diagram's SVG, its scale in the page, and each visible piece of text in it with its size as shown.
_MEASURE = """() => {
    const svgs = [];
    const visit = root => root.querySelectorAll('*').forEach(element => {
        if (element.shadowRoot) visit(element.shadowRoot);
        if (element.tagName.toLowerCase() === 'svg' && element.closest('article') === null
            && element.getRootNode() !== document) svgs.push(element);
    });
    visit(document);
    const column = document.querySelector('.md-content__inner').getBoundingClientRect().width;
    return {column, diagrams: svgs.map(svg => {
        const box = svg.getBoundingClientRect();
        const scale = box.width / svg.viewBox.baseVal.width;
        const texts = [];
        const walker = document.createTreeWalker(svg, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            const node = walker.currentNode, element = node.parentElement;
            if (!node.textContent.trim() || !element || element.closest('style')) continue;
            if (!element.getClientRects().length) continue;
            const px = parseFloat(getComputedStyle(element).fontSize);
            texts.push({text: node.textContent.trim().slice(0, 40), px, shown: px * scale});
        }
        return {width: box.width, height: box.height, scale, texts};
    })};
}"""


def test_the_handout_draws_every_diagram_readable_with_no_network(served: str, tmp_path: Path) -> None:
    reason = chromium_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    local = urlparse(served).netloc
    refused: list[str] = []

    def only_local(route: Any) -> None:
        if urlparse(route.request.url).netloc == local:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), timeout=30_000)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(30_000)
            page.route("**/*", only_local)
            page.add_init_script(_OPEN_SHADOWS)
            page.goto(f"{served}/handout/", wait_until="load")
            page.wait_for_function(
                "n => Array.from(document.querySelectorAll('article *'))"
                ".filter(e => e.shadowRoot && e.shadowRoot.querySelector('svg')).length === n",
                arg=DIAGRAMS,
            )
            measured = page.evaluate(_MEASURE)
            artifacts = tmp_path / "artifacts"
            artifacts.mkdir()
            page.screenshot(path=str(artifacts / "site-handout.png"), full_page=True)
            keep(artifacts / "site-handout.png")
        finally:
            browser.close()
    figures = {
        "column_px": measured["column"],
        "diagrams": [
            {
                "width": round(d["width"]),
                "height": round(d["height"]),
                "scale": round(d["scale"], 3),
                "smallest_text_px": round(min(t["shown"] for t in d["texts"]), 1),
            }
            for d in measured["diagrams"]
        ],
        "refused": refused,
    }
    (artifacts / "site-diagrams.json").write_text(json.dumps(figures, indent=1))
    keep(artifacts / "site-diagrams.json")
    # The one request the page makes outside is Material's look-up of the repository's stars and latest release for
    # the header's repository link, which shows without them.
    outside = [url for url in refused if not url.startswith(REPOSITORY_FACTS)]
    assert outside == [], f"the handout asked the network for: {outside}"
    assert DIAGRAMS >= 5 and len(measured["diagrams"]) == DIAGRAMS, figures
    for diagram in measured["diagrams"]:
        assert diagram["texts"], f"a diagram with no text: {figures}"
        small = [t for t in diagram["texts"] if t["shown"] < SMALLEST_PX]
        assert small == [], f"text under {SMALLEST_PX} px as shown: {small[:5]} ({figures})"
