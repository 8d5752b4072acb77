"""The code in the docs runs: every ```python block, and every ```ipython block on a real IPython shell.

Conventions (docs/index.md repeats them for writers):

- The ```python and ```ipython blocks of one page run in order as the cells of one fresh IPython
  ``InteractiveShell``, as they would in a notebook: one namespace per page, magics included, and
  any error fails the page, naming the block's line.
- A block preceded by the line ``<!-- no-run -->`` is shown, not run (it needs a network, a key or a
  server). Blocks in other languages (bash, toml, json, text, mermaid) are never run.
- Each page runs with ``BUB_HOME`` and the working directory on ``tmp_path``, the offline model, and a
  fresh default pipeline, so plugins a page registers do not reach other tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

import bub_nb.agent.registry as registry

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
NO_RUN = "<!-- no-run -->"
FENCE = re.compile(r"^(?P<indent>[ ]*)(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)[ ]*$",
                   re.DOTALL | re.MULTILINE)  # fmt: skip
RUN_LANGUAGES = ("python", "ipython")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    source: str
    run: bool


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        language = (match["info"].strip().split() or [""])[0]
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        body = "\n".join(line[len(match["indent"]) :] for line in match["body"].splitlines())
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page.name, line, language, body, before != NO_RUN))
    return found


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BUB_MODEL", "offline")
    for name in ("JPY_SESSION_NAME", "BUB_CONTEXT", "BUB_TAPE", "BUB_MAX_STEPS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(registry, "_pipeline", None)  # a fresh default pipeline for this page
    InteractiveShell.clear_instance()
    yield tmp_path
    shell = InteractiveShell.initialized() and InteractiveShell.instance()
    if shell and "bub_nb" in shell.extension_manager.loaded:
        shell.run_cell("%unload_ext bub_nb")
    InteractiveShell.clear_instance()


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_code_on_each_page_runs(page: Path, isolated: Path) -> None:
    shell = InteractiveShell.instance()
    for block in blocks(page):
        if block.language not in RUN_LANGUAGES or not block.run:
            continue
        result = shell.run_cell(block.source, store_history=True)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            pytest.fail(f"{block.page}:{block.line}: {type(error).__name__}: {error}")


def test_pages_have_code_to_run_and_mark_what_they_skip() -> None:
    for page in PAGES:
        found = blocks(page)
        assert all(block.language for block in found), f"{page.name}: give every code block a language"
        skipped = [block for block in found if not block.run and block.language not in RUN_LANGUAGES]
        assert not skipped, f"{page.name}: {NO_RUN} only marks python or ipython blocks, not {skipped[0]}"
    assert sum(block.language in RUN_LANGUAGES for page in PAGES for block in blocks(page)) >= 40


def test_every_test_the_guarantees_name_exists() -> None:
    named = re.findall(
        r"tests/((?:\w+/)?test_\w+\.py)::(test_\w+)", (ROOT / "docs" / "guarantees.md").read_text("utf-8")
    )
    assert len(named) >= 40
    for module, test in named:
        source = (ROOT / "tests" / module).read_text(encoding="utf-8")
        assert re.search(rf"^(async )?def {test}\(", source, re.MULTILINE), f"{module}::{test} does not exist"


def test_every_page_is_in_the_site_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (ROOT / "docs").glob("*.md"):
        assert f": {page.name}" in config, f"mkdocs.yml nav is missing {page.name}"


def test_the_package_reports_the_one_version_pyproject_declares() -> None:
    import tomllib

    import bub_nb

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert bub_nb.__version__ == declared


def test_every_module_the_architecture_page_names_exists() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    named = re.findall(r"`(bub_nb/[\w/]+\.py)`", page)
    assert len(named) >= 13
    assert [path for path in named if not (ROOT / path).is_file()] == []
    concepts = re.findall(r"^#{2,3} (.+)$", (ROOT / "docs" / "concepts.md").read_text("utf-8"), re.MULTILINE)
    table = set(re.findall(r"^\| (.+?) \| `bub_nb/", page, re.MULTILINE))
    assert [concept for concept in concepts if concept not in table] == []
