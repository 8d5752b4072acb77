"""The class overview's columns: a tape's notebook from its own ``notebook`` event, and headers that sort the rows
(a click writes the column into the widget's hidden text; a second click on it sorts the other way)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from harness.widgets import find

from bub_nb.agent import Agent
from bub_nb.errors import BubNbError
from bub_nb.notebook.widgets import ClassOverview
from bub_nb.tape import FileTapeStore, TapeEntry, open_tape
from bub_nb.tape.events import NOTEBOOK


@pytest.fixture
def class_home(tmp_path: Path) -> FileTapeStore:
    """Three students with 1, 3 and 2 turns; only ben's tape says which notebook wrote it."""
    store = FileTapeStore(tmp_path / "tapes")
    for student, turns in (("ann", 1), ("ben", 3), ("cleo", 2)):
        tape = open_tape(f"{student}-lesson", store=store)
        for turn in range(turns):
            Agent(tape, "offline").run(f"{student}: question {turn + 1}")
    store.append("ben-lesson", [TapeEntry.event(NOTEBOOK, {"path": "/home/ben/lesson.ipynb"})])
    return store


def _order(markup: str) -> list[str]:
    return re.findall(r'<tr class="bub-class-row[^"]*" data-tape="([^"]+)"', markup)


def test_a_tapes_notebook_comes_from_its_notebook_event(class_home: FileTapeStore) -> None:
    frame = ClassOverview(class_home).frame.set_index("tape_name")
    assert frame.loc["ben-lesson", "notebook"] == "/home/ben/lesson.ipynb"
    assert frame.loc[["ann-lesson", "cleo-lesson"], "notebook"].isna().all()
    assert frame["archived"].isna().all()  # files keep no archived tapes


def test_sorting_by_a_column_and_back(class_home: FileTapeStore) -> None:
    overview = ClassOverview(class_home)
    assert _order(overview.to_html()) == ["ann-lesson", "ben-lesson", "cleo-lesson"]
    overview.sort("turns")
    assert _order(overview.to_html()) == ["ann-lesson", "cleo-lesson", "ben-lesson"]
    assert 'data-column="turns" aria-sort="ascending"' in overview.to_html()
    overview.sort("turns")  # the same header again: the other way
    html = overview.to_html()
    assert _order(html) == ["ben-lesson", "cleo-lesson", "ann-lesson"]
    assert 'data-column="turns" aria-sort="descending"' in html and "turns \u25bc</th>" in html
    names = [line.split()[-1] for line in overview.to_text().splitlines()[2:]]
    assert names == ["ben-lesson", "cleo-lesson", "ann-lesson"]
    overview.sort("notebook")  # empty cells last, whichever way
    assert _order(overview.to_html())[0] == "ben-lesson"
    overview.sort("notebook", descending=True)
    assert _order(overview.to_html())[0] == "ben-lesson"
    with pytest.raises(BubNbError, match="Column 'grade' is not one the class overview shows"):
        overview.sort("grade")


def test_a_header_click_sorts_the_table_and_the_picker(class_home: FileTapeStore) -> None:
    overview = ClassOverview(class_home)
    box = overview.widget
    body = box.children[1]  # the table, under the row of controls
    picker, sort = (find(box, part) for part in ("bub-student-picker", "bub-class-sort"))
    headers = re.findall(r'<th class="bub-sortable[^"]*" data-column="(\w+)"[^>]*onclick="([^"]+)"', body.value)
    assert [column for column, _ in headers] == [
        "owner", "notebook", "last_anchor", "turns", "tokens", "errors", "last_activity", "exercises", "tape_name",
    ]  # fmt: skip
    assert all("bub-class-sort input" in click and "dispatchEvent" in click for _, click in headers)
    sort.value = "turns"  # what a click on the header does in the browser
    assert _order(body.value) == ["ann-lesson", "cleo-lesson", "ben-lesson"] and sort.value == ""
    sort.value = "turns"
    assert _order(body.value) == ["ben-lesson", "cleo-lesson", "ann-lesson"]
    assert [value for _label, value in picker.options] == ["ben-lesson", "cleo-lesson", "ann-lesson"]
