"""The tape strip: one cell per entry, anchors marked, the cells a view selects highlighted."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final

from bub_nb.context.retention import anchor_retention, has_summary
from bub_nb.errors import BubNbError
from bub_nb.markup import kind_class, role_class
from bub_nb.notebook.widgets._style import KIND_GLYPHS, LEGEND, MEMORY_GLYPH, OTHER_GLYPH, clip, esc
from bub_nb.tape.citations import state_sources
from bub_nb.tape.entries import is_memory_bound
from bub_nb.tape.text import entry_role, entry_text

if TYPE_CHECKING:
    from bub_nb.context import View
    from bub_nb.tape import Tape, TapeEntry

TIP_CHARS: Final = 160


@dataclass(frozen=True, slots=True)
class StripCell:
    """One entry as the strip shows it.

    ``in_window``: inside the range the mode selects; ``in_view``: its messages reach the model;
    ``dropped``: left out to keep the messages valid for the API; ``cited``: the summary of the view's
    anchor cites it; ``retracted``: a ``retract`` event took it out of the view; ``lost``: what that summary
    lost of this entry (each artifact as ``text (kind)``).
    """

    id: int
    kind: str
    role: str | None
    anchor: str | None
    memory_anchor: bool
    tip: str
    in_window: bool
    in_view: bool
    dropped: bool
    cited: bool = False
    retracted: bool = False
    lost: tuple[str, ...] = ()

    @property
    def glyph(self) -> str:
        if self.memory_anchor:
            return MEMORY_GLYPH
        return KIND_GLYPHS.get(self.kind, OTHER_GLYPH)

    @property
    def mark(self) -> str:
        """The character under the cell in the text form."""
        if self.in_view:
            return "^"
        if self.dropped:
            return "!"
        if self.retracted:
            return "~"
        return "." if self.in_window else " "

    @property
    def css_classes(self) -> str:
        names = ["bub-cell", kind_class(self.kind)]
        if self.role:
            names.append(role_class(self.role))
        if self.memory_anchor:  # a memory zone's bound: an event, or an older tape's memory/ anchor
            names.append("bub-memory-anchor")
        elif self.anchor is not None:
            names.append("bub-anchor")
        names.extend(
            name
            for name, on in (
                ("bub-in-window", self.in_window),
                ("bub-in-view", self.in_view),
                ("bub-dropped", self.dropped),
                ("bub-cited", self.cited),
                ("bub-retracted", self.retracted),
                ("bub-lost", bool(self.lost)),
            )
            if on
        )
        return " ".join(names)


@dataclass(frozen=True, slots=True)
class Strip:
    """The last entries of a tape against one view. ``hidden`` entries came earlier and are not shown,
    ``hidden_in_window`` of them inside the selected window. ``cited`` lists the entries the summary of
    the view's anchor cites (``cited_by`` names that anchor), shown or not; ``lost`` the artifacts that summary
    lost, by the entry they lived in (see ``bub_nb.retention``)."""

    cells: tuple[StripCell, ...]
    total: int
    hidden: int
    hidden_in_window: int
    cited: tuple[int, ...] = ()
    cited_by: str | None = None
    lost: dict[int, tuple[str, ...]] = field(default_factory=dict)


def window_range(view: View, first_id: int, last_id: int) -> tuple[int | None, int]:
    """The ids a view's mode selects from: its anchor on, the whole tape, or its first message on."""
    if view.anchor is not None:
        return view.anchor.id, last_id
    if view.mode == "full":
        return first_id, last_id
    taken = [*view.entry_ids, *view.dropped]
    return (min(taken), last_id) if taken else (None, last_id)


def build_strip(tape: Tape, view: View, last_id: int, max_entries: int) -> Strip:
    """The strip of ``tape`` up to ``last_id`` (read before the view was built, so both agree)."""
    entries = tape.read(max(1, last_id - max_entries + 1), last_id + 1) if last_id else []
    total = len(tape)
    first_id = 1 if total else 0
    start, end = window_range(view, first_id, last_id)
    sent, dropped = {*view.entry_ids, *view.sources}, set(view.dropped)  # a turn's sources add its system entry
    cited = state_sources(view.anchor.state, min(last_id, view.anchor.id - 1)) if view.anchor is not None else ()
    retracted = set(view.retracted)
    lost = lost_by_summary(tape, view)
    cells = tuple(
        replace(cell, retracted=cell.id in retracted) if retracted else cell
        for cell in (_cell(entry, start, end, sent, dropped, set(cited), lost.get(entry.id, ())) for entry in entries)
    )
    shown_from = cells[0].id if cells else last_id + 1
    hidden = max(0, total - len(cells))
    hidden_in_window = 0 if start is None or start >= shown_from else shown_from - start
    cited_by = view.anchor.name if cited and view.anchor is not None else None
    if cited_by is None and lost and view.anchor is not None:
        cited_by = view.anchor.name
    return Strip(cells, total, hidden, min(hidden, hidden_in_window), cited, cited_by, lost)


def lost_by_summary(tape: Tape, view: View) -> dict[int, tuple[str, ...]]:
    """What the summary of the anchor ``view`` starts at lost of its phase, by entry (``{}`` without a summary)."""
    if view.anchor is None or not has_summary(view.anchor.state):
        return {}
    try:
        report = anchor_retention(tape, view.anchor)
    except BubNbError:  # an anchor whose phase cannot be read (another writer's range) marks nothing
        return {}
    lost: dict[int, list[str]] = {}
    for found in report.lost():
        lost.setdefault(found.entry, []).append(f"{found.artifact.text} ({found.artifact.kind})")
    return {entry: tuple(texts) for entry, texts in lost.items()}


def _cell(
    entry: TapeEntry,
    start: int | None,
    end: int,
    sent: set[int],
    dropped: set[int],
    cited: set[int],
    lost: tuple[str, ...] = (),
) -> StripCell:
    anchor = entry.name if entry.kind == "anchor" else None
    memory = is_memory_bound(entry)
    role = entry_role(entry) if entry.kind == "message" else None
    label = anchor or entry.name or role or ""
    tip = f"#{entry.id} {entry.kind}" + (f" {label}" if label else "") + f" · {entry.date[:19]}"
    text = entry_text(entry) if entry.kind != "anchor" else ""
    if text:
        tip += "\n" + clip(text, TIP_CHARS)
    if lost:
        tip += "\nLost by the summary: " + clip(", ".join(lost), TIP_CHARS)
    in_window = start is not None and start <= entry.id <= end
    return StripCell(
        id=entry.id,
        kind=entry.kind,
        role=role,
        anchor=anchor,
        memory_anchor=memory,
        tip=tip,
        in_window=in_window,
        in_view=entry.id in sent,
        dropped=entry.id in dropped,
        cited=entry.id in cited,
        lost=lost,
    )


# -- HTML -----------------------------------------------------------------------------------------


def cell_html(cell: StripCell, mark: str | None = None, sign: str = "") -> str:
    """One entry's cell: its number (and an anchor's name) written in it, so nothing needs hovering to be read;
    ``mark`` adds a class, ``sign`` a character before the number (the diff's ``−`` and ``+``)."""
    classes = cell.css_classes + (f" {mark}" if mark else "")
    anchor_attr = f' data-anchor-name="{esc(cell.anchor)}"' if cell.anchor is not None else ""
    name = f" {esc(cell.anchor)}" if cell.anchor is not None and not cell.memory_anchor else ""
    return (
        f'<span class="{classes}" data-entry-id="{cell.id}" data-kind="{esc(cell.kind)}"{anchor_attr}'
        f' title="{esc(cell.tip)}">{esc(sign)}{cell.id}{name}</span>'
    )


def strip_html(strip: Strip) -> str:
    parts = []
    if strip.hidden:
        inside = f", {strip.hidden_in_window} of them in the window" if strip.hidden_in_window else ""
        parts.append(
            f'<span class="bub-more" data-hidden="{strip.hidden}">… {strip.hidden} earlier entries{esc(inside)}</span>'
        )
    parts.extend(cell_html(cell) for cell in strip.cells)
    if not strip.cells:
        parts.append('<span class="bub-muted">(the tape is empty)</span>')
    lost = ""
    if strip.lost:
        items = "; ".join(f"#{entry_id} {', '.join(texts)}" for entry_id, texts in sorted(strip.lost.items()))
        lost = f'<div class="bub-note bub-lost-list">Lost by the summary of {esc(strip.cited_by)}: {esc(items)}</div>'
    return f'<div class="bub-strip">{"".join(parts)}</div>{lost}'


def legend_html() -> str:
    items = [
        f'<span><span class="bub-cell bub-in-view {kind_class(kind)}">{glyph}</span>{esc(label)}</span>'
        for kind, label in LEGEND
        for glyph in (KIND_GLYPHS[kind],)
    ]
    items.insert(
        1, '<span><span class="bub-cell bub-in-view bub-kind-message bub-role-user">m</span>user message</span>'
    )
    states = (
        ("bub-in-view bub-kind-anchor bub-memory-anchor", ":", "memory anchor"),
        ("bub-in-view bub-kind-message", "7", "filled: sent to the model"),
        ("bub-kind-message", "7", "hollow: not sent"),
        ("bub-kind-message bub-in-window", "7", "ringed: in the window"),
        ("bub-kind-message bub-cited", "7", "outlined: cited by the summary"),
        ("bub-kind-message bub-retracted", "7", "struck: retracted"),
        ("bub-kind-message bub-dropped", "7", "hatched: left out to stay valid"),
        ("bub-kind-message bub-lost", "7", "lost by the summary (listed below)"),
    )
    items += [f'<span><span class="bub-cell {css}">{sign}</span>{label}</span>' for css, sign, label in states]
    return f'<div class="bub-legend">{"".join(items)}</div>'


# -- text -----------------------------------------------------------------------------------------


def strip_text(strip: Strip, width: int = 64) -> list[str]:
    """The strip as rows of ``width`` glyphs, each row numbered by its first entry, marks beneath."""
    lines = []
    if strip.hidden:
        inside = f", {strip.hidden_in_window} of them in the window" if strip.hidden_in_window else ""
        lines.append(f"  … {strip.hidden} earlier entries not shown{inside}")
    cells = strip.cells
    for at in range(0, len(cells), width):
        row = cells[at : at + width]
        lines.append(f"{'#' + str(row[0].id):>8} " + "".join(cell.glyph for cell in row))
        marks = "".join(cell.mark for cell in row).rstrip()
        if marks:
            lines.append(" " * 9 + marks)
    if not cells:
        lines.append("  (the tape is empty)")
    lines.extend("  " + line for line in strip_legend_text())
    anchors = [cell for cell in cells if cell.anchor is not None and not cell.memory_anchor]
    if anchors:
        lines.append("  anchors: " + "  ".join(f"#{cell.id} {cell.anchor}" for cell in anchors))
    memory = [cell.id for cell in cells if cell.memory_anchor]
    if memory:
        lines.append("  memory anchors: " + " ".join(f"#{entry_id}" for entry_id in memory))
    if strip.cited:
        lines.append(f"  cited by {strip.cited_by}: " + " ".join(f"#{entry_id}" for entry_id in strip.cited))
    if strip.lost:
        lost = "; ".join(f"#{entry_id} {', '.join(texts)}" for entry_id, texts in sorted(strip.lost.items()))
        lines.append(f"  lost by the summary of {strip.cited_by}: {clip(lost, 400)}")
    return lines


def strip_legend_text() -> list[str]:
    glyphs = "  ".join(f"{KIND_GLYPHS[kind]} {label}" for kind, label in LEGEND)
    marks = "^ sent to the model  . in the window, not sent  ! dropped  ~ retracted"
    return [f"{glyphs}  {MEMORY_GLYPH} memory anchor", marks]
