"""The tape timeline: entries per phase and over time, anchors marked, and the tokens of every turn.

Hooks: the root VBox has ``bub-timeline``; in the HTML, ``table.bub-phases`` has one
``tr.bub-phase`` per phase (``data-anchor``, ``data-entries``, ``data-cost``: empty when unpriced),
``.bub-columns`` holds one ``.bub-column`` per time bucket (``data-start``, ``data-entries``) with
``.bub-tick`` on buckets where a phase anchor was written, and ``table.bub-turns`` one ``tr.bub-turn`` per ``run`` event
(``data-entry-id``, ``data-prompt-tokens``, ``data-completion-tokens``); a request refused as over the window is a
``tr.bub-turn.bub-refused`` with a red bar, and with a known window every bar cell holds a ``.bub-limit`` line. With a
turn, ``div.bub-gauge`` draws the last request's tokens against the window (see ``_gauge``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from bub_nb.agent.models import resolve_model
from bub_nb.agent.models.base import context_window_of
from bub_nb.context import view_of_turn
from bub_nb.context.request import gauge_text
from bub_nb.errors import BubNbError
from bub_nb.notebook.widgets._activity import Activity, Phase, RunSummary, measure
from bub_nb.notebook.widgets._display import WidgetDisplay, refreshable_html
from bub_nb.notebook.widgets._gauge import gauge_html
from bub_nb.notebook.widgets._messages import folded, summary_states
from bub_nb.notebook.widgets._style import bar, clip, esc, wrap
from bub_nb.notebook.widgets._timeline_bars import (
    COLORS,
    GLYPHS,
    KINDS,
    MIN_COLUMNS,
    TEXT_BAR,
    activity_words,
    column_html,
    kind_bar_html,
    kind_bar_text,
    turn_html,
    turn_text,
    turns_legend_html,
    turns_peak,
    window_limit,
)
from bub_nb.tape.locations import readable_tape_name
from bub_nb.tape.reports.prices import current_prices, format_cost

if TYPE_CHECKING:
    import ipywidgets

    from bub_nb.tape import Tape

MAX_PHASES: Final = 30
MAX_TURNS: Final = 50
PHASE_BAR_PX: Final = 220


def _phase_label(phase: Phase) -> str:
    return f"anchor {phase.anchor}" if phase.anchor is not None else "(before the first anchor)"


def _count(number: int, one: str, many: str | None = None) -> str:
    return f"{number} {one if number == 1 else many or one + 's'}"


def _cost(phase: Phase) -> str:
    if not phase.turns:
        return ""
    return "–" if phase.cost is None else format_cost(phase.cost)


class TapeTimeline(WidgetDisplay):
    """A tape's activity: how many entries each phase holds, when they were written, what each turn cost.

    With ``model`` (a model or a spec), the turn bars are drawn against its context window; without one, against
    the window the newest refusal named."""

    def __init__(
        self,
        tape: Tape,
        *,
        follow: bool = False,
        prices: Mapping[str, Mapping[str, float]] | None = None,
        model: Any = None,
    ) -> None:
        self.tape = tape
        self._name = readable_tape_name(tape)
        self.prices = prices
        self.model = None if model is None else resolve_model(model)
        self._parts: dict[str, Any] = {}
        self._activity = self._measure()
        if follow:  # refresh as the tape's owner writes it
            self.follow()

    def _prices(self) -> Mapping[str, Mapping[str, float]]:
        """The prices given, else the ones in use (``bub_nb.set_prices``, ``BUB_PRICES``), read at each refresh."""
        return current_prices() if self.prices is None else self.prices

    def _measure(self) -> Activity:
        """Count the tape's activity, and keep the states of its anchors that carry a summary."""
        self._summaries = summary_states(entries := self.tape.read())
        return measure(entries, self._prices())

    @property
    def activity(self) -> Activity:
        return self._activity

    @property
    def limit(self) -> int | None:
        """The context window the turn bars are drawn against: the model's, else the one a refusal named."""
        return window_limit(self._activity.refusals, None if self.model is None else context_window_of(self.model))

    @property
    def gauge(self) -> tuple[int, int | None] | None:
        """The last turn's last request against the window: its rebuilt request's tokens (a run's usage adds up
        every call it made, an overflow's summary included), else the prompt tokens it reported."""
        if not self._activity.turns:
            return None
        last = self._activity.turns[-1]
        try:
            return view_of_turn(self.tape, last.entry_id).total_tokens, self.limit
        except BubNbError:
            return None if last.prompt_tokens is None else (last.prompt_tokens, self.limit)

    def _rows(self) -> tuple[list[RunSummary], int]:
        """The turns and refused requests shown, in tape order, and how many earlier ones are not."""
        rows = sorted((*self._activity.turns, *self._activity.refusals), key=lambda turn: turn.entry_id)
        return rows[-MAX_TURNS:], max(0, len(rows) - MAX_TURNS)

    def refresh(self) -> Activity:
        """Read the tape again; entries written since are counted."""
        self._activity = self._measure()
        if self._widget is not None and self._parts:
            self._parts["body"].value = self.to_html()
        return self._activity

    def _summary(self) -> str:
        activity = self._activity
        prompt = sum(t.prompt_tokens or 0 for t in activity.turns)
        completion = sum(t.completion_tokens or 0 for t in activity.turns)
        parts = [
            _count(activity.entries, "entry", "entries"),
            _count(len(activity.anchors), "phase anchor"),
            _count(activity.memory_anchors, "memory anchor"),
            _count(len(activity.turns), "turn"),
        ]
        if activity.turns:
            parts.append(f"{prompt} prompt + {completion} completion tokens reported")
        if activity.refusals:
            parts.append(_count(len(activity.refusals), "request") + " refused as over the window")
        return " · ".join(parts)

    # -- text -------------------------------------------------------------------------------------

    def to_text(self) -> str:
        activity = self._activity
        lines = [f"Timeline of tape {self._name}: {self._summary()}"]
        lines.append("Phases")
        phases = activity.phases[-MAX_PHASES:]
        if len(activity.phases) > len(phases):
            lines.append(f"  … {len(activity.phases) - len(phases)} earlier phases not shown")
        peak = max((p.entries for p in phases), default=0)
        width = max((len(_phase_label(p)) for p in phases), default=0)
        for phase in phases:
            span = f"#{phase.first_id}–#{phase.last_id}"
            tokens = (
                f"  {_count(phase.turns, 'turn')}, {phase.prompt_tokens}+{phase.completion_tokens} tokens, "
                f"cost {_cost(phase)}"
                if phase.turns
                else ""
            )
            lines.append(
                f"  {clip(_phase_label(phase), 40):<{min(width, 40)}}  {span:>13} {phase.entries:>6}  "
                f"{kind_bar_text(phase.kinds, peak):<{TEXT_BAR}}{tokens}"
            )
            if (state := self._summaries.get(phase.anchor_id or 0)) is not None:
                lines.append(f"    summary: {clip(' '.join(str(state['summary']).split()), 90)}")
        if not phases:
            lines.append("  (the tape is empty)")
        lines.append(f"Activity per {activity.step} (UTC)")
        lines.extend(self._buckets_text())
        if self.gauge is not None:
            lines.append(f"Window: last turn {gauge_text(*self.gauge)}")
        lines.append("Turns (tokens each run reported)")
        lines.extend(self._turns_text())
        lines.append("  " + "  ".join(f"{GLYPHS[kind]} {label}" for kind, label in KINDS))
        return "\n".join(lines)

    def _buckets_text(self) -> list[str]:
        buckets = self._activity.buckets
        if not buckets:
            return ["  (no dated entries)"]
        peak = max(b.entries for b in buckets)
        lines = []
        for bucket in buckets:
            anchors = "  anchor " + ", ".join(name for _, name in bucket.anchors) if bucket.anchors else ""
            lines.append(
                f"  {bucket.start:%Y-%m-%d %H:%M}  {bucket.entries:>6}  "
                f"{kind_bar_text(bucket.kinds, peak):<{TEXT_BAR}}"
                f"{anchors}"
            )
        return lines

    def _turns_text(self) -> list[str]:
        shown, hidden = self._rows()
        if not shown:
            return ["  (no model runs yet)"]
        lines = [] if not hidden else [f"  … {hidden} earlier turns not shown"]
        lines.append(f"  {'turn':>5} {'entry':>7}  {'prompt':>7} {'compl.':>7}  {'ms':>7}  {'model':<16} bar")
        limit = self.limit
        peak = turns_peak(shown, limit)
        lines.extend(turn_text(turn, peak, limit) for turn in shown)
        window = "" if limit is None else f"  | window {limit}"
        lines.append(
            f"  █ prompt  ▒ completion  X refused or over the window{window}  (a turn of several calls adds them up)"
        )
        return lines

    # -- HTML -------------------------------------------------------------------------------------

    def to_html(self) -> str:
        activity = self._activity
        body = (
            f'<div class="bub-title">Timeline · tape <code>{esc(self._name)}</code></div>'
            f'<div class="bub-note">{esc(self._summary())}</div>'
            f"{self._phases_html()}"
            f'<div class="bub-section">Activity per {esc(activity.step)} (UTC)</div>{self._columns_html()}'
            f"{self._legend_html()}"
            f'<div class="bub-section">Turns · tokens each run reported</div>'
            f'<div class="bub-turns-window">{self._gauge_html()}{self._turns_html()}</div>'
        )
        return wrap(body, "bub-timeline")

    def _phases_html(self) -> str:
        phases = self._activity.phases[-MAX_PHASES:]
        peak = max((p.entries for p in phases), default=0)
        rows = []
        for phase in phases:
            tokens = f"{phase.prompt_tokens} + {phase.completion_tokens}" if phase.turns else ""
            cost = "" if phase.cost is None or not phase.turns else f"{phase.cost:.10g}"
            label = folded(esc(clip(_phase_label(phase), 40)), self._summaries.get(phase.anchor_id or 0))
            rows.append(
                f'<tr class="bub-phase" data-anchor="{esc(phase.anchor or "")}" '
                f'data-entries="{phase.entries}" data-cost="{cost}"><td title="{esc(_phase_label(phase))}">{label}</td>'
                f'<td class="bub-num">#{phase.first_id}–#{phase.last_id}</td><td class="bub-num">{phase.entries}</td>'
                f"<td>{kind_bar_html(phase.kinds, PHASE_BAR_PX * phase.entries / peak if peak else 0)}</td>"
                f'<td class="bub-num">{phase.turns or ""}</td><td class="bub-num">{tokens}</td>'
                f'<td class="bub-num">{esc(_cost(phase))}</td></tr>'
            )
        hidden = len(self._activity.phases) - len(phases)
        note = f'<div class="bub-note">… {hidden} earlier phases not shown</div>' if hidden else ""
        if not rows:
            rows.append('<tr><td colspan="7" class="bub-muted">(the tape is empty)</td></tr>')
        return (
            f'<div class="bub-section">Phases</div>{note}<table class="bub-phases"><thead><tr><th>phase</th>'
            '<th class="bub-num">ids</th><th class="bub-num">entries</th><th></th><th class="bub-num">turns</th>'
            '<th class="bub-num">prompt + completion</th><th class="bub-num">cost</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
        )

    def _columns_html(self) -> str:
        buckets = self._activity.buckets
        if not buckets:
            return '<div class="bub-muted">(no dated entries)</div>'
        if len(buckets) < MIN_COLUMNS:  # one or two columns draw no picture: say it in words
            return activity_words(buckets, self._activity.step)
        peak = max(b.entries for b in buckets)
        columns = "".join(column_html(bucket, peak) for bucket in buckets)
        first, last = buckets[0].start, buckets[-1].start
        return (
            f'<div class="bub-columns">{columns}</div>'
            f'<div class="bub-axis"><span>{first:%Y-%m-%d %H:%M}</span><span>{last:%Y-%m-%d %H:%M}</span></div>'
        )

    def _legend_html(self) -> str:
        items = "".join(f"<span>{bar(14, COLORS[kind])} {esc(label)}</span>" for kind, label in KINDS)
        tick = '<span><span class="bub-tick-key"></span> phase anchor written</span>'
        return f'<div class="bub-legend">{items}{tick}</div>'

    def _gauge_html(self) -> str:
        return "" if self.gauge is None else gauge_html(*self.gauge, what="last turn:")

    def _turns_html(self) -> str:
        shown, hidden = self._rows()
        if not shown:
            return '<div class="bub-muted">(no model runs yet)</div>'
        limit = self.limit
        peak = turns_peak(shown, limit)
        rows = "".join(turn_html(turn, peak, limit) for turn in shown)
        note = f'<div class="bub-note">… {hidden} earlier turns not shown</div>' if hidden else ""
        return (
            f'{note}<table class="bub-turns"><thead><tr><th class="bub-num">turn</th><th class="bub-num">entry</th>'
            '<th>phase</th><th>model</th><th class="bub-num">prompt</th><th class="bub-num">completion</th>'
            f'<th></th><th class="bub-num">ms</th></tr></thead><tbody>{rows}</tbody></table>{turns_legend_html(limit)}'
        )

    # -- the widget -------------------------------------------------------------------------------

    def _build_widget(self) -> ipywidgets.Widget:
        root, body = refreshable_html(self, "bub-timeline")
        self._parts = {"body": body}
        return root
