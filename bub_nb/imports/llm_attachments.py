"""llm's ``attachments`` (images, audio, documents sent with a prompt) as the content parts of the prompt's message.

llm keeps each attachment once (``attachments``: its type and its bytes, URL or path), and names it from a
message's ``attachment`` part (llm 0.30 and later) or from ``prompt_attachments`` (before). An image becomes an
OpenAI ``image_url`` part (its bytes as a ``data:`` URL, else its URL); anything else, or an image llm kept only
as a path on the machine that sent it, becomes a text part that names it. Each attachment is one source record,
mapped to every message that names it; one that no message names is kept whole.
"""

from __future__ import annotations

import base64
import sqlite3
from typing import Any

from bub_nb.imports.draft import TapeDraft
from bub_nb.imports.records import plain_row, rows


class Attachments:
    """The attachments of one llm database, each taken as a record the first time a message names it."""

    def __init__(self, db: sqlite3.Connection, draft: TapeDraft) -> None:
        self.db = db
        self.draft = draft
        self.taken: dict[str, int] = {}

    def parts(self, ids: list[Any]) -> tuple[list[dict[str, Any]], list[int]]:
        """The content parts for the attachments ``ids``, and the records they were read from."""
        parts: list[dict[str, Any]] = []
        records: list[int] = []
        for ident in ids:
            found = rows(self.db, "SELECT * FROM attachments WHERE id = ?", ident)
            if not found:
                parts.append({"type": "text", "text": f"[attachment {ident}: not in the log]"})
                continue
            row = found[0]
            if row["id"] not in self.taken:
                current = self.draft.current
                self.taken[row["id"]] = self.draft.take(plain_row(row), "attachment")
                self.draft.focus(current)  # the message goes on being made from its own record
            parts.append(content_part(row))
            records.append(self.taken[row["id"]])
        return parts, records

    def keep_unnamed(self) -> None:
        """Keep whole every attachment no message named."""
        for row in rows(self.db, "SELECT * FROM attachments ORDER BY id"):
            if row["id"] not in self.taken:
                self.draft.take(plain_row(row), "attachment")
                self.draft.keep("no message of the log names this attachment")


def content_part(row: dict[str, Any]) -> dict[str, Any]:
    """One attachment row as an OpenAI content part: an image as ``image_url``, anything else as text naming it."""
    found = row.get("type")
    kind = found if isinstance(found, str) else ""
    content, url, path = row.get("content"), row.get("url"), row.get("path")
    if kind.startswith("image/") and isinstance(content, bytes) and content:
        return {"type": "image_url", "image_url": {"url": f"data:{kind};base64,{base64.b64encode(content).decode()}"}}
    if kind.startswith("image/") and isinstance(url, str) and url:
        return {"type": "image_url", "image_url": {"url": url}}
    where = url or path or (f"{len(content)} bytes" if isinstance(content, bytes) else f"id {row.get('id')}")
    return {"type": "text", "text": f"[{kind or 'attachment'} attachment: {where}]"}
