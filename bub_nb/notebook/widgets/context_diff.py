"""The context diff widget: two views' strips aligned entry for entry, what entered and left marked.

Stable hooks for styling and browser tests:

- root VBox: ``bub-context-diff`` (with a ``bub-refresh`` button); the static HTML wraps everything in
  ``div.bub-w.bub-context-diff`` with ``data-a`` and ``data-b`` (the two views' labels).
- the strips: ``div.bub-diff-strips``, one grid of row pairs of :data:`CHUNK` entries each; every row is a
  ``span.bub-diff-label`` then a ``div.bub-diff-side`` with ``data-side`` ``a`` or ``b`` and ``data-chunk``; its cells
  are the context strip's
  (``bub-cell``, ``data-entry-id``, ``bub-in-view``…) plus ``bub-left`` (side a: sent in a, not in b),
  ``bub-entered`` (side b: sent in b, not in a) or ``bub-stayed`` (sent in both).
- the diff tables: ``tr.bub-diff-entered``, ``tr.bub-diff-left``, ``tr.bub-diff-stayed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from bub_nb.context import ContextDiff, View, diff_views
from bub_nb.context.diff import view_for
from bub_nb.notebook.widgets._display import WidgetDisplay, refreshable_html
from bub_nb.notebook.widgets._strip import build_strip, cell_html, legend_html, strip_legend_text
from bub_nb.notebook.widgets._style import esc, wrap
from bub_nb.tape.locations import readable_tape_name

if TYPE_CHECKING:
    import ipywidgets

    from bub_nb.tape import Tape

TEXT_WIDTH: Final = 64
LIKE_WITH_LIKE: Final = (
    "Both views are counted alike: the messages each takes from the tape, neither with the system prompt, the "
    "memory block or the tool schemas a request adds (%context --next shows those)."
)
#: Every cell of the diff starts with a sign or a space of the same width, so both strips stay aligned.
_SIGNS: Final = {"bub-left": "-", "bub-entered": "+"}
_NO_SIGN: Final = "\u00a0"
CHUNK: Final = 16
"""Entries per row pair: both strips break at the same entries, so a long tape stays aligned at any zoom."""
# One grid holds every row pair: the labels share a column of their own (they never overlap a strip), each
# strip keeps its row (no wrapping of its own), and a row too wide scrolls with its partner.
_DIFF_CSS: Final = """<style>
.bub-w .bub-diff-strips{display:grid;grid-template-columns:max-content max-content;column-gap:6px;
 align-items:center;overflow-x:auto;padding-bottom:2px}
.bub-w .bub-diff-label{font:600 var(--jp-code-font-size,13px) var(--bub-mono);white-space:nowrap;max-width:18em;
 overflow:hidden;text-overflow:ellipsis}
.bub-w .bub-diff-side .bub-strip{flex-wrap:nowrap;padding:2px}
.bub-w .bub-diff-gap{grid-column:1 / -1;height:4px}
/* Left and entered differ in sign and outline, never in colour alone. */
.bub-w .bub-cell.bub-left{outline:2px dashed var(--bub-fg);outline-offset:1px}
.bub-w .bub-cell.bub-entered{outline:3px double var(--bub-fg);outline-offset:1px}
.bub-w .bub-diff-key{font:var(--jp-code-font-size,13px) var(--bub-mono);margin:4px 0}
</style>"""


class ContextDiffView(WidgetDisplay):
    """What changes from view ``a`` to view ``b`` of ``tape``: both strips, aligned, and the diff's tables.

    ``a`` and ``b`` are views, modes (``last``, ``full``, ``window:N``, an anchor name) or recorded
    turns (``turn:-1``). Modes and turns are read again on :meth:`refresh`.
    """

    def __init__(self, tape: Tape, a: str | View, b: str | View, *, max_entries: int = 240) -> None:
        self.tape = tape
        self._name = readable_tape_name(tape)
        self.a, self.b = a, b
        self.max_entries = max_entries
        self._body: Any = None
        self._build()

    def _build(self) -> None:
        last_id = self.tape.last_id
        view_a, view_b = view_for(self.tape, self.a), view_for(self.tape, self.b)
        self._diff = diff_views(view_a, view_b)
        # The same last id and bound give both strips the same entries, so their cells line up.
        self._strips = (
            build_strip(self.tape, view_a, last_id, self.max_entries),
            build_strip(self.tape, view_b, last_id, self.max_entries),
        )

    @property
    def diff(self) -> ContextDiff:
        return self._diff

    def refresh(self) -> ContextDiff:
        """Build both views again from the tape (it may have grown) and redraw."""
        self._build()
        if self._body is not None:
            self._body.value = self.to_html()
        return self._diff

    # -- text and HTML ----------------------------------------------------------------------------

    def _marks(self, side: str) -> dict[int, str]:
        diff = self._diff
        moved = diff.left if side == "a" else diff.entered
        name = "bub-left" if side == "a" else "bub-entered"
        marks = dict.fromkeys(moved, name)
        marks.update(dict.fromkeys(diff.stayed, "bub-stayed"))
        return marks

    def to_text(self) -> str:
        diff = self._diff
        lines = [f"Context diff of tape {self._name}", LIKE_WITH_LIKE, str(diff)]
        lines.append(f"Strips (a = {diff.a}, b = {diff.b})")
        cells = self._strips[0].cells
        if self._strips[0].hidden:
            lines.append(f"  … {self._strips[0].hidden} earlier entries not shown")
        left, entered, stayed = set(diff.left), set(diff.entered), set(diff.stayed)
        for at in range(0, len(cells), TEXT_WIDTH):
            row = cells[at : at + TEXT_WIDTH]
            lines.append(f"{'#' + str(row[0].id):>8} " + "".join(cell.glyph for cell in row))
            lines.append("  a      " + "".join("-" if c.id in left else "^" if c.id in stayed else " " for c in row))
            lines.append("  b      " + "".join("+" if c.id in entered else "^" if c.id in stayed else " " for c in row))
        if not cells:
            lines.append("  (the tape is empty)")
        lines.append("  - left (sent in a only)  + entered (sent in b only)  ^ sent in both")
        lines.extend("  " + line for line in strip_legend_text()[:1])
        return "\n".join(line.rstrip() for line in lines)

    def _strips_html(self) -> str:
        """Both strips as row pairs of :data:`CHUNK` entries in one grid, so they break at the same entries."""
        diff, (strip_a, strip_b) = self._diff, self._strips
        sides = (("a", diff.a, strip_a, self._marks("a")), ("b", diff.b, strip_b, self._marks("b")))
        rows = []
        for chunk, at in enumerate(range(0, max(len(strip_a.cells), 1), CHUNK)):
            if chunk:
                rows.append('<div class="bub-diff-gap"></div>')
            for side, label, strip, marks in sides:
                cells = "".join(
                    cell_html(cell, mark, _SIGNS.get(mark or "", _NO_SIGN))
                    for cell in strip.cells[at : at + CHUNK]
                    for mark in (marks.get(cell.id),)
                )
                name = f"{side}: {label}"
                rows.append(
                    f'<span class="bub-diff-label" data-side="{side}" title="{esc(f"{side}: {label}")}">{esc(name)}'
                    f'</span><div class="bub-diff-side" data-side="{side}" data-chunk="{chunk}">'
                    f'<div class="bub-strip">{cells}</div></div>'
                )
        more = f'<div class="bub-more">… {strip_a.hidden} earlier entries</div>' if strip_a.hidden else ""
        return f'{more}<div class="bub-diff-strips">{"".join(rows)}</div>'

    def to_html(self) -> str:
        diff = self._diff
        key = (
            '<div class="bub-diff-key"><span class="bub-cell bub-kind-message bub-left">-7</span> left: sent in a, '
            'not in b · <span class="bub-cell bub-kind-message bub-entered">+7</span> entered: sent in b, not in a · '
            "no sign: the same in both</div>"
        )
        body = (
            f'<div class="bub-title">Context diff · tape <code>{esc(self._name)}</code></div>'
            + f'<div class="bub-note bub-like-with-like">{esc(LIKE_WITH_LIKE)}</div>'
            + self._strips_html()
            + key
            + legend_html()
            + diff._repr_html_()
        )
        return _DIFF_CSS + wrap(body, "bub-context-diff", attrs={"data-a": diff.a, "data-b": diff.b})

    def _build_widget(self) -> ipywidgets.Widget:
        root, self._body = refreshable_html(self, "bub-context-diff")
        return root
