"""Every example notebook in real JupyterLab and headless Chromium, rerun as a teacher reruns a lesson: Restart Kernel
and Run All Cells, twice in a row, from a clean Bub home. No cell shows an error, every code cell runs, and the second
run shows what the first showed, clock aside.

One JupyterLab serves every notebook, each from its own copy of ``examples/`` and in its own workspace; the Bub home
(the server's ``BUB_HOME``) is emptied before each notebook, while no kernel runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from harness.browser import CHROMIUM, CHROMIUM_ARGS, JupyterLab, LabNotebook, chromium_missing_reason, running_lab
from harness.notebooks import EXAMPLES, NOTEBOOKS, comparable

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

RUN_SECONDS = 120.0
APPROVAL = ".jp-OutputArea-output .bub-code-approval"
#: The buttons a notebook's text asks its reader to click while it runs, in order: a code approval waits for a person.
CLICKS: dict[str, tuple[str, ...]] = {"agent-and-data.ipynb": ("Deny",)}


@dataclass
class Lab:
    """The JupyterLab every notebook runs in, the browser context that drives it (one cache for JupyterLab's
    scripts, so a page after the first loads quickly), and the server's Bub home."""

    server: JupyterLab
    browser: Any
    bub_home: Path


@dataclass(frozen=True)
class Shown:
    """What one Run All left on the page: each code cell's prompt and its outputs as text."""

    prompts: list[str]
    outputs: list[str]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    reason = chromium_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    base = tmp_path_factory.mktemp("jupyterlab-examples")
    with running_lab(base, [], base / "bub") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), timeout=30_000)
        try:
            yield Lab(server, browser.new_context(viewport={"width": 1400, "height": 1000}), base / "bub")
        finally:
            browser.close()


def restart_and_run_all(notebook: LabNotebook, clicks: tuple[str, ...]) -> Shown:
    """Kernel > Restart Kernel and Run All Cells…, then each of ``clicks`` on the code approval that asks for it; what
    the page shows once every cell ran and the kernel is idle."""
    notebook.restart_and_run_all()
    for name in clicks:  # an earlier run's approvals stay on the page, answered: their buttons are disabled
        button = notebook.page.locator(f"{APPROVAL} button:not([disabled])", has_text=name).first
        button.click(timeout=RUN_SECONDS * 1000)
    notebook.wait_until_all_cells_ran(RUN_SECONDS)
    assert notebook.error_outputs() == [], "cells raised errors"
    assert notebook.stderr_outputs() == [], "cells wrote to stderr"
    assert notebook.widget_placeholders() == [], "widgets did not render"
    prompts = [prompt for prompt, _ in notebook.code_cell_prompts()]
    counts = [int(prompt.strip("[]:")) for prompt in prompts]
    assert counts == list(range(1, len(counts) + 1)), f"execution counts after a restart: {prompts}"
    return Shown(prompts, notebook.code_cell_outputs())


def differences(name: str, first: Shown, second: Shown) -> list[str]:
    """The code cells whose outputs differ between the two runs, each with where they part, clock aside."""
    sources = [cell.source for cell in nbformat.read(EXAMPLES / name, as_version=4).cells if cell.cell_type == "code"]
    assert len(sources) == len(first.outputs) == len(second.outputs), "the page shows another number of code cells"
    changed = []
    for index, (source, a, b) in enumerate(zip(sources, first.outputs, second.outputs, strict=True)):
        a, b = comparable(name, source, a), comparable(name, source, b)
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            where = slice(max(at - 80, 0), at + 160)
            changed.append(
                f"cell {index} ({source.partition(chr(10))[0]!r}) from character {at}:\n"
                f"  first:  {a[where]!r}\n  second: {b[where]!r}"
            )
    return changed


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_an_example_restarted_and_run_twice_in_jupyterlab_shows_the_same_outputs(
    name: str, lab: Lab, tmp_path: Path
) -> None:
    stem = name.removesuffix(".ipynb")
    shutil.rmtree(lab.bub_home, ignore_errors=True)
    lab.bub_home.mkdir()
    shutil.copytree(
        EXAMPLES, lab.server.root / stem, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.idx", "*.lock")
    )
    page = lab.browser.new_page()
    page.set_default_timeout(30_000)
    notebook = LabNotebook(page, lab.server)
    try:
        with notebook.explained(tmp_path, stem):
            notebook.open(f"{stem}/{name}", workspace=stem)
            first = restart_and_run_all(notebook, CLICKS.get(name, ()))
            second = restart_and_run_all(notebook, CLICKS.get(name, ()))
            assert second.prompts == first.prompts
            changed = differences(name, first, second)
            assert changed == [], "the second Restart Kernel and Run All showed other outputs:\n" + "\n".join(changed)
    finally:
        page.close()
        lab.server.shut_down_kernels()
