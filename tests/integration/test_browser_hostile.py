"""Hostile content in real JupyterLab and headless Chromium: nothing a model, a tape or a log wrote runs.

One notebook drives the hostile corpus (``harness.hostile_text``) through every surface that shows outside text:
a streamed and a non-streamed reply of ``HostileModel`` (which also hands off under an anchor name and summary of
its choosing), ``%tape info``, ``%anchors``, ``%context`` (default, ``--diff``, ``--turn``), a ``%handoff
--summarize`` confirmation, a colleague's entry whose kind breaks out of a CSS class, the import report of a
hand-written Claude Code log, a displayed ``Tape`` and turn view.
Each payload sets ``window.__pwned`` and asks a listener on 127.0.0.1 for a page if it runs: the global stays
undefined, the listener hears nothing, and the outputs hold no element or attribute bub_nb did not write. The
notebook is then saved and opened again (its outputs stored, trusted), and exported with nbconvert: the same holds.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from harness.browser import CHROMIUM, CHROMIUM_ARGS, LabNotebook, chromium_missing_reason, running_lab
from harness.hostile_text import FORBIDDEN_TAGS, Beacon, beacon, bub_nb_styles, markup_problems, one_text

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

NAME = "phase/<img src=x onerror=window.__pwned=1>`x`**[y](javascript:window.__pwned=1)**"
"""An anchor name a model chooses (no control character, so ``check_handoff_name`` lets it through)."""


KIND = 'x" onmouseover="window.__pwned=1" style="position:fixed;inset:0" data-x="'
"""An entry kind on a colleague's tape that would open an attribute in a CSS class."""


def hostile_log(text: str) -> str:
    """A Claude Code session whose record type and texts are hostile: a backtick in the type to escape the
    report's code span, markup in the prompt and the answer."""
    common = {"isSidechain": False, "userType": "external", "cwd": "/tmp", "sessionId": "h1", "version": "2.1.0"}
    records = [
        {**common, "type": "user", "timestamp": "2025-07-01T10:00:00.000Z", "parentUuid": None, "uuid": "u1",
         "message": {"role": "user", "content": [{"type": "text", "text": text}]}},
        {**common, "type": "assistant", "timestamp": "2025-07-01T10:01:00.000Z", "parentUuid": "u1", "uuid": "a1",
         "message": {"id": "m1", "type": "message", "role": "assistant", "model": "claude",
                     "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}},
        {**common, "type": "x` <img src=x onerror=window.__pwned=1> `", "timestamp": "2025-07-01T10:02:00.000Z",
         "parentUuid": "a1", "uuid": "e1"},
    ]  # fmt: skip
    return "\n".join(json.dumps(record) for record in records) + "\n"


def cells(text: str, log: Path) -> list[str]:
    handoff = json.dumps({"name": NAME, "summary": f"{text} [#1]"})
    return [
        "%load_ext bub_nb",
        f"import sys; sys.path.insert(0, {str(Path(__file__).parents[1])!r})\n"
        "from harness.hostile_model import HostileModel, Move\n"
        f"TEXT = {text!r}\n"
        "hostile = HostileModel([\n"
        f"    Move('calls', '', calls=(('tape_handoff', {handoff!r}),)), Move('text', TEXT),\n"
        "    Move('text', TEXT)])",
        "%%bub -m hostile\nstreamed, please",
        "%%bub -m hostile --no-stream\nall at once, please",
        "%tape info",
        "%anchors",
        "%context",
        "%context --diff full last-anchor",
        "%context --turn -1",
        "bub = next(c for c in get_ipython().configurables if type(c).__name__ == 'BubMagics')\n"
        "last = bub.session.tape.last_id\n"
        "hostile = HostileModel([Move('text', f'Summary:\\nAs said: {TEXT} [#{last - 1}]\\n\\nNext steps:\\nGo on.'),\n"
        "                        Move('text', TEXT)])",
        "%handoff phase/two --summarize -m hostile",
        "import json\ntape = bub.session.tape\n"
        f"line = {{'id': tape.last_id + 1, 'kind': {KIND!r}, 'payload': {{'content': TEXT}}, 'meta': {{}},\n"
        "        'date': '2026-01-01T00:00:00+00:00'}\n"
        "with open(tape.location, 'a', encoding='utf-8') as file:\n    file.write(json.dumps(line) + '\\n')",
        "get_ipython().run_line_magic('tape', f'use {tape.name}')",
        "%context full",
        f"from bub_nb.imports import import_log\nimport_log({str(log)!r}, 'claude-code', name='hostile-log')",
        "display(bub.session.tape)\nbub.session.tape.view_of_turn(-1)",
        "%%bub -m hostile --no-stream\nthe last one",
        "print('all cells ran')",
    ]


def write_notebook(folder: Path, sources: list[str]) -> Path:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "hostile.ipynb"
    nbformat.write(notebook, path)
    return path


_FOREIGN = """(forbidden, styles) => {
  const found = [];
  for (const area of document.querySelectorAll('.jp-OutputArea-output')) {
    for (const element of area.querySelectorAll('*')) {
      const tag = element.tagName.toLowerCase();
      const inWidgetControl = element.closest('.widget-button, .widget-dropdown, .widget-toggle-buttons, '
        + '.widget-text, .widget-inline-hbox, .widget-slider, .widget-checkbox, .widget-readout, .jupyter-button');
      if (forbidden.includes(tag) && !(inWidgetControl && ['input', 'i', 'svg'].includes(tag))) {
        if (tag === 'style' && (styles.includes(element.textContent)
            || element.textContent.trim().startsWith('.dataframe'))) continue;  // pandas' own table style
        found.push(`<${tag}> in ${area.getAttribute('data-mime-type') || area.className}`);
      }
      for (const attribute of element.attributes) {
        const name = attribute.name.toLowerCase();
        const value = attribute.value.toLowerCase();
        if (name.startsWith('on')) found.push(`${name}= on <${tag}>`);
        if (['href', 'src', 'action', 'formaction'].includes(name) && value.trim().startsWith('javascript:'))
          found.push(`${name}=javascript: on <${tag}>`);
        if (name === 'style' && (value.includes('url(') || value.includes('position')))
          found.push(`style=${value} on <${tag}>`);
      }
    }
  }
  return found;
}"""


class _Elements(HTMLParser):
    """Every element of an HTML page with its attributes, and the text of each script that would run."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, attrs))
        kind = dict(attrs).get("type") or "text/javascript"
        self._in_script = tag == "script" and ("javascript" in kind or kind == "module")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False if tag == "script" else self._in_script

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def live_payloads(html: str, address: str) -> list[str]:
    """What of the payloads in an exported page would run or load: a script that sets the global, an event
    attribute, a ``javascript:`` address, an element that would load from the listener."""
    page = _Elements()
    page.feed(html)
    found = [script[:120] for script in page.scripts if "__pwned" in script]
    for tag, attrs in page.elements:
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") and "__pwned" in value:
                found.append(f"<{tag} {name}=...>")
            scripted = name in ("href", "src", "action", "data", "formaction") and "javascript:" in value.lower()
            loads = name in ("src", "srcset", "data", "action", "formaction", "poster") and value.startswith(address)
            if scripted or loads:  # a link to the listener is fine: it loads nothing until clicked
                found.append(f"<{tag} {name}={value[:80]}>")
    return found


def style_texts() -> list[str]:
    return [re.sub(r"^<style>|</style>$", "", block) for block in bub_nb_styles()]


def assert_nothing_ran(notebook: LabNotebook, listener: Beacon, when: str) -> None:
    page = notebook.page
    page.wait_for_timeout(1500)  # a payload's request or timer would have fired by now
    assert page.evaluate("() => window.__pwned") is None, f"{when}: a payload ran in the page"
    assert listener.heard == [], f"{when}: the page asked the listener for {listener.heard}"
    foreign = page.evaluate(_FOREIGN, [list(FORBIDDEN_TAGS), style_texts()])
    assert foreign == [], f"{when}: the outputs hold what bub_nb did not write: {foreign[:10]}"


def test_hostile_text_runs_nothing_on_any_surface_live_reopened_or_exported(tmp_path: Path) -> None:
    reason = chromium_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    bub_home = tmp_path / "bub"
    with beacon() as listener:
        text = one_text(listener.address)
        log = tmp_path / "hostile-session.jsonl"
        log.write_text(hostile_log(text))
        source = write_notebook(tmp_path, cells(text, log))
        with running_lab(tmp_path / "lab", [source], bub_home) as lab, sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), timeout=30_000
            )
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(30_000)
                notebook = LabNotebook(page, lab)
                with notebook.explained(tmp_path, "hostile"):
                    notebook.open(source.name)
                    notebook.run_all_cells()
                    notebook.wait_until_all_cells_ran(240)
                    outputs = notebook.code_cell_outputs()
                    assert notebook.error_outputs() == [], notebook.error_outputs()
                    assert "all cells ran" in outputs[-1]
                    shown = "\n".join(outputs)
                    assert "<script>window.__pwned" in shown  # the payloads are there, as text
                    assert "more characters" not in shown or "see the tape" in shown
                    assert_nothing_ran(notebook, listener, "live")

                    page.keyboard.press("Control+s")
                    page.wait_for_timeout(2000)
                    page.reload()
                    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
                    page.wait_for_timeout(3000)
                    assert_nothing_ran(notebook, listener, "reopened")
            finally:
                browser.close()
        saved = lab.root / source.name
        stored = nbformat.read(saved, as_version=4)
        bundles = [output.get("data", {}) for cell in stored.cells for output in cell.get("outputs", [])]
        assert bundles and not [b for b in bundles if "text/markdown" in b]
        problems = [p for b in bundles for p in markup_problems(str(b.get("text/html", "")))]
        assert problems == []

        exported = tmp_path / "exported.html"
        done = subprocess.run(
            [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(saved), "--output", str(exported)],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        html = exported.read_text()
        assert "__pwned" in html  # the payloads are in the export, as text
        assert live_payloads(html, listener.address) == []
