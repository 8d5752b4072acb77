"""A class at a glance: one row per tape in a store, and every tape of a store in one frame."""

from __future__ import annotations

import pwd
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bub_nb.tape._lines import Record, gc_paused
from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.events import NOTEBOOK, RUN, payload_run_usage
from bub_nb.tape.frames.frame import (
    COLUMNS,
    columns_to_frame,
    entries_to_frame,
    records_to_frame,
    tape_notebooks,
    text_series,
    with_tape_columns,
)
from bub_nb.tape.locations import tapes_home
from bub_nb.tape.sidecars import sidecar_of
from bub_nb.tape.stores.columns import FORKED_FROM, TAPE_NAME, Columns, decode_columns
from bub_nb.tape.stores.protocol import FileBacked, KnowsOwners, ReadsClassLines, ReadsRecords, TapeStore
from bub_nb.tape.stores.resolve import file_store, resolve_store

OVERVIEW_COLUMNS = (
    "tape_name", "owner", "notebook", "entries", "anchors", "last_anchor", "turns", "tokens", "errors", "last_activity",
    "archived",
)  # fmt: skip


def _details(store: TapeStore) -> dict[str, dict[str, Any]]:
    """Owner and notebook per tape: a database knows them; for files, the file's owner."""
    if isinstance(store, KnowsOwners):
        return dict(store.tape_details())
    found: dict[str, dict[str, Any]] = {}
    for name in store.list_tapes():
        owner = None
        if isinstance(store, FileBacked):
            try:
                owner = pwd.getpwuid(store.path_for(name).stat().st_uid).pw_name
            except (KeyError, OSError):
                owner = None
        found[name] = {"owner": owner, "notebook": None}
    return found


def _records(store: TapeStore, tape: str) -> list[Record]:
    if isinstance(store, ReadsRecords):
        return list(store.records(tape))
    return [entry.to_dict() for entry in store.read(tape)]  # type: ignore[misc]


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _tape_row(name: str, details: dict[str, Any], records: list[Record]) -> dict[str, Any]:
    anchors: list[str] = []
    turns = tokens = errors = 0
    notebook = details.get("notebook")
    for record in records:
        kind, payload = record["kind"], record["payload"]
        if kind == "event" and payload.get("name") == NOTEBOOK:
            data = payload.get("data")
            path = data.get("path") if isinstance(data, dict) else None
            notebook = path if isinstance(path, str) else notebook
        elif kind == "anchor":
            anchor = payload.get("name")
            if isinstance(anchor, str) and is_phase_anchor(anchor):
                anchors.append(anchor)
        elif kind == "error":
            errors += 1
        elif kind == "event" and payload.get("name") == RUN and FORKED_FROM not in record["meta"]:
            # a turn a fork copied is counted once, in the tape it ran on
            turns += 1
            data = payload.get("data")
            usage = payload_run_usage(kind, payload)
            if usage is not None:
                tokens += _count(usage.get("prompt_tokens")) + _count(usage.get("completion_tokens"))
            if isinstance(data, dict) and data.get("status") == "error":
                errors += 1
    return {
        "tape_name": name,
        "owner": details.get("owner"),
        "notebook": notebook,
        "entries": len(records),
        "anchors": list(dict.fromkeys(anchors)),
        "last_anchor": anchors[-1] if anchors else None,
        "turns": turns,
        "tokens": tokens,
        "errors": errors,
        "last_activity": records[-1]["date"] if records else None,
        "archived": None,
    }


def class_overview(store: TapeStore | str | None = None) -> pd.DataFrame:
    """One row per tape the store lets this role see: owner, notebook (the newest ``notebook`` event's, else
    the one the database recorded; Bub's sidecar tapes, ``<owner>__sidecar__<name>``, are part of their owner's row
    and get none of their own), phase anchors reached, turns, tokens (from ``run`` events; a fork's copies
    of its parent's turns are not counted again), errors, the time of the last entry and, for a tape started
    over in a database and kept there, when it was archived (``NaT`` for a live tape; it follows its live tape).

    ``store`` is a store or a ``postgresql://`` DSN; ``None`` means ``$BUB_STORE``, else the Bub home's files.
    """
    chosen = _store(store)
    if isinstance(chosen, KnowsOwners):  # a database counts its tapes itself, without sending their entries
        rows = chosen.overview_rows()
    else:
        details = _details(chosen)
        names = [name for name in chosen.list_tapes() if sidecar_of(name) is None]  # a sidecar is its owner's
        rows = [_tape_row(name, details.get(name, {}), _records(chosen, name)) for name in names]
    frame = pd.DataFrame(rows, columns=list(OVERVIEW_COLUMNS))
    frame["last_activity"] = pd.to_datetime(frame["last_activity"], utc=True, format="ISO8601", errors="coerce")
    frame["archived"] = pd.to_datetime(frame["archived"], utc=True)
    for column in ("entries", "turns", "tokens", "errors"):
        frame[column] = frame[column].astype("int64")
    return frame


def store_frame(
    store: TapeStore | str, kinds: Sequence[str] = (), since: Any = None, *, archives: bool = False
) -> pd.DataFrame:
    """Every tape of ``store`` in one frame: ``tape_name`` and ``owner`` first, then the entry columns and
    ``notebook`` (from the tape's ``notebook`` event, else the notebook the database recorded), and with
    ``archives`` the archived tapes too, marked in ``archived``. A database picks the lines of ``kinds`` from
    ``since`` on in its query (the caller filters the rows exactly)."""
    chosen = _store(store)
    if isinstance(chosen, ReadsClassLines):
        return _class_frame(chosen, kinds, since, archives)
    details = _details(chosen)
    frames = []
    for name in chosen.list_tapes():
        frame = with_tape_columns(records_to_frame(_records(chosen, name), name))
        about = details.get(name, {})
        frame.insert(1, "owner", about.get("owner"))
        if about.get("notebook") is not None:
            frame["notebook"] = frame["notebook"].fillna(about["notebook"])
        frames.append(frame)
    if not frames:
        empty = with_tape_columns(entries_to_frame(list[TapeEntry]()))
        empty.insert(1, "owner", pd.Series(dtype="object"))
        return empty[[TAPE_NAME, "owner", *COLUMNS[1:], "notebook"]].astype({"kind": "category"})
    frame = pd.concat(frames, ignore_index=True)
    frame["kind"] = frame["kind"].astype("category")  # as read_tapes does: concat drops per-tape categories
    return frame


def _class_frame(store: ReadsClassLines, kinds: Sequence[str], since: Any, archives: bool) -> pd.DataFrame:
    """``store_frame`` of a database: one query, the lines decoded into one set of columns and framed once."""
    tapes = store.class_lines(kinds, since, archives=archives)
    decoded, starts, names, owners, notebooks, archived = Columns(), [], [], [], [], []
    with gc_paused():
        for name, old, notebook, lines in tapes:
            starts.append(len(decoded))
            decode_columns(lines, into=decoded)
            rows = len(decoded) - starts[-1]
            names += [name] * rows
            owners += [name.partition("/")[0] if "/" in name else None] * rows
            notebooks.append(notebook)
            archived += [old] * rows
        frame = columns_to_frame(decoded, starts or (0,), names=names)
    frame.insert(1, "owner", text_series(owners))
    if isinstance(store, KnowsOwners):  # a plain name is one of this role's own tapes
        frame["owner"] = frame["owner"].fillna(getattr(store, "role", None))
    recorded = dict(zip([tape[0] for tape in tapes], notebooks, strict=True))
    found = tape_notebooks(frame)
    frame["notebook"] = text_series([found.get(name) or recorded.get(name) for name in names])
    if archives:
        frame["archived"] = np.array(archived, dtype=bool)
    frame["kind"] = frame["kind"].astype("category")
    return frame


def _store(store: TapeStore | str | None) -> TapeStore:
    return resolve_store(store) or file_store(tapes_home())
