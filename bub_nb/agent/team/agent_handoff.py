"""A handoff between agents: an anchor and a ``context_handoff`` event on each agent's tape, in seed 002's shape.

The record follows seed 002 §9.2::

    {"type": "context_handoff", "from": "agent:analyst", "to": "agent:reviewer", "timestamp": "...",
     "content": {"reason": "...", "summary": "...", "tape_ref": "tape://<sender>/entry/41",
                 "intention": {"next_steps": "...", "context_summary": "..."},
                 "ownership": "transfer",          # or "share"
                 "refs": ["tape://<sender>/entry/12", ...],   # what the summary cites
                 "anchor": "tape://<sender>/entry/42",        # the sender's anchor (on the receiver's copy)
                 "state": {...}}}                  # any other key=value the handoff carried

The sender's tape gets the anchor (its state ``{"context_handoff": record}``) and the event first; the
receiver's tape then gets an anchor carrying the same record, whose citations are ``tape://`` addresses of the
sender's entries, and its event. Everything is checked before the first write. If the receiver's write fails,
a ``context_handoff.failed`` event on the sender's tape says so: a handoff is complete only when the
receiver's anchor exists.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from bub_nb.errors import AgentError, CitationError
from bub_nb.tape.citations import beyond, cited_ids
from bub_nb.tape.entries import TapeEntry, utc_now
from bub_nb.tape.events import CONTEXT_HANDOFF, HANDOFF_FAILED
from bub_nb.tape.forks.renumber import renumber_text
from bub_nb.tape.names import check_handoff_name, entry_address
from bub_nb.tape.stores.protocol import KnowsOwners

if TYPE_CHECKING:
    from bub_nb.tape import Tape

OWNERSHIPS: Final = ("transfer", "share")
AGENT_PREFIX: Final = "agent:"


@dataclass(frozen=True, slots=True)
class AgentHandoff:
    """What a handoff between agents wrote: on the sender's tape, then on the receiver's."""

    name: str
    sender: str
    receiver: str
    ownership: str
    sent: tuple[TapeEntry, ...]
    received: tuple[TapeEntry, ...]

    @property
    def record(self) -> dict[str, Any]:
        """The record as the receiver holds it: seed 002's shape, with the references into the sender's tape."""
        anchor = next(entry for entry in self.received if entry.kind == "anchor")
        return dict((anchor.payload.get("state") or {}).get(CONTEXT_HANDOFF) or {})

    def __str__(self) -> str:
        sent = next(entry for entry in self.sent if entry.kind == "anchor")
        got = next(entry for entry in self.received if entry.kind == "anchor")
        return (
            f"{self.sender} → {self.receiver} ({self.ownership}): anchor {self.name} #{sent.id} on the sender's tape, "
            f"#{got.id} on the receiver's"
        )


def handoff_record(
    sender: str,
    receiver: str,
    *,
    reason: str | None,
    summary: str | None,
    tape_ref: str | None,
    next_steps: str | None,
    context_summary: str | None,
    ownership: str,
    state: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``context_handoff`` record of seed 002 §9.2 for agents ``sender`` and ``receiver``."""
    content: dict[str, Any] = {
        "reason": reason,
        "summary": summary,
        "tape_ref": tape_ref,
        "intention": {"next_steps": next_steps, "context_summary": context_summary},
        "ownership": ownership,
    }
    if state:
        content["state"] = dict(state) if isinstance(state, Mapping) else state
    return {
        "type": CONTEXT_HANDOFF,
        "from": AGENT_PREFIX + sender,
        "to": AGENT_PREFIX + receiver,
        "timestamp": utc_now(),
        "content": content,
    }


def check_agent_handoff(sender_tape: Tape, receiver_tape: Tape, name: str, record: Mapping[str, Any]) -> None:
    """Refuse, before any write, a handoff that could not be written whole on both tapes."""
    check_handoff_name(name)
    if sender_tape.name == receiver_tape.name or record["from"] == record["to"]:
        raise AgentError(f"Agent {record['from'][len(AGENT_PREFIX) :]!r} cannot hand the conversation to itself")
    content = record["content"]
    if content["ownership"] not in OWNERSHIPS:
        raise AgentError(f"Ownership {content['ownership']!r} is not one of {', '.join(OWNERSHIPS)}")
    for tape in (sender_tape, receiver_tape):
        if tape.read_only:
            raise AgentError(f"Tape {tape.name!r} is read-only; a handoff between agents writes on both tapes")
    last = sender_tape.last_id
    for key, text in _texts(record):
        if (citation := beyond(text, last)) is not None:
            raise CitationError(
                f"The {key} cites {text[citation.start : citation.end]}, beyond the sender's entries #1-#{last}; "
                "nothing was written"
            )
    state = content.get("state")
    if state is not None and not (isinstance(state, Mapping) and all(isinstance(key, str) for key in state)):
        raise AgentError(f"A handoff's state is an object with text keys, got {state!r}")
    clash = sorted(set(state or ()) & {*content, "refs", "anchor"})
    if clash:
        raise AgentError(f"State key {clash[0]!r} is the handoff's own; name it otherwise (nothing was written)")


def write_agent_handoff(
    sender_tape: Tape,
    receiver_tape: Tape,
    name: str,
    record: Mapping[str, Any],
    *,
    before: tuple[TapeEntry, ...] = (),
    meta: Mapping[str, Any] | None = None,
) -> AgentHandoff:
    """Write the handoff ``name`` carrying ``record`` on both tapes (``before``: entries the sender writes
    first, such as its ``summary`` event). Checked first; a failed second write is marked on the sender's tape."""
    check_agent_handoff(sender_tape, receiver_tape, name, record)
    meta = dict(meta or {})
    sent_record = copy.deepcopy(dict(record))
    sent = sender_tape.extend(
        [
            *before,
            TapeEntry.anchor(name, {CONTEXT_HANDOFF: sent_record}, **meta),
            TapeEntry.event(CONTEXT_HANDOFF, sent_record, **meta),
        ]
    )
    anchor = next(entry for entry in sent if entry.kind == "anchor")
    received_record = referenced(sent_record, address_name(sender_tape), anchor.id)
    try:
        received = receiver_tape.extend(
            [
                TapeEntry.anchor(name, {CONTEXT_HANDOFF: received_record}, **meta),
                TapeEntry.event(CONTEXT_HANDOFF, received_record, **meta),
            ]
        )
    except BaseException as exc:  # an interrupt between the two writes leaves the same half-handoff
        _mark_failed(sender_tape, anchor, record["to"], exc, meta)
        if not isinstance(exc, Exception):
            raise
        raise AgentError(
            f"Handoff {name!r} to {record['to']} failed on tape {receiver_tape.name!r} ({exc}); "
            f"the sender's anchor #{anchor.id} is marked failed ({HANDOFF_FAILED}) and holds nothing for the receiver"
        ) from exc
    sender, receiver = (record[key][len(AGENT_PREFIX) :] for key in ("from", "to"))
    return AgentHandoff(name, sender, receiver, record["content"]["ownership"], tuple(sent), tuple(received))


def referenced(record: Mapping[str, Any], sender: str, anchor_id: int) -> dict[str, Any]:
    """The record as the receiver keeps it: ``[#id]`` citations become ``tape://`` addresses of the sender's
    entries, listed under ``refs``, beside the address of the sender's anchor."""
    moved = copy.deepcopy(dict(record))
    content = moved["content"]
    cited: set[int] = set()
    for _key, text in _texts(moved):
        cited.update(cited_ids(text, anchor_id))
    if isinstance(content.get("summary"), str):
        content["summary"] = renumber_text(content["summary"], {}, sender)
    intention = content["intention"]
    for key in ("next_steps", "context_summary"):
        if isinstance(intention.get(key), str):
            intention[key] = renumber_text(intention[key], {}, sender)
    content["refs"] = [entry_address(sender, entry_id) for entry_id in sorted(cited)]
    content["anchor"] = entry_address(sender, anchor_id)
    return moved


def address_name(tape: Tape) -> str:
    """How ``tape://`` addresses name ``tape`` for any reader: on a database with its owner (``owner/name``), so
    a teacher reading the receiver's tape is led to the sender's, not to a tape of its own by that name."""
    store = tape.base_store
    if isinstance(store, KnowsOwners):
        owner, name = store.owner_and_name(tape.name)
        return f"{owner}/{name}"
    return tape.name


def _texts(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    content = record["content"]
    intention = content.get("intention") or {}
    pairs = [("summary", content.get("summary"))]
    pairs += [(key, intention.get(key)) for key in ("next_steps", "context_summary")]
    return [(key, text) for key, text in pairs if isinstance(text, str)]


def _mark_failed(tape: Tape, anchor: TapeEntry, receiver: str, error: BaseException, meta: Mapping[str, Any]) -> None:
    said = str(error) or type(error).__name__
    try:
        tape.append_event(HANDOFF_FAILED, {"anchor": anchor.id, "to": receiver, "error": said[:300]}, **meta)
    except Exception as again:
        raise AgentError(
            f"Handoff {anchor.payload.get('name')!r} to {receiver} failed on the receiver's tape ({error}), and "
            f"marking the sender's anchor #{anchor.id} failed failed too ({again})"
        ) from error
