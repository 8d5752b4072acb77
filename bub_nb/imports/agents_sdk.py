"""An OpenAI Agents SDK ``SQLiteSession`` database as tape entries.

The session keeps ``agent_sessions`` (one row per session) and ``agent_messages`` (one Responses-API
item per row, as JSON, in order): user and assistant messages, function calls and their outputs,
reasoning. Each session becomes a phase, an anchor ``session`` with its id; a ``compaction`` item
(what a compacting session writes in place of the history it summarised) becomes an anchor
``compaction``. The SDK keeps no token counts in these tables, so the tape has no ``run`` events;
``AdvancedSQLiteSession``'s usage table, when present, is kept row by row.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any, Final

import orjson

from bub_nb.imports.draft import TapeDraft
from bub_nb.imports.records import connect, other_rows, rows
from bub_nb.imports.responses import add_item

FORMAT: Final = "agents-sdk"
SESSION_ANCHOR: Final = "session"
COMPACTION_ANCHOR: Final = "compaction"
TABLES: Final = {"agent_sessions", "agent_messages"}


def looks_like(tables: set[str]) -> bool:
    return tables >= TABLES


def read(path: Path, draft: TapeDraft) -> dict[str, Any]:
    """Add every session of the database, and its items, to ``draft``."""
    with closing(connect(path)) as db:
        sessions = rows(db, "SELECT * FROM agent_sessions ORDER BY created_at, session_id")
        for session in sessions:
            draft.take(session, "session", session.get("created_at"))
            draft.anchor(SESSION_ANCHOR, {"session": session["session_id"]})
            items = rows(db, "SELECT * FROM agent_messages WHERE session_id = ? ORDER BY id", session["session_id"])
            for row in items:
                _item(draft, row)
        known = {s["session_id"] for s in sessions}
        for row in rows(db, "SELECT * FROM agent_messages ORDER BY id"):
            if row["session_id"] not in known:  # items whose session row is gone
                _item(draft, row)
        for table, row in other_rows(db, TABLES):
            draft.take(row, table)
            draft.keep(f"Agents SDK table {table!r} is not one this reading knows")
    return {"sessions": [s["session_id"] for s in sessions]}


def _item(draft: TapeDraft, row: dict[str, Any]) -> None:
    try:
        item = orjson.loads(row["message_data"])
    except (orjson.JSONDecodeError, TypeError):
        item = None
    kind = item.get("type", "message" if "role" in item else None) if isinstance(item, dict) else None
    draft.take(row if item is None else item, f"item/{kind}", row.get("created_at"))
    meta = {"row": row["id"], "session": row["session_id"]}
    provider = item.get("provider_data") if isinstance(item, dict) else None
    if isinstance(provider, dict) and isinstance(provider.get("model"), str):
        meta["model"] = provider["model"]
    if not isinstance(item, dict):
        draft.keep("the item is not a JSON object")
    elif kind == "compaction":
        draft.anchor(COMPACTION_ANCHOR, {"summary": item.get("summary"), "from": FORMAT}, **meta)
    elif not add_item(draft, item, **meta):
        draft.keep(f"Responses item type {kind!r} is not one this reading knows")
