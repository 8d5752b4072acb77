"""The context view widget: the tape strip, the window a mode selects, and the messages it would send.

Stable hooks for styling and browser tests:

- root VBox: ``bub-context-view``; picker widgets: ``bub-mode-picker`` (the mode toggle, values
  ``last``/``anchor``/``full``/``phases``/``window``), ``bub-anchor-picker`` (anchor name dropdown),
  ``bub-window-size`` (message count), ``bub-refresh`` (button); the parts: ``bub-context-header``,
  ``bub-context-strip``, ``bub-context-messages``.
- strip cells: ``<span class="bub-cell bub-kind-<kind>" data-entry-id="<id>" data-kind="<kind>">``,
  plus ``bub-role-<role>`` on messages, ``bub-anchor`` (phase anchors, labelled with their name) or
  ``bub-memory-anchor`` (``memory/...`` anchors) with ``data-anchor-name``, ``bub-in-window`` inside
  the selected range, ``bub-in-view`` when the entry reaches the model, ``bub-dropped`` when its
  messages were left out to keep the API sequence valid, ``bub-cited`` when the summary of the view's
  anchor cites it (its state's ``sources``), ``bub-retracted`` when a ``retract`` event took it out.
  ``bub-more`` (``data-hidden``) counts entries before the strip.
- messages: ``tr.bub-message`` with ``data-entry-id`` and ``data-role``; the total cell carries
  ``data-total-tokens``; ``.bub-usage`` (``data-prompt-tokens``) the last run's exact usage.
- the static HTML wraps everything in ``div.bub-w.bub-context-view`` with ``data-mode``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bub_nb.agent.loop import Agent
from bub_nb.agent.models import resolve_model
from bub_nb.agent.preflight import context_window_of, request_preview
from bub_nb.context import LAST_ANCHOR, ContextStrategy, TurnOf, TurnView, View, Window, as_strategy, build_view
from bub_nb.context.display import summary_line
from bub_nb.context.request import PROMPT_PLACEHOLDER, NextRequest, gauge_text
from bub_nb.errors import BubNbError, ContextError
from bub_nb.notebook.widgets._display import WidgetDisplay, refreshable_html
from bub_nb.notebook.widgets._gauge import gauge_html, request_html, request_text, window_parts
from bub_nb.notebook.widgets._messages import messages_html, messages_text
from bub_nb.notebook.widgets._mode_picker import ModePicker, picker_choice
from bub_nb.notebook.widgets._strip import Strip, build_strip, legend_html, strip_html, strip_text
from bub_nb.notebook.widgets._style import esc, wrap
from bub_nb.tape.locations import readable_tape_name

if TYPE_CHECKING:
    import ipywidgets

    from bub_nb.tape import Tape


def as_view_mode(mode: Any) -> ContextStrategy:
    """A view mode as ``build_view`` takes it, plus a bare ``int`` for a window of that many messages."""
    if type(mode) is int:
        return Window(mode)
    return as_strategy(mode)


_WHAT = " (the whole request: system prompt, memory, view, prompt, tools; %context --next lists them)"


def _what_html() -> str:
    return f'<div class="bub-gauge-note bub-muted">{esc(_WHAT.strip(" ()"))}</div>'


class ContextView(WidgetDisplay):
    """What the model would see from ``tape`` under ``mode``, rebuilt live as the mode changes.

    ``mode`` is any view mode ``build_view`` accepts (``LAST_ANCHOR``, an anchor name, ``None`` for
    the full tape, ``window(n)`` or a strategy), or an ``int`` for a window. ``max_entries`` bounds
    the strip to the tape's last entries; ``max_messages`` bounds the message list. With ``follow``
    the view refreshes itself as another process writes the tape. With ``model`` (a model or a spec) a gauge
    draws the whole next request under this mode (or the recorded turn's request) against its context window.
    """

    def __init__(
        self,
        tape: Tape,
        mode: Any = LAST_ANCHOR,
        *,
        max_entries: int = 240,
        max_messages: int = 200,
        follow: bool = False,
        model: Any = None,
    ) -> None:
        if max_entries < 1 or max_messages < 1:
            raise ContextError(f"max_entries and max_messages must be positive, got {max_entries!r}, {max_messages!r}")
        self.tape = tape
        self._name = readable_tape_name(tape)
        self.max_entries = max_entries
        self.max_messages = max_messages
        self._strategy = as_view_mode(mode)
        self._custom: ContextStrategy | None = None
        self._error: str | None = None
        self._model = None if model is None else resolve_model(model)
        self._request: NextRequest | None = None
        self._view, self._strip = self._build(self._strategy)
        self._picker: ModePicker | None = None
        self._parts: dict[str, Any] = {}
        if follow:
            self.follow()

    # -- the plain API ----------------------------------------------------------------------------

    @property
    def view(self) -> View:
        """The current view, as ``build_view`` made it."""
        return self._view

    @property
    def mode(self) -> ContextStrategy:
        return self._strategy

    @property
    def strip(self) -> Strip:
        return self._strip

    @property
    def gauge(self) -> tuple[int, int | None] | None:
        """Tokens used against the model's window (``None``: unknown), when a model was given: the whole next
        request under this mode, or for a recorded turn the request it sent."""
        if self._model is None:
            return None
        window = context_window_of(self._model)
        if isinstance(self._view, TurnView) or self._request is None:
            return self._view.total_tokens, window
        return self._request.window_tokens, window

    def _gauge_parts(self) -> list[tuple[str, int]]:
        return [] if self._request is None else window_parts(self._request)

    def set_mode(self, mode: Any) -> View:
        """Show the view for another mode; a bad mode raises and leaves the current one shown."""
        strategy = as_view_mode(mode)
        self._view, self._strip = self._build(strategy)
        self._strategy, self._error = strategy, None
        self._update_widget()
        return self._view

    def refresh(self) -> View:
        """Read the tape again (it may have grown) and rebuild the view under the same mode."""
        try:
            self._view, self._strip = self._build(self._strategy)
            self._error = None
        except BubNbError as error:
            self._error = str(error)
            if self._widget is None:
                raise
        self._update_widget()
        return self._view

    def _build(self, strategy: ContextStrategy) -> tuple[View, Strip]:
        last_id = self.tape.last_id
        view = strategy.build(self.tape) if isinstance(strategy, TurnOf) else build_view(self.tape, strategy)
        if self._model is not None and not isinstance(strategy, TurnOf):
            self._request = request_preview(Agent(self.tape, self._model, context=strategy))
        if picker_choice(strategy) == "custom":
            self._custom = strategy
        return view, build_strip(self.tape, view, last_id, self.max_entries)

    # -- text and HTML ----------------------------------------------------------------------------

    def _strip_heading(self) -> str:
        strip = self._strip
        if not strip.cells:
            return "Tape strip (empty)"
        span = f"#{strip.cells[0].id}–#{strip.cells[-1].id}"
        return f"Tape strip ({span}, {len(strip.cells)} of {strip.total} entries)"

    def to_text(self) -> str:
        lines = [f"Context of tape {self._name}: {summary_line(self._view)}"]
        if isinstance(self._view, TurnView):
            lines.append(self._view.title)
        if self.gauge is not None:
            lines.append(f"Window of {self._model.name if self._model else '?'}: {gauge_text(*self.gauge)}{_WHAT}")
        if self._error:
            lines.append(f"! {self._error}")
        lines.append(self._strip_heading())
        lines.extend(strip_text(self._strip))
        lines.append(self._messages_heading())
        lines.extend(messages_text(self._view, self.max_messages))
        return "\n".join(lines)

    def _messages_heading(self) -> str:
        return "Messages the turn sent" if isinstance(self._view, TurnView) else "Messages that would be sent"

    def _header_html(self) -> str:
        error = f'<div class="bub-error">{esc(self._error)}</div>' if self._error else ""
        turn = f" · {esc(self._view.title)}" if isinstance(self._view, TurnView) else ""
        return (
            f'<div class="bub-title">Context · tape <code>{esc(self._name)}</code>{turn}</div>'
            f'<div class="bub-note" data-mode="{esc(self._view.mode)}">{esc(summary_line(self._view))}</div>{error}'
            + ("" if self.gauge is None else gauge_html(*self.gauge, self._gauge_parts(), "window:") + _what_html())
        )

    def _strip_html(self) -> str:
        return f'<div class="bub-section">{esc(self._strip_heading())}</div>{strip_html(self._strip)}{legend_html()}'

    def _messages_html(self) -> str:
        section = f'<div class="bub-section">{esc(self._messages_heading())}</div>'
        return section + messages_html(self._view, self.max_messages)

    def to_html(self) -> str:
        body = self._header_html() + self._strip_html() + self._messages_html()
        return wrap(body, "bub-context-view", attrs={"data-mode": self._view.mode})

    # -- the widget -------------------------------------------------------------------------------

    def _build_widget(self) -> ipywidgets.Widget:
        import ipywidgets as w

        picker = ModePicker(self.tape, self._strategy, self._apply, self._show_error, custom=self._custom)
        refresh = w.Button(description="refresh", icon="refresh", layout=w.Layout(width="auto"))
        refresh.add_class("bub-refresh")
        header, strip, messages = w.HTML(), w.HTML(), w.HTML()
        header.add_class("bub-context-header")
        strip.add_class("bub-context-strip")
        messages.add_class("bub-context-messages")
        controls = w.HBox(
            [picker.kind, picker.anchor, picker.size, refresh],
            layout=w.Layout(flex_flow="row wrap", align_items="center"),
        )
        root = w.VBox([header, controls, strip, messages], layout=w.Layout(width="100%"))
        root.add_class("bub-context-view")
        self._picker = picker
        self._parts = {"header": header, "strip": strip, "messages": messages}
        refresh.on_click(lambda _button: self.refresh())
        self._widget = root
        self._update_widget()
        return root

    def _apply(self, mode: Any) -> None:
        """A change from the picker: show the new view, or say why it cannot be built."""
        try:
            self.set_mode(mode)
        except BubNbError as error:
            self._show_error(str(error))

    def _show_error(self, message: str) -> None:
        self._error = message
        self._update_widget()

    def _update_widget(self) -> None:
        if self._widget is None or self._picker is None:
            return
        self._picker.show(self._strategy)
        parts = self._parts
        parts["header"].value = wrap(self._header_html(), "bub-context-header")
        parts["strip"].value = wrap(self._strip_html(), "bub-context-strip", styled=False)
        parts["messages"].value = wrap(self._messages_html(), "bub-context-messages", styled=False)


class NextRequestView(WidgetDisplay):
    """The whole request ``agent``'s next turn would send (``%context --next``): system prompt, memory block, view,
    prompt, reply priming and tool schemas, each with its tokens, gauged against the model's window."""

    def __init__(self, agent: Agent, prompt: str = PROMPT_PLACEHOLDER, *, follow: bool = False) -> None:
        self.agent, self.tape, self.prompt = agent, agent.tape, prompt
        self._request = request_preview(agent, prompt)
        self._body: ipywidgets.HTML | None = None
        if follow:
            self.follow()

    @property
    def request(self) -> NextRequest:
        return self._request

    def refresh(self) -> NextRequest:
        self._request = request_preview(self.agent, self.prompt)
        if self._body is not None:
            self._body.value = self.to_html()
        return self._request

    def to_text(self) -> str:
        return f"Tape {readable_tape_name(self.tape)}\n{request_text(self._request)}"

    def to_html(self) -> str:
        return wrap(request_html(self._request), "bub-context-view", "bub-next-request")

    def _build_widget(self) -> ipywidgets.Widget:
        root, self._body = refreshable_html(self, "bub-next-request-view")
        return root
