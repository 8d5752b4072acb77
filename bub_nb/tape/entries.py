"""Tape entries: the immutable facts a tape is made of, in Bub's line format."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from bub_nb.markup import clean_html
from bub_nb.tape._lines import Record, as_record, dumps, load_json
from bub_nb.tape.text import payload_html, payload_markdown

Kind = Literal["message", "system", "anchor", "event", "tool_call", "tool_result", "error"]
KINDS: Final[tuple[str, ...]] = ("message", "system", "anchor", "event", "tool_call", "tool_result", "error")
ROLES: Final[tuple[str, ...]] = ("system", "developer", "user", "assistant", "tool")  # a chat message's roles


def utc_now() -> str:
    """The current time as Bub writes it: ISO-8601 with an explicit UTC offset."""
    return datetime.now(UTC).isoformat()


@dataclass(frozen=True, slots=True)
class TapeEntry:
    """One immutable record on a tape.

    ``id`` is assigned by the store; entries built with the constructors below carry ``id=0``
    until they are appended.
    """

    id: int
    kind: str
    payload: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    date: str = field(default_factory=utc_now)

    # -- constructors, one per kind -------------------------------------------------------------

    @classmethod
    def message(cls, message: dict[str, Any], **meta: Any) -> TapeEntry:
        return cls(0, "message", dict(message), meta)

    @classmethod
    def system(cls, content: str, **meta: Any) -> TapeEntry:
        return cls(0, "system", {"content": content}, meta)

    @classmethod
    def anchor(cls, name: str, state: dict[str, Any] | None = None, **meta: Any) -> TapeEntry:
        payload: dict[str, Any] = {"name": name}
        if state is not None:
            payload["state"] = dict(state)
        return cls(0, "anchor", payload, meta)

    @classmethod
    def event(cls, name: str, data: Any = None, **meta: Any) -> TapeEntry:
        payload: dict[str, Any] = {"name": name}
        if data is not None:
            payload["data"] = data
        return cls(0, "event", payload, meta)

    @classmethod
    def tool_call(cls, calls: list[dict[str, Any]], content: str | None = None, **meta: Any) -> TapeEntry:
        payload: dict[str, Any] = {"calls": list(calls)}
        if content:
            payload["content"] = content
        return cls(0, "tool_call", payload, meta)

    @classmethod
    def tool_result(cls, results: list[Any], **meta: Any) -> TapeEntry:
        return cls(0, "tool_result", {"results": list(results)}, meta)

    @classmethod
    def error(cls, kind: str, message: str, details: Any = None, **meta: Any) -> TapeEntry:
        payload: dict[str, Any] = {"kind": kind, "message": message}
        if details is not None:
            payload["details"] = details
        return cls(0, "error", payload, meta)

    # -- reading ---------------------------------------------------------------------------------

    @property
    def name(self) -> str | None:
        """The name of an anchor or event, else ``None``."""
        if self.kind in ("anchor", "event"):
            name = self.payload.get("name")
            return name if isinstance(name, str) else None
        return None

    @property
    def when(self) -> datetime:
        """``date`` parsed into an aware datetime."""
        return datetime.fromisoformat(self.date)

    def with_id(self, entry_id: int) -> TapeEntry:
        return TapeEntry(entry_id, self.kind, self.payload, self.meta, self.date)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "payload": self.payload, "meta": self.meta, "date": self.date}

    def to_line(self) -> bytes:
        """One JSON Lines record, newline included."""
        return encode_line(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any) -> TapeEntry | None:
        """Build an entry from a decoded line, or ``None`` when the line is not a tape entry.

        Lines that carry a float ``timestamp`` instead of ``date`` (older Bub tapes) still load.
        """
        record = as_record(data)
        return None if record is None else cls.of_record(record)

    @classmethod
    def of_record(cls, record: Record) -> TapeEntry:
        """The entry a checked record (``as_record``, ``decode_record``) holds: the one way stores build entries."""
        return cls(record["id"], record["kind"], record["payload"], record["meta"], record["date"])

    # -- display ---------------------------------------------------------------------------------

    def to_markdown(self) -> str:
        return payload_markdown(self.id, self.kind, self.payload, self.date)

    def _repr_html_(self) -> str:
        return clean_html(payload_html(self.id, self.kind, self.payload, self.date))


MEMORY_ANCHOR_PREFIX: Final = "memory/"


MEMORY_BOUND_EVENTS: Final = ("memory.open", "memory.seal")
"""The events that bound a memory zone (older tapes bound it with ``memory/open`` and ``memory/seal`` anchors)."""


def is_phase_anchor(name: str | None) -> bool:
    """Whether an anchor starts a phase; ``memory/...`` anchors bound the memory zone instead."""
    return name is not None and not name.startswith(MEMORY_ANCHOR_PREFIX)


def is_memory_bound(entry: TapeEntry) -> bool:
    """Whether ``entry`` opens or seals a memory zone: a ``memory.open``/``memory.seal`` event, or an older tape's
    ``memory/...`` anchor."""
    if entry.kind == "event":
        return entry.name in MEMORY_BOUND_EVENTS
    return entry.kind == "anchor" and not is_phase_anchor(entry.name)


def plain_json(value: Any) -> Any:
    """``value`` as the plain JSON value a tape line stores (what any store reads back)."""
    return load_json(dumps(value))


def encode_line(record: dict[str, Any]) -> bytes:
    """One record as a JSON Lines line, newline included."""
    return dumps(record) + b"\n"
