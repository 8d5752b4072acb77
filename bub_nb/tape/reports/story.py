"""The story of a notebook's agents: every agent's tape read together, in the order things happened.

A notebook's tapes are its own (the unnamed agent, ``main``) and ``<tape>~<agent>`` for each named agent, in the
same store (``bub_nb.tape.open.notebook_tapes`` finds them). Each prompt, answer, tool call, anchor and handoff
between agents becomes a :class:`Beat`; a handoff is one beat, on the sender's lane, that reaches the receiver's
lane once the receiver's anchor exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from bub_nb.errors import TapeAddressError
from bub_nb.tape.entries import is_phase_anchor
from bub_nb.tape.events import CONTEXT_HANDOFF, HANDOFF_FAILED
from bub_nb.tape.names import TapeAddress
from bub_nb.tape.text import entry_text

if TYPE_CHECKING:
    from bub_nb.tape import Tape, TapeEntry

BOOTSTRAP: Final = "session/start"
_AGENT: Final = "agent:"


@dataclass(frozen=True, slots=True)
class Beat:
    """One thing an agent did: ``kind`` is ``prompt``, ``answer``, ``tool``, ``anchor`` or ``handoff``.

    A ``handoff`` names its receiver (``to``), its ``ownership`` and whether it ``reached`` the receiver's tape.
    """

    agent: str
    entry_id: int
    date: str
    kind: str
    text: str
    name: str | None = None
    to: str | None = None
    ownership: str | None = None
    reached: bool = True


def story(tapes: Mapping[str, Tape]) -> list[Beat]:
    """Every agent's beats, merged in the order they were written (by date; a tie keeps the agents' order)."""
    read = {agent: tape.read() if tape.store.exists(tape.name) else [] for agent, tape in tapes.items()}
    received = {_named(_record(e).get("content", {}).get("anchor")) for entries in read.values() for e in entries}
    failed = {
        (agent, e.payload.get("data", {}).get("anchor"))
        for agent, entries in read.items()
        for e in entries
        if e.kind == "event" and e.payload.get("name") == HANDOFF_FAILED and isinstance(e.payload.get("data"), dict)
    }
    beats: list[tuple[str, int, int, Beat]] = []
    for order, (agent, entries) in enumerate(read.items()):
        for entry in entries:
            beat = _beat(agent, entry, tapes[agent], received, failed)
            if beat is not None:
                beats.append((entry.date, order, entry.id, beat))
    return [beat for *_, beat in sorted(beats, key=lambda item: item[:3])]


def _record(entry: TapeEntry) -> dict[str, Any]:
    state = entry.payload.get("state") if entry.kind == "anchor" else None
    record = state.get(CONTEXT_HANDOFF) if isinstance(state, dict) else None
    return record if isinstance(record, dict) and isinstance(record.get("content"), dict) else {}


def _beat(agent: str, entry: TapeEntry, tape: Tape, received: set[Any], failed: set[Any]) -> Beat | None:
    date, text = entry.date, " ".join(entry_text(entry).split())
    if entry.kind == "message" and entry.payload.get("role") in ("user", "assistant") and text:
        kind = "prompt" if entry.payload.get("role") == "user" else "answer"
        return Beat(agent, entry.id, date, kind, text)
    if entry.kind == "tool_call":
        return Beat(agent, entry.id, date, "tool", text)
    if entry.kind != "anchor" or not is_phase_anchor(entry.name) or entry.name == BOOTSTRAP:
        return None
    record = _record(entry)
    if not record:
        return Beat(agent, entry.id, date, "anchor", text, name=entry.name)
    if record.get("from") != _AGENT + agent:
        return None  # a handoff received: drawn on its sender's lane
    content = record["content"]
    to = str(record.get("to", ""))[len(_AGENT) :]
    reached = (tape.name, entry.id) in received
    said = " · ".join(str(content[key]) for key in ("reason", "summary") if content.get(key))
    return Beat(
        agent,
        entry.id,
        date,
        "handoff",
        said,
        name=entry.name,
        to=to,
        ownership=str(content.get("ownership")),
        reached=reached and (agent, entry.id) not in failed,
    )


def _named(address: Any) -> tuple[str, int] | None:
    """``(tape, id)`` an entry address names, the tape without its owner (a database's ``owner/name``)."""
    try:
        parsed = TapeAddress.parse(address)
    except TapeAddressError:
        return None
    return (parsed.tape.rpartition("/")[2], int(parsed.target)) if parsed.kind == "entry" else None


def story_markdown(tapes: Mapping[str, Tape]) -> str:
    """The notebook's agents' story as Markdown: who is who, then every beat in order, then who held it when."""
    beats = story(tapes)
    lines = ["# The story across agents", ""]
    lines += [f"- **{agent}** on tape `{tape.name}`" for agent, tape in tapes.items()]
    lines.append("")
    held: list[str] = []
    for number, beat in enumerate(beats, 1):
        lines.append(f"{number}. {_line(beat)}")
        if beat.kind == "handoff" and beat.reached and beat.ownership == "transfer" and beat.to:
            held.append(f"**{beat.to}** from step {number}")
    nobody = "nobody was handed it; each agent ran when asked"
    lines += ["", "Who held the conversation: " + ("; ".join(held) if held else nobody) + "."]
    return "\n".join(lines) + "\n"


def _line(beat: Beat) -> str:
    text = beat.text if len(beat.text) <= 300 else beat.text[:299] + "…"
    where = f"`#{beat.entry_id}`"
    if beat.kind == "handoff":
        done = "" if beat.reached else " — **failed: the receiver's tape does not hold it**"
        said = f": {text}" if text else ""
        return f"🤝 **{beat.agent} → {beat.to}** ({beat.ownership}) ⚓ {beat.name} {where}{said}{done}"
    label = {"prompt": "was asked", "answer": "answered", "tool": "called", "anchor": "wrote ⚓"}[beat.kind]
    return f"**{beat.agent}** {label} {where}: {text}"
