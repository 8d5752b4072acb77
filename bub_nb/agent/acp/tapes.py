"""ACP sessions as tapes: which tape a session is, the sessions a home or store holds, and a tape told back as updates.

A session's id is its tape's name. ``session/new`` names the tape as Bub names a session (a hash of the client's
working directory and of a fresh session id), so two clients in one folder never share a tape by accident and a
client that restarts continues its tape by loading that id. An id is only ever a tape name, checked as one: never a
path, an archive or another role's tape, so a client cannot reach outside the home or store it was started on.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from bub_nb.errors import BubNbError, TapeNameError
from bub_nb.tape import Tape, open_tape
from bub_nb.tape.names import session_tape_name, validate_tape_name

LISTED_SESSIONS = 100
"""Sessions one ``session/list`` page holds; the cursor pages on."""


class SessionRefused(BubNbError):
    """A session the client named cannot be opened here (a bad id, a relative folder, no such tape)."""


def check_cwd(cwd: object) -> str:
    """The client's working directory, which ACP requires absolute; it only names the tape, it is never opened."""
    if not isinstance(cwd, str) or not cwd or "\x00" in cwd:
        raise SessionRefused(f"cwd must be an absolute path, got {cwd!r}")
    if not (PurePosixPath(cwd).is_absolute() or PureWindowsPath(cwd).is_absolute()):
        raise SessionRefused(f"cwd must be an absolute path, got {cwd!r}")
    return cwd


def check_session_id(session_id: object) -> str:
    """A session id as a tape name of this home or store: no path, no archive, no ``owner/name``."""
    if not isinstance(session_id, str):
        raise SessionRefused(f"A session id is a tape name, got {session_id!r}")
    if "/" in session_id or "\\" in session_id or session_id.endswith(".jsonl") or ".jsonl." in session_id:
        raise SessionRefused(f"A session id is a tape name, not a path: {session_id!r}")
    try:
        return validate_tape_name(session_id)
    except TapeNameError as exc:
        raise SessionRefused(str(exc)) from None


def new_session_name(cwd: str) -> str:
    """A fresh session's tape name, as Bub names a session started in ``cwd``."""
    return session_tape_name(cwd, uuid.uuid4().hex)


def workspace_prefix(cwd: str) -> str:
    """What every tape of a session started in ``cwd`` begins with."""
    return session_tape_name(cwd, "")[:18]


@dataclass(frozen=True)
class Place:
    """The home or store the server was started on: every tape it opens lives there."""

    home: str | None = None
    store: str | None = None

    def open(self, name: str, *, create: bool) -> Tape:
        if self.store is not None:
            return open_tape(check_session_id(name), store=self.store, create=create)
        return open_tape(check_session_id(name), home=self.home, create=create)

    def names(self) -> list[str]:
        if self.store is not None:
            from bub_nb.tape.stores.resolve import resolve_store

            store = resolve_store(self.store)
            assert store is not None
            return sorted(store.list_tapes())
        from bub_nb.tape import FileTapeStore
        from bub_nb.tape.locations import tapes_home

        return sorted(FileTapeStore(tapes_home(self.home)).list_tapes())

    def where(self) -> str:
        """The folder a listed session without a recorded working directory reports (ACP wants one)."""
        if self.store is not None:
            return str(Path.cwd())
        from bub_nb.tape.locations import tapes_home

        return str(tapes_home(self.home))


def session_rows(place: Place, cwd: str | None, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """One page of sessions (tapes, those of ``cwd`` only when given) and the cursor of the next page."""
    names = [n for n in place.names() if "~" not in n and (cwd is None or n.startswith(workspace_prefix(cwd)))]
    start = names.index(cursor) + 1 if cursor in names else 0
    page = names[start : start + LISTED_SESSIONS]
    rows = []
    for name in page:
        tape = place.open(name, create=False)
        last = tape.read(max(1, tape.last_id), tape.last_id + 1)
        recorded = last[0].meta.get("cwd") if last else None
        rows.append(
            {
                "session_id": name,
                "cwd": recorded if isinstance(recorded, str) and recorded else (cwd or place.where()),
                "title": _title(tape),
                "updated_at": last[0].date if last else None,
            }
        )
    following = page[-1] if start + LISTED_SESSIONS < len(names) and page else None
    return rows, following


def _title(tape: Tape) -> str | None:
    """The session's first prompt, cut to a line."""
    for entry in tape.read(1, min(tape.last_id, 50) + 1, kinds=("message",)):
        if entry.payload.get("role") == "user" and isinstance(entry.payload.get("content"), str):
            return entry.payload["content"].strip().splitlines()[0][:80] if entry.payload["content"].strip() else None
    return None


def replayed(messages: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """A view's messages as the updates that tell them to a client: ``(kind, fields)`` with ``kind`` one of
    ``user``, ``agent``, ``tool_call`` and ``tool_result``."""
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        content = _text(message.get("content"))
        if role == "user" and content:
            yield "user", {"text": content}
        elif role == "assistant":
            if content:
                yield "agent", {"text": content}
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                names[str(call.get("id"))] = str(function.get("name", "tool"))
                yield (
                    "tool_call",
                    {
                        "id": str(call.get("id")),
                        "name": names[str(call.get("id"))],
                        "arguments": function.get("arguments"),
                    },
                )
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            yield "tool_result", {"id": call_id, "name": names.get(call_id, "tool"), "text": content}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)
