"""The class overview in real JupyterLab and headless Chromium: clicking a column's header sorts the table by it,
and clicking it again sorts the other way. A screenshot lands in ``test-output/browser/class-overview-sorted.png``."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from harness.browser import CHROMIUM, CHROMIUM_ARGS, LabNotebook, chromium_missing_reason, keep, running_lab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

RUN_SECONDS = 90.0
WIDGET = ".jp-OutputArea-output .widget-vbox.bub-class-overview"
# Three students with 1, 3 and 2 turns, on files in the notebook's folder.
CELL = """\
from bub_nb.notebook.widgets import ClassOverview
from bub_nb.tape import FileTapeStore, TapeEntry
from bub_nb.tape.events import RUN

store = FileTapeStore("class-tapes")
for student, turns in (("ann", 1), ("ben", 3), ("cleo", 2)):
    store.append(f"{student}-lesson", [TapeEntry.event(RUN, {"status": "ok"}) for _ in range(turns)])
ClassOverview(store)
"""
_ORDER = f"""() => [...document.querySelectorAll('{WIDGET} tr.bub-class-row')].map(row => row.dataset.tape)"""


def test_clicking_a_header_sorts_the_rows_and_again_the_other_way(tmp_path: Path) -> None:
    reason = chromium_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    notebook_path = tmp_path / "class.ipynb"
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook_file = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)], metadata={"kernelspec": kernel})
    nbformat.write(notebook_file, notebook_path)
    with running_lab(tmp_path / "lab", [notebook_path], tmp_path / "bub") as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), timeout=30_000)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(30_000)
            notebook = LabNotebook(page, lab)
            notebook.open(notebook_path.name)
            notebook.run_all_cells()
            notebook.wait_until_all_cells_ran(RUN_SECONDS)
            assert notebook.error_outputs() == [], "the cell raised an error"
            page.locator(f"{WIDGET} tr.bub-class-row").first.wait_for()
            assert page.evaluate(_ORDER) == ["ann-lesson", "ben-lesson", "cleo-lesson"]
            header = page.locator(f'{WIDGET} th[data-column="turns"]')
            header.click()
            page.wait_for_function(f"() => ({_ORDER})()[0] === 'ann-lesson' && ({_ORDER})()[2] === 'ben-lesson'")
            assert page.evaluate(_ORDER) == ["ann-lesson", "cleo-lesson", "ben-lesson"]
            page.locator(f'{WIDGET} th[data-column="turns"]').click()  # the table was drawn again: find it anew
            page.wait_for_function(f"() => ({_ORDER})()[0] === 'ben-lesson'")
            assert page.evaluate(_ORDER) == ["ben-lesson", "cleo-lesson", "ann-lesson"]
            sorted_header = page.locator(f'{WIDGET} th[data-column="turns"]')
            assert sorted_header.get_attribute("aria-sort") == "descending"
            shot = tmp_path / "class-overview-sorted.png"
            page.locator(WIDGET).screenshot(path=str(shot))
            keep(shot)
        finally:
            browser.close()
