"""The teacher's lesson in real JupyterLab and headless Chromium at 150% zoom, as on a projector: Run All, then
screenshots of the window gauge, the echo after an overflow and ``%context --next``, each checked for what a
class reads on it, and the diff strips aligned entry for entry on screen.

Screenshots land in ``<tmp_path>/artifacts`` and in ``test-output/browser/`` at the repository root.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from harness.browser import CHROMIUM, CHROMIUM_ARGS, LabNotebook, chromium_missing_reason, running_lab

from bub_nb import open_tape

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

LESSON = Path(__file__).resolve().parents[2] / "examples" / "lesson-context.ipynb"
RUN_SECONDS = 120.0
ZOOM = 1.5
# A 1400 x 1000 window at 150%: the page lays out in 933 x 667 CSS pixels, drawn at 1.5 device pixels each.
VIEWPORT = {"width": round(1400 / ZOOM), "height": round(1000 / ZOOM)}
NEXT_REQUEST = ".jp-OutputArea-output .widget-vbox.bub-next-request-view"
TIMELINE = ".jp-OutputArea-output .widget-vbox.bub-timeline"
DIFF = ".jp-OutputArea-output .widget-vbox.bub-context-diff"
PARTS = ("system prompt", "memory block", "view", "prompt", "reply priming", "tool schemas")


def visible_text(element: Any) -> str:
    """The element's text once it is on screen (JupyterLab draws only the cells near the viewport)."""
    element.scroll_into_view_if_needed()
    element.wait_for(state="visible")
    return " ".join((element.text_content() or "").split())


def test_a_class_sees_the_gauge_the_echo_after_an_overflow_and_the_next_request_at_150_percent(
    tmp_path: Path,
) -> None:
    reason = chromium_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    bub_home = tmp_path / "bub"
    with running_lab(tmp_path / "lab", [LESSON], bub_home) as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), timeout=30_000)
        try:
            page = browser.new_page(viewport=VIEWPORT, device_scale_factor=ZOOM)
            page.set_default_timeout(30_000)
            notebook = LabNotebook(page, lab)
            with notebook.explained(artifacts, "lesson"):
                notebook.open(LESSON.name)
                # On a projector the file browser is closed: the notebook gets the width.
                page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
                notebook.run_all_cells()
                notebook.wait_until_all_cells_ran(RUN_SECONDS)
                assert notebook.error_outputs() == [], "cells raised errors"
                assert notebook.widget_placeholders() == [], "widgets did not render"
                tape = open_tape("lesson-context", home=bub_home)
                assert tape.find_anchor("auto_handoff/context_overflow")

                # %context --next: every part with its tokens, and the gauge's used / limit, readable.
                # The first one, on the echo model's 800 tokens (the prompt cache's section shows two more).
                request = page.locator(NEXT_REQUEST).filter(has_text="/ 800 tokens")
                assert request.count() == 1, "no live %context --next widget"
                request.scroll_into_view_if_needed()
                gauge = request.locator(".bub-gauge-text")
                assert re.fullmatch(r"request: \d+ / 800 tokens \(\d+%\)", visible_text(gauge)), visible_text(gauge)
                rows = request.locator("tr.bub-request-part")
                assert [row.get_attribute("data-part") for row in rows.all()] == list(PARTS)
                text = visible_text(request)
                assert all(part in text for part in PARTS) and "room left" in text
                notebook.screenshot(artifacts / "context-next-150.png", request)

                # The echo after the overflow: what reached the model, line by line, and the notice.
                echo = notebook.code_cell("Fact 6: lunch")
                echo.scroll_into_view_if_needed()
                said = visible_text(echo.locator(".jp-OutputArea"))
                assert "I received 3 messages" in said and "[Anchor created: auto_handoff/context_overflow]" in said
                assert "Warning: The prompt did not fit" in said and "Fact 1:" not in said.split("Warning:")[0]
                notebook.screenshot(artifacts / "echo-after-overflow-150.png", echo)

                # The gauge on the timeline: used / limit, the limit line on every bar, the refused request in red.
                timeline = page.locator(TIMELINE).last
                timeline.scroll_into_view_if_needed()
                gauge = timeline.locator(".bub-gauge")
                assert gauge.get_attribute("data-limit") == "800"
                used = visible_text(gauge.locator(".bub-gauge-text"))
                assert re.fullmatch(r"last turn: \d+ / 800 tokens \(\d+%\)", used), used
                refused = timeline.locator("tr.bub-refused")
                assert refused.count() >= 1 and refused.first.is_visible()
                color = refused.first.locator(".bub-bar").evaluate("bar => getComputedStyle(bar).backgroundColor")
                assert color == "rgb(213, 94, 0)", f"the refused request's bar is {color}, not the palette's red"
                assert timeline.locator("tr.bub-turn .bub-limit").count() == timeline.locator("tr.bub-turn").count()
                notebook.screenshot(artifacts / "window-gauge-150.png", timeline.locator(".bub-turns-window"))

                # The diff strips at this zoom: every entry of a sits exactly above its entry of b.
                diff = page.locator(DIFF)
                diff.scroll_into_view_if_needed()
                lefts = diff.evaluate(
                    """root => Object.fromEntries(['a', 'b'].map(side => [side, Array.from(
                        root.querySelectorAll(`.bub-diff-side[data-side="${side}"] .bub-cell[data-entry-id]`),
                        cell => [cell.dataset.entryId, Math.round(cell.getBoundingClientRect().left)])]))"""
                )
                # Every entry up to when the diff was drawn (an exercise's check records its attempt after it).
                shown = [int(i) for i, _ in lefts["a"]]
                assert shown == list(range(1, len(shown) + 1)) and len(shown) <= len(tape)
                assert [i for i, _ in lefts["a"]] == [i for i, _ in lefts["b"]]
                assert lefts["a"] == lefts["b"] or [x for _, x in lefts["a"]] == [x for _, x in lefts["b"]]
                overlaps = diff.evaluate(
                    """root => Array.from(root.querySelectorAll('.bub-diff-label')).filter(label => {
                        const strip = label.nextElementSibling.getBoundingClientRect();
                        return label.getBoundingClientRect().right > strip.left; }).length"""
                )
                assert overlaps == 0, "a label overlaps its strip"
                notebook.screenshot(artifacts / "context-diff-150.png", diff)
        finally:
            browser.close()
    shots = sorted(path.name for path in artifacts.glob("*-150.png"))
    assert shots == [
        "context-diff-150.png",
        "context-next-150.png",
        "echo-after-overflow-150.png",
        "window-gauge-150.png",
    ]
