"""What every bub_nb widget promises when displayed: the live widget, static HTML and plain text."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from bub_nb.markup import visible_controls

if TYPE_CHECKING:
    import ipywidgets

WIDGET_MIMETYPE = "application/vnd.jupyter.widget-view+json"


class WidgetDisplay(ABC):
    """Base of the widgets: subclasses render ``to_text()``, ``to_html()`` and build ``_build_widget()``.

    ipywidgets is imported only when ``.widget`` is first used, so the text forms work anywhere.
    Displaying sends all three forms; a frontend with a widget manager shows the live widget,
    nbconvert, GitHub and plain VS Code outputs fall back to the HTML, a terminal prints the text, whose control
    characters (a reply's escape sequences) are shown as markers here, for every widget.
    """

    _widget: ipywidgets.Widget | None = None
    _following: Any = None

    # -- following a tape that another process writes ----------------------------------------------

    def follow(self) -> None:
        """Refresh whenever the tape grows (``LISTEN``/``NOTIFY`` on a database, a cheap look at a file)."""
        from bub_nb.tape.follow import follow_tape

        if self._following is None or not self._following.running:
            self._following = follow_tape(self.tape, self.refresh)  # type: ignore[attr-defined]

    def unfollow(self) -> None:
        if self._following is not None:
            self._following.stop()
            self._following = None

    @property
    def following(self) -> bool:
        return self._following is not None and self._following.running

    @property
    def widget(self) -> ipywidgets.Widget:
        """The live ipywidgets tree (built on first use)."""
        if self._widget is None:
            self._widget = self._build_widget()
        return self._widget

    @abstractmethod
    def _build_widget(self) -> ipywidgets.Widget: ...

    @abstractmethod
    def to_text(self) -> str: ...

    @abstractmethod
    def to_html(self) -> str: ...

    def __str__(self) -> str:
        return visible_controls(self.to_text())

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(
        self, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        data: dict[str, Any] = {}
        # A terminal asks for text/plain only; it gets no widget, so none is built.
        if include is None or WIDGET_MIMETYPE in set(include):
            widget_data = self.widget._repr_mimebundle_(**kwargs) or {}
            if WIDGET_MIMETYPE in widget_data:
                data[WIDGET_MIMETYPE] = widget_data[WIDGET_MIMETYPE]
        data["text/html"] = self.to_html()
        data["text/plain"] = str(self)  # the text a tape's entries put in it, its control characters visible
        if include is not None:
            wanted = set(include)
            data = {key: value for key, value in data.items() if key in wanted}
        if exclude is not None:
            unwanted = set(exclude)
            data = {key: value for key, value in data.items() if key not in unwanted}
        return data


def refreshable_html(display: WidgetDisplay, css_class: str) -> tuple[ipywidgets.Widget, ipywidgets.HTML]:
    """A widget that is a refresh button over the display's HTML: the root, and the body to update.

    The button calls ``display.refresh()``, which sets the body's value again.
    """
    import ipywidgets as w

    refresh = w.Button(description="refresh", icon="refresh", layout=w.Layout(width="auto"))
    refresh.add_class("bub-refresh")
    body = w.HTML(display.to_html())
    root = w.VBox([w.HBox([refresh]), body], layout=w.Layout(width="100%"))
    root.add_class(css_class)
    refresh.on_click(lambda _button: display.refresh())  # type: ignore[attr-defined]
    return root, body
