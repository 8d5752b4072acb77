"""The agents notebook in real JupyterLab and headless Chromium: every cell runs and the lanes widget draws the
two agents with the handoffs between them.

Screenshots land in the test's tmp_path and in ``test-output/browser/`` at the repository root.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LabNotebook,
    chromium_missing_reason,
    running_lab,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

AGENTS = Path(__file__).resolve().parents[2] / "examples" / "agents.ipynb"
RUN_SECONDS = 90.0
# The live widget, not the static HTML fallback (which also carries the lanes' table).
LANES = ".jp-OutputArea-output .widget-vbox.bub-lanes"


def test_the_lanes_widget_draws_the_agents_and_their_handoffs_in_jupyterlab(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    reason = chromium_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    base = tmp_path_factory.mktemp("jupyterlab-agents")
    with running_lab(base, [AGENTS], base / "bub") as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), timeout=30_000)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(30_000)
            notebook = LabNotebook(page, lab)
            with notebook.explained(tmp_path, "agents-lanes"):
                notebook.open(AGENTS.name)
                notebook.run_all_cells()
                notebook.wait_until_all_cells_ran(RUN_SECONDS)
                assert notebook.error_outputs() == [], "cells raised errors"
                assert notebook.widget_placeholders() == [], "widgets did not render"
                lanes = page.locator(LANES)
                assert lanes.count() == 1, "no live lanes widget"
                agents = lanes.locator("tr.bub-lane").evaluate_all("rows => rows.map(r => r.dataset.agent)")
                assert agents == ["analyst", "reviewer"]
                sent = lanes.locator("td.bub-handoff-from").evaluate_all(
                    "cells => cells.map(c => [c.dataset.to, c.dataset.ownership, c.dataset.reached])"
                )
                assert sent == [["reviewer", "transfer", "true"], ["analyst", "transfer", "true"]]
                assert lanes.locator("td.bub-handoff-to").count() == 2
                lanes.first.scroll_into_view_if_needed()
                notebook.screenshot(tmp_path / "lanes.png", lanes.first)
        finally:
            browser.close()
