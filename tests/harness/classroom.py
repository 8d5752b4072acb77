"""A class on one database: a database and schema of its own, students and a teacher with their own roles."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Any

import psycopg

_classes = itertools.count(1)


@dataclass
class Classroom:
    """A database set up with ``bub-nb db init`` and ``db enroll``: ``dsn[role]`` logs in as that role."""

    admin: str
    schema: str
    students: list[str]
    teacher: str
    dsn: dict[str, str] = field(default_factory=dict)

    def sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run one statement as the database's owner; its rows."""
        with psycopg.connect(self.admin, autocommit=True) as conn:
            cursor = conn.execute(statement, params)
            return cursor.fetchall() if cursor.description else []


def classroom(students: int = 3, passwords: dict[str, str] | None = None) -> Classroom:
    """A fresh class on the test run's server: ``students`` students and one teacher, all enrolled."""
    from bub_nb.cli import main
    from harness.tapes import postgres_server

    server = postgres_server()
    number = next(_classes)
    tag = f"c{os.getpid()}_{number}"
    admin = server.create_database(tag)
    names = [f"{tag}_student{n}" for n in range(1, students + 1)]
    teacher = f"{tag}_teacher"
    room = Classroom(admin, "bub_nb", names, teacher)  # the default schema, as a hub would use
    for role in [*names, teacher]:
        password = (passwords or {}).get(role, f"pw-{role}-x")
        server.create_role(role, password)
        room.dsn[role] = server.dsn(role, password, tag)
    assert main(["db", "init", admin, "--schema", room.schema]) == 0
    assert main(["db", "enroll", admin, "physics", *names, "--schema", room.schema]) == 0
    assert main(["db", "enroll", admin, "physics", teacher, "--teacher", "--schema", room.schema]) == 0
    return room
