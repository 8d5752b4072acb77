"""The class overview widget: every tape of a shared store, one row each, refreshed on demand, and any student's
last turn opened from it as ``%context --turn -1`` shows it."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from bub_nb.context.turns import RunSpec, TurnOf
from bub_nb.errors import BubNbError
from bub_nb.notebook.widgets._display import WidgetDisplay, refreshable_html
from bub_nb.tape.frames.overview import class_overview
from bub_nb.tape.open import open_tape

if TYPE_CHECKING:
    import ipywidgets
    import pandas as pd

    from bub_nb.notebook.widgets.context_view import ContextView
    from bub_nb.tape.stores.protocol import TapeStore

_SHOWN = ("owner", "notebook", "last_anchor", "turns", "tokens", "errors", "last_activity", "tape_name")


class ClassOverview(WidgetDisplay):
    """``class_overview(store)`` as a table: who wrote which tape, how far each got, what it cost."""

    def __init__(self, store: TapeStore | str | None = None) -> None:
        self.store = store
        self._parts: dict[str, Any] = {}
        self._frame = class_overview(store)

    @property
    def frame(self) -> pd.DataFrame:
        return self._frame

    def refresh(self) -> pd.DataFrame:
        self._frame = class_overview(self.store)
        if self._widget is not None and self._parts:
            self._parts["body"].value = self.to_html()
            self._parts["student"].options = self._students()
        return self._frame

    def turn(self, tape_name: str, run: RunSpec = -1) -> ContextView:
        """A student's turn (the last one unless ``run`` says) as ``%context --turn`` shows it: ``tape_name`` as
        the overview lists it, read from the overview's store (``bub_nb.context.student_turn`` without a widget)."""
        from bub_nb.notebook.widgets.context_view import ContextView

        return ContextView(open_tape(tape_name, store=self.store, create=False), TurnOf(run))

    def _students(self) -> list[tuple[str, str]]:
        """The dropdown's choices: each tape, labelled by its owner when the store knows it."""
        rows = self._frame[["owner", "tape_name"]].itertuples(index=False)
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
        return f"Class overview: {self._heading()}\n" + self._frame[list(_SHOWN)].to_string(index=False)

    def to_html(self) -> str:
        if self._frame.empty:
            return "<div class='bub-class-overview'><b>Class overview</b>: no tapes</div>"
        table = self._frame[list(_SHOWN)].to_html(index=False, na_rep="–", border=0)
        return f"<div class='bub-class-overview'><b>Class overview</b>: {html.escape(self._heading())}{table}</div>"

    def _build_widget(self) -> ipywidgets.Widget:
        import ipywidgets as w

        root, body = refreshable_html(self, "bub-class-overview")
        student = w.Dropdown(options=self._students(), description="student", layout=w.Layout(width="auto"))
        student.add_class("bub-student-picker")
        opener = w.Button(description="open last turn", icon="eye", layout=w.Layout(width="auto"))
        opener.add_class("bub-open-turn")
        turn = w.VBox([], layout=w.Layout(width="100%"))
        turn.add_class("bub-student-turn")
        opener.on_click(lambda _button: self._open_turn(student.value))
        root.children = (*root.children, w.HBox([student, opener]), turn)
        self._parts = {"body": body, "student": student, "opener": opener, "turn": turn}
        return root
