"""The ``phases`` mode: every earlier phase as its anchor's state, compact and in order, then the current phase.

History becomes a chain of summaries. A phase starts at a phase anchor (any anchor but ``memory/...``,
as for ``LAST_ANCHOR``: the bootstrap ``session/start``, a user's handoff, ``auto_handoff/context_overflow``)
and runs to the next one. The current phase is sent in full, exactly as ``LAST_ANCHOR`` sends it; each
earlier phase becomes one assistant message made from its anchor: the name and the ids the phase covered,
then ``summary`` and ``next_steps`` with their ``[#id]`` citations, then the rest of the state as JSON.
The bookkeeping a summarizing handoff adds (``sources``, ``range``, ``summarized_by``, ``uncited``,
``removed_citations``) stays on the tape and out of the message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

from bub_nb.context.messages import Message, is_hidden
from bub_nb.context.strategies import LastAnchor, Selection
from bub_nb.context.tokens import count_message_tokens
from bub_nb.tape.citations import BOOKKEEPING_KEYS, CITING_TITLES
from bub_nb.tape.entries import TapeEntry, is_phase_anchor

if TYPE_CHECKING:
    from bub_nb.tape import Tape

#: State keys a summarizing handoff writes for readers and tools, not for the model.
BOOKKEEPING: Final = frozenset(BOOKKEEPING_KEYS)
#: Text keys shown first, in this order, under these headings.
LEADING: Final = tuple(CITING_TITLES.items())
#: How an earlier phase's message opens: ``[Earlier phase: <anchor name> (#first-#last)]``.
EARLIER_PHASE: Final = "[Earlier phase: "
_CARRIED_LINE: Final = re.compile(r"^\s*(?:[-*]\s+)?Carried over:")
#: Other state values are clipped to this many characters: an error text must not outweigh the summaries.
VALUE_CHARS: Final = 300


@dataclass(frozen=True, slots=True)
class Phases:
    """Every earlier phase anchor's state, compact and oldest first, then the current phase in full.

    With ``max_tokens`` the chain is bounded: the oldest earlier phases are left out until the rest take at
    most that many tokens, and one message says which were left out (their anchors stay on the tape).
    """

    label: ClassVar[str] = "phases"
    max_tokens: int | None = None

    def select(self, tape: Tape) -> Selection:
        current = LastAnchor().select(tape)
        if current.anchor is None:
            return current
        # The index lists anchors without reading them; only the earlier phase anchors are read, once each.
        refs = tape.store.anchors(tape.name)
        earlier = [ref.id for ref in refs if is_phase_anchor(ref.name) and ref.id < current.anchor.id]
        preamble: list[tuple[Message, int]] = []
        for index, entry_id in enumerate(earlier):
            entry = tape.get(entry_id)
            if is_hidden(entry):
                continue
            next_id = earlier[index + 1] if index + 1 < len(earlier) else current.anchor.id
            preamble.append((phase_message(entry, next_id - 1, carried=not preamble), entry_id))
        if self.max_tokens is not None:
            preamble = bounded_chain(preamble, self.max_tokens, current.anchor.id - 1)
        return Selection(current.entries, current.anchor, preamble=tuple(preamble))


def bounded_chain(preamble: list[tuple[Message, int]], max_tokens: int, last_id: int) -> list[tuple[Message, int]]:
    """The newest earlier phases whose messages fit ``max_tokens``, after one message naming those left out."""
    if sum(count_message_tokens(message) for message, _ in preamble) <= max_tokens:
        return preamble
    kept: list[tuple[Message, int]] = []
    used = count_message_tokens(left_out_message(len(preamble), preamble[0][1] if preamble else 1, last_id))
    for message, entry_id in reversed(preamble):
        used += count_message_tokens(message)
        if used > max_tokens:
            break
        kept.insert(0, (message, entry_id))
    dropped = preamble[: len(preamble) - len(kept)]
    last_dropped = kept[0][1] - 1 if kept else last_id
    return [(left_out_message(len(dropped), dropped[0][1], last_dropped), dropped[0][1]), *kept]


def left_out_message(count: int, first_id: int, last_id: int) -> Message:
    """What the model reads in place of the oldest earlier phases a bounded chain leaves out."""
    plural = "phase" if count == 1 else "phases"
    return {
        "role": "assistant",
        "content": f"{EARLIER_PHASE}#{first_id}-#{last_id}, {count} {plural} left out to fit the window; "
        "their anchors stay on the tape]",
    }


PHASES = Phases()


def phase_message(anchor: TapeEntry, last_id: int, *, carried: bool = True) -> Message:
    """The message an earlier phase becomes: its anchor's name and span, summary first, then the rest.

    Without ``carried`` the summary's ``Carried over:`` lines are left out: in a chain each of them is a line
    of an earlier phase's summary, sent already.
    """
    span = f"#{anchor.id}" if last_id <= anchor.id else f"#{anchor.id}-#{last_id}"
    lines = [f"{EARLIER_PHASE}{anchor.name} ({span})]"]
    state = anchor.payload.get("state")
    if isinstance(state, dict) and not carried and isinstance(state.get("summary"), str):
        kept = [line for line in state["summary"].splitlines() if not _CARRIED_LINE.match(line)]
        state = {**state, "summary": "\n".join(kept)}
    if isinstance(state, dict):
        lines.extend(_state_lines(state))
    elif state is not None:
        lines.append(f"State: {_json(state)}")
    return {"role": "assistant", "content": "\n".join(lines)}


def _state_lines(state: dict[str, Any]) -> list[str]:
    lines = []
    shown: set[str] = set()
    for key, heading in LEADING:
        text = state.get(key)
        if isinstance(text, str) and text.strip():
            lines.append(f"{heading}{_covering(state) if key == 'summary' else ''}: {text.strip()}")
            shown.add(key)
    rest = {key: _clip(value) for key, value in state.items() if key not in shown and key not in BOOKKEEPING}
    # An empty next_steps says nothing; leave it out rather than show "next_steps": "".
    rest = {key: value for key, value in rest.items() if not (key in dict(LEADING) and value in ("", None))}
    if rest:
        lines.append(f"State: {_json(rest)}")
    return lines


def _covering(state: dict[str, Any]) -> str:
    """`` of #4-#9`` when the state names a sound ``range`` for its summary, else nothing."""
    span = state.get("range")
    if (
        isinstance(span, list | tuple)
        and len(span) == 2
        and all(type(value) is int for value in span)
        and 0 < span[0] <= span[1]
    ):
        return f" of #{span[0]}" if span[0] == span[1] else f" of #{span[0]}-#{span[1]}"
    return ""


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > VALUE_CHARS:
        return value[: VALUE_CHARS - 1] + "…"
    return value


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
