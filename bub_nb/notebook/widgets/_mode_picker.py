"""The controls of the context view that choose its mode: the mode toggle, the anchor dropdown, the window size."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from bub_nb.context import LAST_ANCHOR, ContextStrategy, FullTape, LastAnchor, NamedAnchor, Phases, Window
from bub_nb.tape.entries import is_phase_anchor

if TYPE_CHECKING:
    from bub_nb.tape import Tape

DEFAULT_WINDOW: Final = 20
_CHOICES: Final = (
    ("last anchor", "last"),
    ("anchor", "anchor"),
    ("full tape", "full"),
    ("phases", "phases"),
    ("window", "window"),
)


def picker_choice(strategy: ContextStrategy) -> str:
    """The toggle a mode shows as; ``custom`` for one the toggle has no button for (a turn's, say)."""
    match strategy:
        case LastAnchor():
            return "last"
        case NamedAnchor():
            return "anchor"
        case Window():
            return "window"
        case FullTape():
            return "full"
        case Phases():
            return "phases"
    return "custom"


def anchor_options(tape: Tape) -> list[tuple[str, str]]:
    """Anchor names, newest first, phase anchors before memory anchors; each shown with its last id."""
    last_ids: dict[str, int] = {}
    for anchor in tape.anchors(limit=None):
        last_ids[anchor.name] = anchor.id
    ordered = sorted(last_ids.items(), key=lambda item: (not is_phase_anchor(item[0]), -item[1]))
    return [(f"{name}  #{entry_id}", name) for name, entry_id in ordered]


class ModePicker:
    """The picker widgets for one context view. A change calls ``apply`` with the chosen mode, or ``refuse``
    with the reason none can be chosen; :meth:`show` sets the widgets to a mode without calling either."""

    def __init__(
        self,
        tape: Tape,
        strategy: ContextStrategy,
        apply: Callable[[Any], None],
        refuse: Callable[[str], None],
        *,
        custom: ContextStrategy | None = None,
    ) -> None:
        import ipywidgets as w

        self._tape, self._apply, self._refuse = tape, apply, refuse
        self._custom = strategy if picker_choice(strategy) == "custom" else custom
        self._syncing = False
        self.kind = w.ToggleButtons(
            options=self._kind_options(),
            value=picker_choice(strategy),
            style={"button_width": "auto"},
            layout=w.Layout(width="auto"),
        )
        self.kind.add_class("bub-mode-picker")
        options = anchor_options(tape)
        self.anchor = w.Dropdown(options=options, layout=w.Layout(width="auto", min_width="22em"), disabled=not options)
        self.anchor.add_class("bub-anchor-picker")
        if isinstance(strategy, NamedAnchor) and strategy.name in {v for _, v in options}:
            self.anchor.value = strategy.name
        self.size = w.BoundedIntText(
            value=strategy.size if isinstance(strategy, Window) else DEFAULT_WINDOW,
            min=1,
            max=1_000_000,
            description="n",
            layout=w.Layout(width="9em"),
            style={"description_width": "1.5em"},
        )
        self.size.add_class("bub-window-size")
        self.kind.observe(self._on_kind, names="value")
        self.anchor.observe(self._on_anchor, names="value")
        self.size.observe(self._on_size, names="value")

    def _kind_options(self) -> list[tuple[str, str]]:
        options = list(_CHOICES)
        if self._custom is not None:
            options.append((self._custom.label, "custom"))
        return options

    def _on_kind(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        choice = change["new"]
        strategies: dict[str, Any] = {
            "last": LAST_ANCHOR,
            "full": None,
            "phases": "phases",
            "window": Window(self.size.value),
            "custom": self._custom,
        }
        if choice == "anchor":
            if self.anchor.value is None:
                self._refuse(f"Tape {self._tape.name!r} has no anchors to start from")
                return
            self._apply(self.anchor.value)
        else:
            self._apply(strategies[choice])

    def _on_anchor(self, change: dict[str, Any]) -> None:
        if not self._syncing and change["new"] is not None:
            self._apply(change["new"])

    def _on_size(self, change: dict[str, Any]) -> None:
        if not self._syncing and isinstance(change["new"], int) and change["new"] >= 1:
            self._apply(Window(change["new"]))

    def show(self, strategy: ContextStrategy) -> None:
        """Set the widgets to ``strategy`` (the anchors read again, as the tape may have grown)."""
        if picker_choice(strategy) == "custom":
            self._custom = strategy
        self._syncing = True
        try:
            options = anchor_options(self._tape)
            names = {value for _, value in options}
            if list(self.anchor.options) != options:
                current = self.anchor.value
                self.anchor.options = options
                self.anchor.value = current if current in names else (options[0][1] if options else None)
            self.anchor.disabled = not options
            choices = self._kind_options()
            if list(self.kind.options) != choices:
                self.kind.options = choices
            self.kind.value = picker_choice(strategy)
            if isinstance(strategy, NamedAnchor) and strategy.name in names:
                self.anchor.value = strategy.name
            if isinstance(strategy, Window):
                self.size.value = strategy.size
        finally:
            self._syncing = False
