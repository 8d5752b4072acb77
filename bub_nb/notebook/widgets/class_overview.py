"""The class overview widget: every tape of a shared store, one row each, refreshed on demand."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from bub_nb.notebook.widgets._display import WidgetDisplay, refreshable_html
from bub_nb.tape.frames.overview import class_overview

if TYPE_CHECKING:
    import ipywidgets
    import pandas as pd

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
        return self._frame

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
        root, body = refreshable_html(self, "bub-class-overview")
        self._parts = {"body": body}
        return root
