"""``python.run`` in real JupyterLab and headless Chromium: Run All stops at the Approve / Deny buttons;
Approve runs the code in the kernel, with its output in the cell and on the tape; Deny changes nothing.

Screenshots land in the test's tmp_path and in ``test-output/browser/`` at the repository root.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from harness.browser import CHROMIUM, CHROMIUM_ARGS, LabNotebook, chromium_missing_reason, running_lab

from bub_nb import open_tape
from bub_nb.tape.locations import session_tape_name

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

APPROVED_CODE = "counter += 41\nprint('counter is now', counter)"
CELLS = [
    "%load_ext bub_nb",
    "counter = 1",
    f"%%bub --tools python.run\nrun: {APPROVED_CODE}",
    "%%bub --tools python.run\nrun: counter = -1",
    "print('after both turns', counter)",
]
APPROVAL = ".jp-OutputArea-output .bub-code-approval"


def consent_notebook(folder: Path) -> Path:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "consent.ipynb"
    nbformat.write(notebook, path)
    return path


def test_approve_runs_the_code_in_the_cell_and_deny_leaves_the_namespace_alone(tmp_path: Path) -> None:
    reason = chromium_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    source = consent_notebook(tmp_path)
    bub_home = tmp_path / "bub"
    with running_lab(tmp_path / "lab", [source], bub_home) as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), timeout=30_000)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(30_000)
            notebook = LabNotebook(page, lab)
            with notebook.explained(tmp_path, "consent"):
                notebook.open(source.name)
                notebook.run_all_cells()

                first = notebook.code_cell("counter += 41")
                first.locator(APPROVAL).wait_for(timeout=60_000)
                assert notebook.code_cell("print('after both turns'").locator(".jp-OutputArea-output").count() == 0
                notebook.screenshot(tmp_path / "consent-asked.png", first)
                first.get_by_role("button", name="Approve").click()
                first.get_by_text("counter is now 42").first.wait_for(timeout=30_000)

                second = notebook.code_cell("run: counter = -1")
                second.locator(APPROVAL).wait_for(timeout=60_000)
                second.get_by_role("button", name="Deny").click()
                notebook.wait_until_all_cells_ran(60)

                first_text = first.locator(".jp-OutputArea").text_content() or ""
                assert "Approved: running it." in first_text and "counter is now 42" in first_text
                second_text = second.locator(".jp-OutputArea").text_content() or ""
                assert "Denied: nothing ran." in second_text and "denied" in second_text
                last = notebook.code_cell("print('after both turns'").locator(".jp-OutputArea").text_content() or ""
                assert "after both turns 42" in last
                assert notebook.error_outputs() == []
                assert all(button.is_disabled() for button in page.locator(f"{APPROVAL} button").all())
                notebook.screenshot(tmp_path / "consent-answered.png")
        finally:
            browser.close()

    tape = open_tape(session_tape_name(lab.root, source.name), home=bub_home)
    entries = tape.read()
    cells = [e for e in entries if e.kind == "event" and e.name == "notebook.cell"]
    assert [cell.payload["data"]["source"] for cell in cells] == [APPROVED_CODE]
    approved, denied = (e.payload["results"][0] for e in entries if e.kind == "tool_result")
    assert "stdout:\ncounter is now 42" in approved
    assert denied["kind"] == "denied" and "Nothing ran" in denied["message"]
