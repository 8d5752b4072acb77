"""The lesson's widgets on a projector: real JupyterLab in headless Chromium at 100%, then in Presentation Mode.

Every piece of text a widget draws is measured with ``getComputedStyle``: none is under 13 px at 100%, and each
one grows in Presentation Mode, as the notebook's own text does. Screenshots of each widget at both sizes land in
``<tmp_path>/artifacts`` and in ``test-output/browser/`` at the repository root (``projector-<widget>-100.png``,
``projector-<widget>-presentation.png``), with the sizes measured (``projector-sizes.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness.browser import CHROMIUM, CHROMIUM_ARGS, LabNotebook, chromium_missing_reason, keep, running_lab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

LESSON = Path(__file__).resolve().parents[2] / "examples" / "lesson-context.ipynb"
RUN_SECONDS = 150.0
SMALLEST_PX = 13.0
#: The widgets the lesson shows, by the class of their root.
WIDGETS = ("bub-next-request-view", "bub-timeline", "bub-context-diff")

# Each text node a widget draws (not in <style>, not hidden in a closed <details>), with its computed size.
_MEASURE = """roots => roots.flatMap(name => Array.from(document.querySelectorAll(
    `.jp-OutputArea-output .widget-vbox.${name}`)).flatMap((root, at) => {
    const found = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
        const node = walker.currentNode, element = node.parentElement;
        if (!node.textContent.trim() || !element || element.closest('style, script')) continue;
        if (!element.getClientRects().length) continue;
        found.push({widget: `${name}#${at}`, text: node.textContent.trim().slice(0, 40),
                    px: parseFloat(getComputedStyle(element).fontSize)});
    }
    return found;
}))"""


def measure(page: Any) -> list[dict[str, Any]]:
    return list(page.evaluate(_MEASURE, list(WIDGETS)))


def presentation_mode(page: Any) -> None:
    """View > Appearance > Presentation Mode, through the menu bar, as a lecturer turns it on."""
    page.get_by_role("menuitem", name="View", exact=True).click()
    page.locator(".lm-Menu-itemLabel", has_text="Appearance").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Presentation Mode").first.click()
    page.locator(".jp-mod-presentationMode").first.wait_for(state="attached")


def test_every_widget_text_is_13_px_or_more_and_grows_in_presentation_mode(tmp_path: Path) -> None:
    reason = chromium_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    # Every cell stays in the page (no windowing), so every widget can be measured without scrolling it in.
    settings = tmp_path / "lab" / "jupyter-config" / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    with running_lab(tmp_path / "lab", [LESSON], tmp_path / "bub") as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), timeout=30_000)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(30_000)
            notebook = LabNotebook(page, lab)
            with notebook.explained(artifacts, "projector"):
                notebook.open(LESSON.name)
                notebook.run_all_cells()
                notebook.wait_until_all_cells_ran(RUN_SECONDS)
                assert notebook.error_outputs() == [], "cells raised errors"
                assert notebook.widget_placeholders() == [], "widgets did not render"
                normal = measure(page)
                shown = {item["widget"].split("#")[0] for item in normal}
                assert shown == set(WIDGETS), f"widgets measured: {sorted(shown)}"
                small = [item for item in normal if item["px"] < SMALLEST_PX]
                assert small == [], f"text under {SMALLEST_PX} px at 100%: {small[:10]}"
                for name in WIDGETS:
                    widget = page.locator(f".jp-OutputArea-output .widget-vbox.{name}").first
                    widget.scroll_into_view_if_needed()
                    notebook.screenshot(artifacts / f"projector-{name.removeprefix('bub-')}-100.png", widget)

                presentation_mode(page)
                enlarged = measure(page)
                assert [(i["widget"], i["text"]) for i in enlarged] == [(i["widget"], i["text"]) for i in normal]
                same = [
                    {**before, "presentation": after["px"]}
                    for before, after in zip(normal, enlarged, strict=True)
                    if after["px"] <= before["px"]
                ]
                assert same == [], f"text Presentation Mode did not enlarge: {same[:10]}"
                for name in WIDGETS:
                    widget = page.locator(f".jp-OutputArea-output .widget-vbox.{name}").first
                    widget.scroll_into_view_if_needed()
                    notebook.screenshot(artifacts / f"projector-{name.removeprefix('bub-')}-presentation.png", widget)
                figures = {
                    "texts": len(normal),
                    "smallest_px_at_100": min(item["px"] for item in normal),
                    "smallest_px_in_presentation_mode": min(item["px"] for item in enlarged),
                    "smallest_growth": min(
                        after["px"] / before["px"] for before, after in zip(normal, enlarged, strict=True)
                    ),
                }
                (artifacts / "projector-sizes.json").write_text(json.dumps(figures, indent=1))
                keep(artifacts / "projector-sizes.json")
        finally:
            browser.close()
    assert len(list(artifacts.glob("projector-*-100.png"))) == len(WIDGETS)
    assert len(list(artifacts.glob("projector-*-presentation.png"))) == len(WIDGETS)
