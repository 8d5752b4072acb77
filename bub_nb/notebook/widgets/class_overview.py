"""The class overview widget: every tape of a shared store, one row each, refreshed on demand, and any student's
last turn opened from it as ``%context --turn -1`` shows it.

Hooks: the root VBox has ``bub-class-overview``; its first row holds the refresh button, ``bub-student-search``
(a text that filters the rows), ``bub-student-picker`` and ``bub-open-turn``, above the table
(``table.bub-class-table``, one ``tr.bub-class-row`` per tape with ``data-tape``, ``bub-archived`` on a tape started
over and kept by the database, whose tape cell says when); ``bub-student-turn`` below. A header
(``th.bub-sortable`` with ``data-column`` and ``aria-sort``) sorts the rows when clicked, a second click the other
way: it writes its column into the hidden text ``bub-class-sort``, which ``sort`` answers in Python, so the picker
lists the students in the table's order.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from bub_nb.context.turns import RunSpec, TurnOf
from bub_nb.errors import BubNbError
from bub_nb.markup import own_handler
from bub_nb.notebook.widgets._display import WidgetDisplay, refreshable_html
from bub_nb.notebook.widgets._style import esc, wrap
from bub_nb.tape.events import EXERCISE_CHECK
from bub_nb.tape.frames.overview import class_overview
from bub_nb.tape.open import open_tape

if TYPE_CHECKING:
    import ipywidgets
    import pandas as pd

    from bub_nb.notebook.widgets.context_view import ContextView
    from bub_nb.tape.stores.protocol import TapeStore

_SHOWN = ("owner", "notebook", "last_anchor", "turns", "tokens", "errors", "last_activity", "exercises", "tape_name")
_NUMBERS = frozenset({"turns", "tokens", "errors"})
_HEADINGS = {"last_anchor": "last anchor", "last_activity": "last activity (UTC)", "tape_name": "tape"}
# A header's click hands its column to the hidden text the widget watches (ipywidgets sees the ``input`` event).
_CLICK = own_handler(
    "var r=this.closest('.bub-class-overview'),i=r&&r.querySelector('.bub-class-sort input');"
    "if(i){i.value=this.dataset.column;i.dispatchEvent(new Event('input',{bubbles:true}));}"
)


class ClassOverview(WidgetDisplay):
    """``class_overview(store)`` as a table: who wrote which tape, how far each got, what it cost."""

    def __init__(self, store: TapeStore | str | None = None) -> None:
        self.store = store
        self._parts: dict[str, Any] = {}
        self.search = ""
        self.sort_by: str | None = None
        self.descending = False
        self._frame = self._read()

    def _read(self) -> pd.DataFrame:
        frame = class_overview(self.store)
        # An archived tape shares its name with the live one, which is what opening the name reads.
        frame["exercises"] = [
            "" if archived else self._exercises(str(name))
            for name, archived in zip(frame["tape_name"], frame["archived"].notna(), strict=True)
        ]
        return frame

    def sort(self, column: str, descending: bool | None = None) -> None:
        """Order the rows by ``column`` (a shown one): ascending first, the other way when asked for the same column
        again, or as ``descending`` says. Empty cells go last either way."""
        if column not in _SHOWN:
            raise BubNbError(f"Column {column!r} is not one the class overview shows: {', '.join(_SHOWN)}")
        self.descending = (column == self.sort_by and not self.descending) if descending is None else descending
        self.sort_by = column
        self._redraw()

    def _exercises(self, tape_name: str) -> str:
        """``passed 1, 2 (of 3 tried)``: the named exercises a tape's ``exercise.check`` events passed."""
        try:
            events = open_tape(tape_name, store=self.store, create=False).read(kinds=("event",))
        except BubNbError:
            return ""
        tried: dict[str, bool] = {}
        for event in events:
            data = event.payload.get("data")
            copied = "forked_from" in event.meta  # a fork's copy of an attempt made on its parent
            if (
                event.payload.get("name") == EXERCISE_CHECK
                and isinstance(data, dict)
                and data.get("done")
                and not copied
            ):
                name = str(data.get("exercise"))
                tried[name] = tried.get(name, False) or bool(data.get("passed"))
        if not tried:
            return ""
        passed = [name.split(":")[0] for name, ok in tried.items() if ok]
        return f"passed {', '.join(passed) or 'none'} (of {len(tried)} tried)"

    @property
    def frame(self) -> pd.DataFrame:
        return self._frame

    def refresh(self) -> pd.DataFrame:
        self._frame = self._read()
        if self._widget is not None and self._parts:
            self._parts["body"].value = self.to_html()
            self._parts["student"].options = self._students()
        return self._frame

    def turn(self, tape_name: str, run: RunSpec = -1) -> ContextView:
        """A student's turn (the last one unless ``run`` says) as ``%context --turn`` shows it: ``tape_name`` as
        the overview lists it, read from the overview's store (``bub_nb.context.student_turn`` without a widget)."""
        from bub_nb.notebook.widgets.context_view import ContextView

        return ContextView(open_tape(tape_name, store=self.store, create=False), TurnOf(run))

    def _shown(self) -> pd.DataFrame:
        """The rows whose owner, notebook or tape name holds the search text (case-insensitive), all without one,
        in the order ``sort`` chose."""
        frame = self._frame
        if self.search.strip():
            needle = self.search.strip().casefold()
            texts = frame[["owner", "notebook", "tape_name"]].astype(str).apply(" ".join, axis=1).str.casefold()
            frame = frame[texts.str.contains(needle, regex=False)]
        if self.sort_by is None:
            return frame
        key = None if self.sort_by in _NUMBERS or self.sort_by == "last_activity" else _text_key
        ascending = not self.descending
        return frame.sort_values(self.sort_by, ascending=ascending, na_position="last", kind="stable", key=key)

    def _students(self) -> list[tuple[str, str]]:
        """The dropdown's choices: each live tape shown, labelled by its owner when the store knows it."""
        shown = self._shown()
        rows = shown[shown["archived"].isna()][["owner", "tape_name"]].itertuples(index=False)
        return [(f"{owner} · {name}" if isinstance(owner, str) else str(name), str(name)) for owner, name in rows]

    def _open_turn(self, tape_name: str | None) -> None:
        """Show ``tape_name``'s last turn under the table, or the one-line reason it cannot be shown."""
        import ipywidgets as w

        if tape_name is None:
            return
        try:
            shown: ipywidgets.Widget = self.turn(tape_name).widget
        except BubNbError as error:
            shown = w.HTML(f"<div class='bub-error'>{html.escape(str(error))}</div>")
        self._parts["turn"].children = (shown,)

    def _heading(self) -> str:
        frame = self._frame
        return f"{len(frame)} tapes, {frame['turns'].sum()} turns, {frame['errors'].sum()} errors"

    def to_text(self) -> str:
        if self._frame.empty:
            return "Class overview: no tapes"
        shown = self._shown()
        frame = shown[list(_SHOWN)].copy()
        frame["last_activity"] = frame["last_activity"].map(_minute)
        names = zip(shown["tape_name"], shown["archived"], strict=True)
        frame["tape_name"] = [_tape(name, archived) for name, archived in names]
        return f"Class overview: {self._heading()}\n" + frame.to_string(index=False)

    def to_html(self) -> str:
        if self._frame.empty:
            return wrap("<div class='bub-title'>Class overview: no tapes</div>", "bub-class-overview-body")
        shown = self._shown()
        head = "".join(self._header(column) for column in _SHOWN)
        rows = "".join(
            f'<tr class="bub-class-row{"" if pd_isna(row["archived"]) else " bub-archived"}" '
            f'data-tape="{esc(row["tape_name"])}">'
            + "".join(
                _cell(column, _tape(row[column], row["archived"]) if column == "tape_name" else row[column])
                for column in _SHOWN
            )
            + "</tr>"
            for _, row in shown.iterrows()
        )
        found = "" if len(shown) == len(self._frame) else f" · {len(shown)} shown for {self.search.strip()!r}"
        body = (
            f'<div class="bub-title">Class overview: {esc(self._heading())}{esc(found)}</div>'
            f'<table class="bub-class-table"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
        )
        return wrap(body, "bub-class-overview-body")

    def _header(self, column: str) -> str:
        """A header that sorts by its column when clicked; the sorted one says which way, in its mark and to readers."""
        order = "none"
        if column == self.sort_by:
            order = "descending" if self.descending else "ascending"
        mark = {"none": "", "ascending": " \u25b2", "descending": " \u25bc"}[order]
        css = "bub-sortable bub-num" if column in _NUMBERS else "bub-sortable"
        return (
            f'<th class="{css}" data-column="{column}" aria-sort="{order}" role="button" tabindex="0" '
            f'title="sort by {esc(_HEADINGS.get(column, column))}" onclick="{esc(_CLICK)}">'
            f"{esc(_HEADINGS.get(column, column))}{mark}</th>"
        )

    def _set_search(self, text: str) -> None:
        self.search = text
        self._redraw()

    def _sort_clicked(self, column: str) -> None:
        if column and self._parts:
            self._parts["sort"].value = ""  # a second click on the same header is a change again
            self.sort(column)

    def _redraw(self) -> None:
        if self._parts:
            self._parts["body"].value = self.to_html()
            self._parts["student"].options = self._students()

    def _build_widget(self) -> ipywidgets.Widget:
        import ipywidgets as w

        root, body = refreshable_html(self, "bub-class-overview")
        search = w.Text(placeholder="search owner, notebook or tape", layout=w.Layout(width="auto", min_width="16em"))
        search.add_class("bub-student-search")
        student = w.Dropdown(options=self._students(), description="student", layout=w.Layout(width="auto"))
        student.add_class("bub-student-picker")
        opener = w.Button(description="open last turn", icon="eye", layout=w.Layout(width="auto"))
        opener.add_class("bub-open-turn")
        turn = w.VBox([], layout=w.Layout(width="100%"))
        turn.add_class("bub-student-turn")
        sort = w.Text(layout=w.Layout(display="none"))
        sort.add_class("bub-class-sort")
        opener.on_click(lambda _button: self._open_turn(student.value))
        search.observe(lambda change: self._set_search(str(change["new"])), names="value")
        sort.observe(lambda change: self._sort_clicked(str(change["new"])), names="value")
        # The picker sits above the table: with a class of thirty it is not a long scroll away.
        controls = root.children[0]
        controls.children = (*controls.children, search, student, opener, sort)
        root.children = (*root.children, turn)
        self._parts = {"body": body, "student": student, "opener": opener, "turn": turn, "search": search, "sort": sort}
        return root


def _minute(value: Any) -> str:
    """A time to the minute, in UTC: what a class reads (the frame keeps the exact time)."""
    return "–" if value is None or pd_isna(value) else f"{value:%Y-%m-%d %H:%M}"


def pd_isna(value: Any) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def _text_key(values: pd.Series) -> pd.Series:
    return values.map(lambda value: value if value is None or pd_isna(value) else str(value).casefold())


def _tape(name: str, archived: Any) -> str:
    """A tape's name, and when it was archived if it was started over (its live tape has the same name)."""
    return name if pd_isna(archived) else f"{name} (archived {_minute(archived)})"


def _cell(column: str, value: Any) -> str:
    if column == "last_activity":
        return f"<td>{esc(_minute(value))}</td>"
    if value is None or (not isinstance(value, list | tuple | dict) and pd_isna(value)) or value == "":
        return "<td>–</td>"
    css = ' class="bub-num"' if column in _NUMBERS else ""
    return f"<td{css}>{esc(value)}</td>"
