"""The memory zone widget: long-term memory, today's and recent notes, and every version on the tape.

Hooks: the root VBox has ``bub-memory-view``, the version dropdown ``bub-memory-version``, the
button ``bub-refresh``. In the HTML, sections are ``.bub-memory-long-term``, ``.bub-memory-today``,
``.bub-memory-recent``, ``.bub-memory-prompt`` (the ``<memory>`` block) and the history table
``table.bub-memory-history`` with one ``tr.bub-memory-version`` per zone (``data-version``,
``data-entry-ids``; ``bub-current`` on the zone reads use).
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any, Final

from bub_nb.context.tokens import count_text_tokens
from bub_nb.memory import MemorySnapshot, MemoryVersion, MemoryZone, MemoryZoneError, parse_zone
from bub_nb.memory.snapshot import RECENT_DAYS, as_date
from bub_nb.notebook.widgets._display import WidgetDisplay
from bub_nb.notebook.widgets._style import esc, wrap
from bub_nb.tape.locations import readable_tape_name

if TYPE_CHECKING:
    import ipywidgets

    from bub_nb.tape import Tape

NOTE_CHARS: Final = 6000
CURRENT: Final = 0  # the version picker's value for "the current zone"; real versions start at 1


class MemoryView(WidgetDisplay):
    """The memory zone of a tape (or a ``MemoryZone``): what is remembered and how it got there.

    Shows the current version unless ``version`` picks an older one; older versions stay on the
    tape because memory is rewritten by appending. ``today`` (default: the UTC date when
    rendered) decides which notes are today's and which are recent.
    """

    def __init__(self, tape_or_zone: Tape | MemoryZone, *, version: int | None = None, today: date | str | None = None):
        self.zone = tape_or_zone if isinstance(tape_or_zone, MemoryZone) else MemoryZone(tape_or_zone)
        self.today = today
        self._version = version
        self._parts: dict[str, Any] = {}
        self._load()

    @property
    def tape(self) -> Tape:
        return self.zone.tape

    @property
    def snapshot(self) -> MemorySnapshot:
        """The memory shown: the current zone's, or the chosen version's."""
        return self._snapshot

    @property
    def history(self) -> tuple[MemoryVersion, ...]:
        return self._history

    def refresh(self) -> MemorySnapshot:
        """Read the zone again; a new version written since is picked up."""
        self._load()
        self._update_widget()
        return self._snapshot

    def show_version(self, version: int | None) -> MemorySnapshot:
        """Show one version from the history (``None``: the current one)."""
        previous = self._version
        self._version = version
        try:
            self._load()
        except MemoryZoneError:
            self._version = previous
            raise
        self._update_widget()
        return self._snapshot

    def _load(self) -> None:
        self._history = self.zone.history()
        if self._version is None:
            self._snapshot = self.zone.read()
            self._row = next((row for row in self._history if row.current), None)
            return
        row = next((row for row in reversed(self._history) if row.version == self._version), None)
        if row is None:
            known = ", ".join(str(r.version) for r in self._history) or "(none)"
            raise MemoryZoneError(
                f"Memory version {self._version!r} is not on tape {self.tape.name!r}; versions: {known}"
            )
        self._row = row
        self._snapshot = parse_zone(self.tape.read(row.open_id + 1, row.seal_id), row.version)

    # -- the parts, shared by text and HTML -------------------------------------------------------

    def _day(self) -> date:
        return as_date(self.today)

    def _where(self) -> str:
        row = self._row
        if row is None:
            return "empty (no zone written yet)"
        which = "current" if row.current else "older version"
        return (
            f"version {row.version} ({which}) · entries #{row.open_id}–#{row.seal_id} · "
            f"sealed {row.date[:19].replace('T', ' ')} UTC"
        )

    def _older(self) -> int:
        day = self._day().isoformat()
        recent = {note.date for note in self._snapshot.recent(RECENT_DAYS, self._day())}
        return sum(1 for note in self._snapshot.dailies if note.date < day and note.date not in recent)

    def _prompt_block(self) -> str:
        return self._snapshot.get_context(self._day())

    # -- text -------------------------------------------------------------------------------------

    def to_text(self) -> str:
        snapshot, day = self._snapshot, self._day()
        lines = [f"Memory zone of tape {readable_tape_name(self.tape)}: {self._where()}", "Long-term memory"]
        lines.extend(_indent(snapshot.long_term or "(empty)"))
        lines.append(f"Today's notes ({day.isoformat()})")
        lines.extend(_indent(_note_body(snapshot.daily(day), day.isoformat()) or "(none)"))
        lines.append(f"Recent notes ({RECENT_DAYS} days before today)")
        recent = snapshot.recent(RECENT_DAYS, day)
        for note in recent:
            lines.append(f"  {note.date}")
            lines.extend(_indent(_note_body(note.content, note.date), "    "))
        if not recent:
            lines.append("  (none)")
        if older := self._older():
            lines.append(
                f"  + {older} older daily notes kept until the retention limit ({self.zone.retention_days} days)"
            )
        block = self._prompt_block()
        lines.append(
            f"In the system prompt: ~{count_text_tokens(block)} tokens" if block else "In the system prompt: nothing"
        )
        lines.append(f"History ({len(self._history)} versions; every version stays on the tape)")
        lines.append(f"  {'version':>9}  {'entries':<16} {'sealed':<19}  {'long-term':>9}  {'daily notes':>11}")
        for row in self._history:
            marker = "*" if row.current else " "
            span = f"#{row.open_id}–#{row.seal_id} ({len(row.entry_ids)})"
            sealed = row.date[:19].replace("T", " ")
            lines.append(
                f"  {marker}{row.version:>8}  {span:<16} {sealed:<19}  {row.long_term_chars:>9}  {row.daily_count:>11}"
            )
        if not self._history:
            lines.append("  (no versions yet)")
        return "\n".join(lines)

    # -- HTML -------------------------------------------------------------------------------------

    def _body_html(self) -> str:
        snapshot, day = self._snapshot, self._day()
        parts = [
            f'<div class="bub-title">Memory · tape <code>{esc(readable_tape_name(self.tape))}</code></div>'
            f'<div class="bub-note">{esc(self._where())}</div>'
        ]
        parts.append(_section("Long-term memory", "bub-memory-long-term", snapshot.long_term))
        today = _note_body(snapshot.daily(day), day.isoformat())
        parts.append(_section(f"Today's notes · {day.isoformat()}", "bub-memory-today", today))
        recent = snapshot.recent(RECENT_DAYS, day)
        notes = "".join(
            f'<details open data-date="{esc(n.date)}"><summary class="bub-mono">{esc(n.date)}</summary>'
            f"<pre>{esc(_clip(_note_body(n.content, n.date)))}</pre></details>"
            for n in recent
        )
        older = self._older()
        if older:
            notes += f'<div class="bub-note">+ {older} older daily notes kept until the retention limit</div>'
        parts.append(
            f'<div class="bub-section">Recent notes · {RECENT_DAYS} days before today</div>'
            f'<div class="bub-memory-recent">{notes or "<span class=bub-muted>(none)</span>"}</div>'
        )
        block = self._prompt_block()
        if block:
            parts.append(
                f'<details class="bub-memory-prompt"><summary>The &lt;memory&gt; block in the system prompt '
                f"(~{count_text_tokens(block)} tokens)</summary><pre>{esc(block)}</pre></details>"
            )
        parts.append(self._history_html())
        return "".join(parts)

    def _history_html(self) -> str:
        rows = "".join(
            f'<tr class="bub-memory-version{" bub-current" if row.current else ""}" data-version="{row.version}"'
            f' data-entry-ids="{" ".join(map(str, row.entry_ids))}">'
            f'<td class="bub-num">{"● " if row.current else ""}{row.version}</td>'
            f'<td title="{esc(", ".join(f"#{i}" for i in row.entry_ids))}">#{row.open_id}–#{row.seal_id}'
            f' <span class="bub-muted">({len(row.entry_ids)})</span></td>'
            f"<td>{esc(row.date[:19].replace('T', ' '))}</td>"
            f'<td class="bub-num">{row.long_term_chars}</td><td class="bub-num">{row.daily_count}</td></tr>'
            for row in reversed(self._history)
        )
        if not rows:
            rows = '<tr><td colspan="5" class="bub-muted">(no versions yet)</td></tr>'
        return (
            f'<div class="bub-section">History · {len(self._history)} versions, every one still on the tape</div>'
            '<table class="bub-memory-history"><thead><tr><th class="bub-num">version</th><th>entries</th>'
            '<th>sealed (UTC)</th><th class="bub-num">long-term chars</th><th class="bub-num">daily notes</th>'
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )

    def to_html(self) -> str:
        return wrap(self._body_html(), "bub-memory-view")

    # -- the widget -------------------------------------------------------------------------------

    def _version_options(self) -> list[tuple[str, int]]:
        older = [(f"version {row.version}", row.version) for row in reversed(self._history) if not row.current]
        return [("current", CURRENT), *older]

    def _build_widget(self) -> ipywidgets.Widget:
        import ipywidgets as w

        versions = w.Dropdown(
            options=self._version_options(),
            value=self._version or CURRENT,
            description="version",
            layout=w.Layout(width="auto", min_width="16em"),
            style={"description_width": "5em"},
        )
        versions.add_class("bub-memory-version")
        refresh = w.Button(description="refresh", icon="refresh", layout=w.Layout(width="auto"))
        refresh.add_class("bub-refresh")
        body = w.HTML()
        root = w.VBox([w.HBox([versions, refresh]), body], layout=w.Layout(width="100%"))
        root.add_class("bub-memory-view")
        self._parts = {"versions": versions, "body": body}
        versions.observe(self._on_version, names="value")
        refresh.on_click(lambda _button: self.refresh())
        self._widget = root
        self._update_widget()
        return root

    def _on_version(self, change: dict[str, Any]) -> None:
        if not self._parts.get("syncing"):
            self.show_version(change["new"] or None)

    def _update_widget(self) -> None:
        if self._widget is None or not self._parts:
            return
        versions = self._parts["versions"]
        self._parts["syncing"] = True
        try:
            versions.options = self._version_options()
            shown = self._version or CURRENT
            versions.value = shown if shown in {value for _, value in versions.options} else CURRENT
        finally:
            self._parts["syncing"] = False
        self._parts["body"].value = self.to_html()


def _note_body(content: str | None, day: str) -> str:
    """A daily note without its ``# <day>`` heading: the view already names the day beside it."""
    text = content or ""
    first, _, rest = text.partition("\n")
    return rest.lstrip("\n") if first.strip() == f"# {day}" else text


def _clip(text: str) -> str:
    return text if len(text) <= NOTE_CHARS else text[:NOTE_CHARS] + f"\n… ({len(text) - NOTE_CHARS} more characters)"


def _indent(text: str, prefix: str = "  ") -> list[str]:
    return [prefix + line if line else "" for line in _clip(text).splitlines()] or [prefix]


def _section(title: str, css_class: str, text: str) -> str:
    body = f"<pre>{esc(_clip(text))}</pre>" if text else '<span class="bub-muted">(none)</span>'
    return f'<div class="bub-section">{esc(title)}</div><div class="{css_class}">{body}</div>'
