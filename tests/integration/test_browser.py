"""The quickstart notebook in real JupyterLab and headless Chromium: the streamed answer, the live context
widget with its anchors, the mode picker changing what the strip highlights, and the context diff widget.

Screenshots land in the test's tmp_path and in ``test-output/browser/`` at the repository root.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harness.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    WIDGETS_LABEXTENSION,
    JupyterLab,
    LabNotebook,
    chromium_missing_reason,
    clear_kept,
    running_lab,
)

from bub_nb import Tape, diff_views, open_tape
from bub_nb.context import LAST_ANCHOR, build_view

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.ipynb"
RUN_SECONDS = 60.0
# The live widget, not the static HTML fallback (which also carries bub-context-view).
CONTEXT_WIDGET = ".jp-OutputArea-output .widget-vbox.bub-context-view"
STRIP_CELLS = f"{CONTEXT_WIDGET} .bub-context-strip .bub-cell[data-entry-id]"
HIGHLIGHTED = f"{STRIP_CELLS}.bub-in-view"
DIFF_WIDGET = ".jp-OutputArea-output .widget-vbox.bub-context-diff"
FIRST_TURN = "Hello! What can you see"
CURSOR = "▌"  # what a streaming answer ends in until its last delta arrives


@dataclass
class QuickstartRun:
    """The quickstart after Run All Cells, still open in the browser, and the tape it wrote."""

    lab: JupyterLab
    notebook: LabNotebook
    tape: Tape

    @property
    def context_widget(self) -> Any:
        return self.notebook.page.locator(CONTEXT_WIDGET)

    def highlighted_ids(self) -> set[int]:
        return {int(value) for value in self._ids(HIGHLIGHTED)}

    def strip_ids(self) -> set[int]:
        return {int(value) for value in self._ids(STRIP_CELLS)}

    def _ids(self, selector: str) -> list[str]:
        return self.notebook.page.locator(selector).evaluate_all("cells => cells.map(c => c.dataset.entryId)")


def check_lab_finds_the_venv(lab: JupyterLab) -> None:
    """The private Jupyter folders must not hide the venv's kernel spec or the widgets labextension."""
    extensions = lab.labextensions()
    assert WIDGETS_LABEXTENSION in extensions, (
        f"JupyterLab does not serve {WIDGETS_LABEXTENSION} (found {sorted(extensions)}); "
        "jupyterlab_widgets installs it under sys.prefix/share/jupyter/labextensions"
    )
    kernelspecs = lab.api("api/kernelspecs")["kernelspecs"]
    assert "python3" in kernelspecs, f"no python3 kernel spec, only {sorted(kernelspecs)}"


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuickstartRun]:
    reason = chromium_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    clear_kept()
    base = tmp_path_factory.mktemp("jupyterlab")
    bub_home = base / "bub"
    with running_lab(base, [QUICKSTART], bub_home) as lab, sync_playwright() as playwright:
        check_lab_finds_the_venv(lab)
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), timeout=30_000)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(30_000)
            notebook = LabNotebook(page, lab)
            with notebook.explained(base, "run-all-cells"):
                notebook.open(QUICKSTART.name)
                notebook.run_all_cells()
                notebook.wait_until_all_cells_ran(RUN_SECONDS)
            tape = open_tape("quickstart", home=bub_home)  # the lesson's tape: the notebook starts with %lesson start
            assert len(tape) > 0, (
                f"the notebook's tape {tape.name!r} is empty; tapes under {bub_home}: "
                f"{sorted(p.name for p in bub_home.rglob('*.jsonl'))}"
            )
            yield QuickstartRun(lab, notebook, tape)
        finally:
            browser.close()
    assert lab.process.returncode is not None, "JupyterLab is still running after the test"


def test_answer_streams_into_the_first_turn_cell_and_ends_whole(quickstart: QuickstartRun, tmp_path: Path) -> None:
    notebook = quickstart.notebook
    with notebook.explained(tmp_path, "streamed-answer"):
        cell = notebook.code_cell(FIRST_TURN)
        cell.scroll_into_view_if_needed()
        answer = cell.locator(".jp-OutputArea-output.jp-RenderedHTML").first.text_content() or ""
        assert "offline teaching model" in answer, f"the first turn's output is {answer!r}"
        assert "▌" not in answer, f"the streaming cursor stayed after the answer finished: {answer!r}"
        frames = notebook.output_frames(FIRST_TURN)
        partial = [frame.rstrip().removesuffix(CURSOR).strip() for frame in frames if frame.rstrip().endswith(CURSOR)]
        assert partial, f"the answer never showed in part; the output went {frames}"
        assert all(answer.startswith(text) and len(text) < len(answer) for text in partial), (partial, answer)
        notebook.screenshot(tmp_path / "first-turn.png", cell)


def test_every_cell_runs_and_every_widget_renders(quickstart: QuickstartRun, tmp_path: Path) -> None:
    notebook = quickstart.notebook
    with notebook.explained(tmp_path, "widgets-render"):
        assert notebook.error_outputs() == [], "cells raised errors"
        assert notebook.widget_placeholders() == [], "widgets did not render"
        page = notebook.page
        assert page.locator(".jp-OutputArea-output .widget-vbox.bub-memory-view").count() == 1, "no memory widget"
        assert quickstart.context_widget.count() == 1, "no live context widget"
        notebook.screenshot(tmp_path / "quickstart.png")


def test_context_view_marks_the_handoff_anchor_on_the_strip(quickstart: QuickstartRun, tmp_path: Path) -> None:
    notebook = quickstart.notebook
    with notebook.explained(tmp_path, "context-anchors"):
        widget = quickstart.context_widget
        widget.scroll_into_view_if_needed()
        anchor_id = quickstart.tape.find_anchor("lesson/1").id
        cell = widget.locator('.bub-context-strip .bub-cell.bub-anchor[data-anchor-name="lesson/1"]')
        assert cell.count() == 1, f"strip anchors: {widget.locator('.bub-anchor').all_text_contents()}"
        assert cell.get_attribute("data-entry-id") == str(anchor_id)
        assert (cell.text_content() or "").split() == [str(anchor_id), "lesson/1"]  # its entry number, then its name
        assert "lesson/1" in (cell.get_attribute("title") or "")
        assert cell.is_visible(), "the lesson/1 anchor is in the DOM but not visible"
        active = widget.locator(".bub-mode-picker button.mod-active").text_content()
        assert (active or "").strip() == "last anchor", f"the picker starts on {active!r}"
        notebook.screenshot(tmp_path / "context-view-last-anchor.png", widget)


def test_mode_picker_full_tape_highlights_every_entry_sent(quickstart: QuickstartRun, tmp_path: Path) -> None:
    notebook = quickstart.notebook
    with notebook.explained(tmp_path, "mode-picker"):
        widget = quickstart.context_widget
        anchor_id = quickstart.tape.find_anchor("lesson/1").id
        before = quickstart.highlighted_ids()
        assert before, "nothing is highlighted under the last anchor"
        assert min(before) >= anchor_id, f"last-anchor view highlights {sorted(before)}, before anchor #{anchor_id}"

        widget.locator(".bub-mode-picker").get_by_role("button", name="full tape", exact=True).click()
        notebook.page.wait_for_function(
            "([selector, count]) => document.querySelectorAll(selector).length !== count",
            arg=[HIGHLIGHTED, len(before)],
            timeout=15_000,
        )

        after = quickstart.highlighted_ids()
        sent = set(build_view(quickstart.tape, None).entry_ids) & quickstart.strip_ids()
        assert after == sent, f"full tape highlights {sorted(after)}; build_view sends {sorted(sent)}"
        assert before < after, f"full tape {sorted(after)} does not contain last anchor {sorted(before)}"
        assert min(after) < anchor_id, f"full tape highlights nothing before anchor #{anchor_id}"
        active = widget.locator(".bub-mode-picker button.mod-active").text_content()
        assert (active or "").strip() == "full tape", f"the picker shows {active!r} after clicking full tape"
        mode = widget.locator(".bub-context-header .bub-note").get_attribute("data-mode")
        assert mode == build_view(quickstart.tape, None).mode, f"the header says mode {mode!r}"
        notebook.screenshot(tmp_path / "context-view-full-tape.png", widget)


def test_mode_picker_last_anchor_returns_to_the_phase(quickstart: QuickstartRun, tmp_path: Path) -> None:
    notebook = quickstart.notebook
    with notebook.explained(tmp_path, "mode-picker-back"):
        widget = quickstart.context_widget
        widget.locator(".bub-mode-picker").get_by_role("button", name="full tape", exact=True).click()
        full = set(build_view(quickstart.tape, None).entry_ids) & quickstart.strip_ids()
        notebook.page.wait_for_function(
            "([selector, count]) => document.querySelectorAll(selector).length === count",
            arg=[HIGHLIGHTED, len(full)],
            timeout=15_000,
        )
        widget.locator(".bub-mode-picker").get_by_role("button", name="last anchor", exact=True).click()
        sent = set(build_view(quickstart.tape, LAST_ANCHOR).entry_ids) & quickstart.strip_ids()
        notebook.page.wait_for_function(
            "([selector, count]) => document.querySelectorAll(selector).length === count",
            arg=[HIGHLIGHTED, len(sent)],
            timeout=15_000,
        )
        assert quickstart.highlighted_ids() == sent


def test_the_diff_widget_marks_the_entries_before_the_handoff_as_left(
    quickstart: QuickstartRun, tmp_path: Path
) -> None:
    notebook = quickstart.notebook
    with notebook.explained(tmp_path, "context-diff"):
        widget = notebook.page.locator(DIFF_WIDGET)
        assert widget.count() == 1, "no live context diff widget"
        widget.scroll_into_view_if_needed()
        tape = quickstart.tape
        lesson = tape.find_anchor("lesson/1").id
        expected = diff_views(build_view(tape, None), build_view(tape, LAST_ANCHOR))

        def marked(side: str, mark: str) -> list[int]:
            cells = widget.locator(f'.bub-diff-side[data-side="{side}"] .bub-cell.{mark}')
            return [int(value) for value in cells.evaluate_all("cells => cells.map(c => c.dataset.entryId)")]

        left = marked("a", "bub-left")
        assert left and left == list(expected.left) and all(entry_id < lesson for entry_id in left)
        assert marked("b", "bub-entered") == [] and marked("b", "bub-left") == []
        side_a = widget.locator('.bub-diff-side[data-side="a"] .bub-cell[data-entry-id]')
        side_b = widget.locator('.bub-diff-side[data-side="b"] .bub-cell[data-entry-id]')
        ids = "cells => cells.map(c => c.dataset.entryId)"
        assert side_a.evaluate_all(ids) == side_b.evaluate_all(ids), "the two strips are not aligned"
        first = widget.locator(f'.bub-diff-side[data-side="a"] .bub-cell[data-entry-id="{left[0]}"]')
        outline = first.evaluate("cell => getComputedStyle(cell).outlineStyle")
        assert outline == "dashed", f"a left entry is not drawn marked (outline {outline!r})"
        assert (first.text_content() or "").strip().startswith("-"), "a left entry carries no sign besides its colour"
        assert first.is_visible()
        notebook.screenshot(tmp_path / "context-diff.png", widget)
