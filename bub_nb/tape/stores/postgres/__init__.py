"""Tapes on PostgreSQL: the store, its versioned schema, roles, following and moving tapes."""

from __future__ import annotations

from bub_nb.tape.stores.dsn import is_dsn, redact_dsn
from bub_nb.tape.stores.postgres.store import PostgresTapeStore

__all__ = ["PostgresTapeStore", "is_dsn", "redact_dsn"]
