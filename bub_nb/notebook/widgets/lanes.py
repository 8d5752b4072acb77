"""Agents as lanes: one row per agent of a notebook, one column per beat of their story, handoffs drawn across.

Hooks: the root VBox has ``bub-lanes``; in the HTML ``table.bub-lanes`` has one ``tr.bub-lane`` per agent
(``data-agent``, ``data-tape``) and one ``td`` per beat; a handoff's column holds ``td.bub-handoff-from`` on the
sender's lane (``data-to``, ``data-ownership``, ``data-reached``), ``td.bub-handoff-to`` on the receiver's and
``td.bub-handoff-across`` on the lanes between.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from bub_nb.notebook.widgets._display import WidgetDisplay, refreshable_html
from bub_nb.notebook.widgets._style import clip, colors, esc, ink, wrap
from bub_nb.tape.open import notebook_tapes
from bub_nb.tape.reports.story import Beat, story

if TYPE_CHECKING:
    import ipywidgets

    from bub_nb.tape import Tape

MAX_BEATS: Final = 60
GLYPHS: Final = {"prompt": "ask", "answer": "ans", "tool": "tool", "anchor": "anchor", "handoff": "→"}
#: The palette's concepts: a prompt is the user's, an answer the model's, a tool a tool call, a handoff an anchor.
CONCEPTS: Final = {"prompt": "user", "answer": "assistant", "tool": "tool_call", "anchor": "anchor"}
COLORS: Final = colors(CONCEPTS)
_ANCHOR: Final = COLORS["anchor"]
_STYLE: Final = (
    "<style>.bub-w .bub-lanes td{border-left:1px dotted var(--bub-line);padding:2px 4px;text-align:center;"
    "white-space:nowrap}.bub-w .bub-lanes th{text-align:left;padding-right:8px}"
    f".bub-w .bub-handoff-from,.bub-w .bub-handoff-to{{outline:2px solid {_ANCHOR};outline-offset:-2px;"
    "font-weight:600}"
    ".bub-w .bub-handoff-across{font-weight:600}"
    ".bub-w .bub-failed{outline-style:dashed;text-decoration:line-through}</style>"
)


class AgentLanes(WidgetDisplay):
    """The agents of the notebook whose tape is ``tape`` as lanes, their prompts, answers and handoffs in order."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        self._parts: dict[str, ipywidgets.HTML] = {}
        self.refresh()

    def refresh(self) -> list[Beat]:
        """Read the agents' tapes again."""
        self.tapes = notebook_tapes(self.tape)
        self.beats = story(self.tapes)
        if self._widget is not None and self._parts:
            self._parts["body"].value = self.to_html()
        return self.beats

    def _cells(self) -> tuple[list[str], list[Beat], list[dict[str, str]]]:
        """The lanes (every agent that did something; all of them before anything happened), the beats shown
        and, per beat, each lane's cell."""
        active = [agent for agent in self.tapes if any(agent in (beat.agent, beat.to) for beat in self.beats)]
        agents = active or list(self.tapes)
        shown = self.beats[-MAX_BEATS:]
        columns = []
        for beat in shown:
            cells = dict.fromkeys(agents, "")
            cells[beat.agent] = GLYPHS[beat.kind]
            if beat.kind == "handoff" and beat.to in cells:
                low, high = sorted((agents.index(beat.agent), agents.index(beat.to)))
                for lane in agents[low + 1 : high]:
                    cells[lane] = "|"
                cells[beat.agent] = f"→{beat.to}" if beat.reached else f"×→{beat.to}"
                cells[beat.to] = f"←{beat.agent}" if beat.reached else ""
            columns.append(cells)
        return agents, shown, columns

    def to_text(self) -> str:
        agents, shown, columns = self._cells()
        width = max((len(agent) for agent in agents), default=4)
        cell = max([3, *(len(c[a]) for c in columns for a in agents)])
        counted = f"{len(agents)} agent{'s' * (len(agents) != 1)}, {len(self.beats)} beat{'s' * (len(self.beats) != 1)}"
        lines = [f"Agents as lanes: {counted}"]
        for agent in agents:
            row = " ".join(f"{column[agent] or '·':^{cell}}" for column in columns)
            lines.append(f"  {agent:<{width}} {row}".rstrip())
        for number, beat in enumerate(shown, 1):
            if beat.kind == "handoff":
                state = "" if beat.reached else ", failed"
                lines.append(f"  step {number}: {beat.agent} → {beat.to} ({beat.ownership}{state}) anchor {beat.name}")
        return "\n".join(lines)

    def to_html(self) -> str:
        agents, shown, columns = self._cells()
        head = "".join(f'<th class="bub-num">{number}</th>' for number in range(1, len(shown) + 1))
        rows = []
        for agent in agents:
            cells = [_cell(agent, beat, column) for beat, column in zip(shown, columns, strict=True)]
            rows.append(
                f'<tr class="bub-lane" data-agent="{esc(agent)}" data-tape="{esc(self.tapes[agent].name)}">'
                f"<th>{esc(agent)}</th>{''.join(cells)}</tr>"
            )
        hidden = len(self.beats) - len(shown)
        note = f'<div class="bub-note">… {hidden} earlier beats not shown</div>' if hidden else ""
        legend = " · ".join(f"{glyph} {kind}" for kind, glyph in GLYPHS.items())
        body = (
            f"<div class='bub-section'>Agents as lanes</div>{note}<table class='bub-lanes'>"
            f"<thead><tr><th>agent</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<div class='bub-legend'>{esc(legend)} · ← received a handoff · × a handoff that failed</div>"
        )
        return _STYLE + wrap(body, "bub-lanes-view")

    def _build_widget(self) -> ipywidgets.Widget:
        root, body = refreshable_html(self, "bub-lanes")
        self._parts = {"body": body}
        return root


def _cell(agent: str, beat: Beat, column: dict[str, str]) -> str:
    text = column[agent]
    if not text:
        return "<td></td>"
    if beat.kind == "handoff" and agent == beat.agent:
        failed = "" if beat.reached else " bub-failed"
        title = f"anchor {beat.name}: {beat.text}" if beat.text else f"anchor {beat.name}"
        return (
            f'<td class="bub-handoff-from{failed}" data-to="{esc(beat.to)}" data-ownership="{esc(beat.ownership)}" '
            f'data-reached="{str(beat.reached).lower()}" title="{esc(clip(title, 300))}">{esc(text)}</td>'
        )
    if beat.kind == "handoff" and agent == beat.to:
        return f'<td class="bub-handoff-to" title="anchor {esc(beat.name)}">{esc(text)}</td>'
    if beat.kind == "handoff":
        return f'<td class="bub-handoff-across">{esc(text)}</td>'
    color = COLORS.get(beat.kind, "")
    on = ink(color) if color else "inherit"
    return (
        f'<td title="#{beat.entry_id} {esc(clip(beat.text, 200))}"><span style="background:{color};color:{on};'
        f'border-radius:6px;padding:0 4px">{esc(text)}</span></td>'
    )
