"""An OpenAI Agents SDK ``SQLiteSession`` database as tape entries.

The session keeps ``agent_sessions`` (one row per session) and ``agent_messages`` (one Responses-API
item per row, as JSON, in order): user and assistant messages, function calls and their outputs,
reasoning. Each session becomes a phase, an anchor ``session`` with its id; a ``compaction`` item
(what a compacting session writes in place of the history it summarized) becomes an anchor
``compaction``. ``SQLiteSession`` keeps no token counts, so its tape has no ``run`` events;
``AdvancedSQLiteSession`` keeps one ``turn_usage`` row per user turn (what ``store_run_usage`` stored, with its
``input_tokens_details`` and ``output_tokens_details``), which becomes the ``run`` event after the turn's last
item (``message_structure`` says which items are the turn's). Its other tables are kept row by row.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Final

import orjson

from bub_nb.imports.draft import TapeDraft
from bub_nb.imports.records import connect, other_rows, rows
from bub_nb.imports.responses import add_item
from bub_nb.imports.values import openai_usage, with_details

FORMAT: Final = "agents-sdk"
SESSION_ANCHOR: Final = "session"
COMPACTION_ANCHOR: Final = "compaction"
TABLES: Final = {"agent_sessions", "agent_messages"}
USAGE_TABLES: Final = {"turn_usage", "message_structure"}
"""``AdvancedSQLiteSession``'s usage per user turn, and the table that ties items to turns."""


def looks_like(tables: set[str]) -> bool:
    return tables >= TABLES


def read(path: Path, draft: TapeDraft) -> dict[str, Any]:
    """Add every session of the database, and its items, to ``draft``."""
    with closing(connect(path)) as db:
        # created_at holds whole seconds: sessions begun in one second come in the order of their first items
        sessions = rows(
            db,
            "SELECT s.* FROM agent_sessions AS s ORDER BY s.created_at, "
            "(SELECT MIN(m.id) FROM agent_messages AS m WHERE m.session_id = s.session_id), s.session_id",
        )
        tables = {row["name"] for row in rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
        usage = _turn_usage(db) if tables >= USAGE_TABLES else {}
        for session in sessions:
            draft.take(session, "session", session.get("created_at"))
            draft.anchor(SESSION_ANCHOR, {"session": session["session_id"]})
            items = rows(db, "SELECT * FROM agent_messages WHERE session_id = ? ORDER BY id", session["session_id"])
            model = None
            for row in items:
                model = _item(draft, row) or model
                for turn in usage.pop(row["id"], ()):
                    _run(draft, turn, model)
        known = {s["session_id"] for s in sessions}
        for row in rows(db, "SELECT * FROM agent_messages ORDER BY id"):
            if row["session_id"] not in known:  # items whose session row is gone
                _item(draft, row)
        for turn in (turn for turns in usage.values() for turn in turns):  # usage of no item the sessions hold
            draft.take(turn, "turn_usage", turn.get("created_at"))
            draft.keep("the turn's usage names no item of a session")
        for table, row in other_rows(db, TABLES | ({"turn_usage"} if tables >= USAGE_TABLES else set())):
            draft.take(row, table)
            draft.keep(f"Agents SDK table {table!r} is not one this reading knows")
    return {"sessions": [s["session_id"] for s in sessions]}


def _turn_usage(db: sqlite3.Connection) -> dict[Any, list[dict[str, Any]]]:
    """Each ``turn_usage`` row, under the id of its turn's last item (``None``: its turn has no item)."""
    last = {
        (row["session_id"], row["branch_id"], row["user_turn_number"]): row["last"]
        for row in rows(
            db,
            "SELECT session_id, branch_id, user_turn_number, MAX(message_id) AS last FROM message_structure "
            "GROUP BY session_id, branch_id, user_turn_number",
        )
    }
    found: dict[Any, list[dict[str, Any]]] = {}
    for turn in rows(db, "SELECT * FROM turn_usage ORDER BY id"):
        key = (turn["session_id"], turn["branch_id"], turn["user_turn_number"])
        found.setdefault(last.get(key), []).append(turn)
    return found


def _run(draft: TapeDraft, turn: dict[str, Any], model: str | None) -> None:
    draft.take(turn, "turn_usage", turn.get("created_at"))
    given, spent = _details(turn.get("input_tokens_details")), _details(turn.get("output_tokens_details"))
    usage = openai_usage(turn.get("input_tokens"), turn.get("output_tokens"), turn.get("total_tokens"))
    usage = with_details(usage, {"prompt_tokens_details": given, "completion_tokens_details": spent})
    run_id = f"{turn['session_id']}/{turn['branch_id']}/{turn['user_turn_number']}"
    draft.run(usage, model, run_id=run_id, requests=turn.get("requests"), source_usage=turn)


def _details(text: Any) -> dict[str, Any]:
    try:
        found = orjson.loads(text) if isinstance(text, str | bytes) else None
    except orjson.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


def _item(draft: TapeDraft, row: dict[str, Any]) -> str | None:
    """Add one item; the model it names, if any."""
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
    return meta.get("model")
