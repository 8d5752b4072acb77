"""A tape file read into its Arrow table by DuckDB, in native code on every core, with the plain reader for the rest.

The plain reader (``stores/columns.py``) makes a Python object per row, several times over; DuckDB reads JSON and
derives columns in C++ without any. It reads here only what it can read exactly as the plain reader does, and each
other line is decoded by the plain reader itself:

- Python splits the file at its line breaks (numpy, one pass) and leaves a torn last line out, as every reader of
  a tape does; DuckDB gets the lines as one Arrow column over the file's own bytes (each line with its break,
  which JSON reads as space), numbered, so each row it derives is known by its line.
- Each line is parsed once into its five fields, its payload once more for the fields the columns derive from,
  and its meta only when it is not ``{}``; the rest reads fragments of a few bytes.
- A line goes to DuckDB only when it is UTF-8, valid JSON of the five fields' types (an integer ``id`` within 64
  bits, a text ``kind``, an object ``payload``, an object or no ``meta``, a text ``date`` of the usual ISO form)
  with no key given twice, and holds none of what DuckDB's JSON reader reads otherwise: ``NaN`` or ``Infinity``,
  a trailing comma, a number of 19 digits or more, or more than 200 brackets (a deeply nested line).
- Its derived columns are worked out in SQL for the common shapes only: a message or system prompt whose content
  is text, an anchor or event with a text name and no state or data, a tool result whose results are all text (no
  ``null`` among them: the plain reader writes it as ``null``, DuckDB's list would drop it).
  Any other line (tool calls, ``run`` events with usage, retractions, older lines with a ``timestamp``, bad bytes,
  every hostile line) is decoded by the plain reader, and the rows are put back in file order; each row's phase
  and the retractions are then worked out over the whole table with numpy and Arrow, without a Python object
  per row.
- A tape with something no Arrow column of the plain reader's types holds (a run id or fork address that is not
  text) is read by the plain reader whole.

``BUB_NB_READER=native`` (or :func:`use_reader`) turns this path on (``auto``, the default, is the plain reader
until the native one measures faster); without the ``duckdb`` package it is off.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bub_nb.tape._lines import decode_record, gc_paused, replacing_bad_bytes, typed_fields
from bub_nb.tape.entries import MEMORY_ANCHOR_PREFIX
from bub_nb.tape.events import RETRACT, UNRETRACT, retracted_ids
from bub_nb.tape.frames.columns import COLUMNS
from bub_nb.tape.stores.columns import FORKED_FROM, TAPE_NAME, Columns

READERS = ("auto", "native", "pure")
_ENV = "BUB_NB_READER"
_chosen: list[str | None] = [None]  # set by use_reader(), else the environment decides
_local = threading.local()
_LINE_BREAK = 10
_LOWEST_ID, _BEYOND_ID = 1, 2**63  # a tape's frame starts at id 1, as the plain reader's does

# One row per line DuckDB reads exactly (``native``), with the columns derived from it; ``n`` is the line number.
# The line is parsed once into its five fields, the payload once more for the fields the columns derive from, and
# the meta (mostly ``{}``) once; each other call reads a fragment of a few bytes.
_PARSE = r"""
WITH fields AS (
    SELECT n, t, try(from_json(line, '{"id":"JSON","kind":"JSON","payload":"JSON","meta":"JSON","date":"JSON"}')) AS f
    FROM lines
    WHERE NOT regexp_matches(line, $suspect)
), typed AS (
    SELECT n, t, f.payload AS payload, coalesce(f.meta, '{}'::JSON) AS meta,
           CASE WHEN json_type(f.id) = 'UBIGINT' THEN TRY_CAST(CAST(f.id AS VARCHAR) AS BIGINT) END AS id,
           json_extract_string(f.kind, '$') AS kind, json_extract_string(f.date, '$') AS date
    FROM fields
    WHERE starts_with(f.kind, '"') AND starts_with(f.payload, '{') AND starts_with(f.date, '"')
      AND (f.meta IS NULL OR starts_with(f.meta, '{'))
), shaped AS (
    SELECT *, from_json(payload, '{"role":"JSON","name":"JSON","content":"JSON","state":"JSON","data":"JSON",
                                   "results":"JSON","tool_calls":"JSON"}') AS p,
           CASE WHEN meta <> '{}' THEN from_json(meta, '{"run_id":"JSON","forked_from":"JSON"}') END AS m
    FROM typed
    WHERE id >= 1
      AND regexp_full_match(date, '\d{4}-\d\d-\d\dT([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)?')
), derived AS (
    SELECT n, t, id, kind, date, payload, meta, m,
           CASE kind
               WHEN 'message' THEN starts_with(p.content, '"') AND p.tool_calls IS NULL
               WHEN 'system' THEN starts_with(p.content, '"')
               WHEN 'anchor' THEN (p.name IS NULL OR starts_with(p.name, '"'))
                    AND (p.state IS NULL OR CAST(p.state AS VARCHAR) IN ('{}', '[]', '""', '0', 'false'))
               WHEN 'event' THEN (p.name IS NULL OR starts_with(p.name, '"')) AND p.data IS NULL
               WHEN 'tool_result' THEN p.results IS NULL OR NOT starts_with(p.results, '[')
                    OR (json_structure(p.results) IN ('["VARCHAR"]', '["NULL"]')
                        AND NOT regexp_matches(CAST(p.results AS VARCHAR), '[\[,]\s*null\s*[,\]]'))
               ELSE false
           END AS simple,
           CASE kind WHEN 'message' THEN CASE WHEN starts_with(p.role, '"') THEN json_extract_string(p.role, '$') END
                     WHEN 'system' THEN 'system' WHEN 'anchor' THEN 'assistant' WHEN 'tool_result' THEN 'tool'
           END AS role,
           CASE WHEN kind IN ('message', 'anchor', 'event') AND starts_with(p.name, '"')
                THEN json_extract_string(p.name, '$') END AS own_name,
           CASE kind WHEN 'message' THEN json_extract_string(p.content, '$')
                     WHEN 'system' THEN json_extract_string(p.content, '$')
                     WHEN 'anchor' THEN coalesce(json_extract_string(p.name, '$'), '')
                     WHEN 'event' THEN coalesce(json_extract_string(p.name, '$'), '')
                     WHEN 'tool_result' THEN CASE WHEN starts_with(p.results, '[')
                         THEN coalesce(array_to_string(from_json(p.results, '["VARCHAR"]'), chr(10)), '') ELSE '' END
           END AS content
    FROM shaped
)
SELECT n, t, id, kind, TRY_CAST(date AS TIMESTAMPTZ) AS date, role, own_name, content,
       CASE WHEN json_type(m.run_id) = 'VARCHAR' THEN json_extract_string(m.run_id, '$') END AS run_id,
       CASE WHEN json_type(m.forked_from) = 'VARCHAR' THEN json_extract_string(m.forked_from, '$') END AS forked_from,
       coalesce((m.run_id IS NOT NULL AND NOT starts_with(m.run_id, '"'))
           OR (m.forked_from IS NOT NULL AND NOT starts_with(m.forked_from, '"')), false) AS odd_meta,
       CAST(payload AS VARCHAR) AS payload, CAST(meta AS VARCHAR) AS meta
FROM derived
WHERE simple
"""

# What DuckDB's JSON reader reads otherwise than the plain reader, found in a line's text (conservatively: a
# match inside a string only sends the line to the plain reader): NaN and Infinity, a trailing comma, a number of
# 19 digits or more, a key the line may give twice (DuckDB keeps the first value, the plain reader the last), an
# escaped ASCII character (a key spelt with escapes), a null name or fork address (read as missing by DuckDB).
_KEYS = ("id", "kind", "payload", "meta", "date", "role", "name", "content", "tool_calls", "state", "data",
         "results", "run_id", "forked_from")  # fmt: skip
SUSPECT = "|".join(
    [r",\s*[\]}]", r"\d{19}", "NaN", "Infinity", r"\\u00[2-7]", r'"(name|forked_from|run_id)"\s*:\s*null']
    + [rf'"{key}"\s*:.*"{key}"\s*:' for key in _KEYS]
)
_SUSPECT_LITERAL = "'" + SUSPECT.replace("'", "''") + "'"
_DEEP = 200  # a line with more opening brackets than this may be nested past what the plain reader reads


def use_reader(reader: str | None) -> None:
    """Which reader frames and Arrow tables of tape files use: ``"native"`` (DuckDB, when installed), ``"pure"``
    (the plain reader always), ``"auto"`` (the plain reader, for now); ``None`` leaves it to the
    ``BUB_NB_READER`` environment variable (default ``auto``)."""
    if reader is not None and reader not in READERS:
        from bub_nb.errors import TapeError

        raise TapeError(f"use_reader({reader!r}): give one of {list(READERS)}")
    _chosen[0] = reader


@contextmanager
def reader(name: str) -> Iterator[None]:
    """``use_reader(name)`` for the length of a ``with`` block."""
    before = _chosen[0]
    use_reader(name)
    try:
        yield
    finally:
        _chosen[0] = before


def current_reader() -> str:
    """The reader tape files are read with now: ``native`` or ``pure``. ``auto`` is the plain reader for now: on the
    shared two-core machine the native one measured slower (docs/performance.md), so it is chosen by name."""
    chosen = _chosen[0] or os.environ.get(_ENV, "auto").strip().lower() or "auto"
    if chosen != "native":
        return "pure"
    try:
        import duckdb  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        return "pure"
    return "native"


def _connection() -> Any:
    """This thread's DuckDB connection (in memory, UTC), made on first use."""
    con = getattr(_local, "con", None)
    if con is None:
        import duckdb

        con = duckdb.connect(":memory:")
        con.execute("SET TimeZone = 'UTC'")
        _local.con = con
    return con


def file_table(path: Path, name: str, *, for_frame: bool = False) -> Any | None:
    """The Arrow table ``to_arrow()`` gives of the tape file at ``path`` (named ``name``), read natively; ``None``
    when the native reader is off, or the tape holds what only the plain reader's own frame or table holds.

    ``for_frame``: the table becomes a pandas frame, where a lone surrogate in a text column stays as it is
    (Arrow would hold U+FFFD), so a tape with one is left to the plain reader."""
    return files_table([(name, path)], for_frame=for_frame)


def files_table(tapes: Sequence[tuple[str, Path]], *, for_frame: bool = False) -> Any | None:
    """``file_table`` for several tapes at once, their rows one after another (each tape's phases end with it),
    read in one pass; ``tape_name`` names each row's tape."""
    if current_reader() != "native":
        return None
    parts = []
    for _, path in tapes:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = b""
        parts.append(data[: data.rfind(b"\n") + 1])  # a torn last line is left out
    import duckdb

    try:
        return lines_table(parts, [name for name, _ in tapes], for_frame=for_frame)
    except duckdb.Error:  # anything the engine refuses: the plain reader reads the tapes instead
        return None


def lines_table(parts: Sequence[bytes], names: Sequence[str], *, for_frame: bool = False) -> Any | None:
    """``files_table`` for the complete lines of each tape file (each part ends with a line break); ``None`` for
    no lines at all (the plain reader's empty frame has its own dtypes)."""
    import pyarrow as pa

    data = b"".join(parts)
    if not data:
        return None
    buffer = np.frombuffer(data, dtype=np.uint8)
    breaks = np.flatnonzero(buffer == _LINE_BREAK)
    count = len(breaks)
    starts = np.empty(count, dtype=np.int64)
    starts[0], starts[1:] = 0, breaks[:-1] + 1
    firsts = np.cumsum([0] + [part.count(b"\n") for part in parts])[:-1]  # each tape's first line
    tape_of = np.searchsorted(firsts, np.arange(count), side="right").astype(np.int32) - 1
    good = _utf8_lines(data, len(data), breaks)
    good &= _shallow(buffer, starts, breaks)
    good &= _one_object(buffer, starts, breaks)
    numbers = np.flatnonzero(good)
    lines = _lines_array(data, breaks, None if len(numbers) == count else numbers)
    con = _connection()
    con.register("lines", pa.table({"n": numbers, "t": tape_of[numbers], "line": lines}))
    try:
        native = _arrow(con.sql(_PARSE.replace("$suspect", _SUSPECT_LITERAL)))
    finally:
        con.unregister("lines")
    if pa.compute.any(native.column("odd_meta")).as_py():
        return None
    taken = np.zeros(count, dtype=bool)
    taken[native.column("n").to_numpy()] = True
    plain = _plain_rows(data, starts, breaks, np.flatnonzero(~taken), tape_of, for_frame=for_frame)
    if plain is None:
        return None
    table = _in_file_order(native.drop_columns(["odd_meta"]), plain)
    return _finish(table, names) if table.num_rows else None


def _arrow(relation: Any) -> Any:
    """A DuckDB relation's rows as an Arrow table (``to_arrow_table`` in DuckDB 2, ``arrow`` before)."""
    to_table = getattr(relation, "to_arrow_table", None)
    return to_table() if to_table is not None else relation.arrow()


def _shallow(buffer: np.ndarray, starts: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """Which lines hold at most ``_DEEP`` opening brackets (so are nested no deeper than that)."""
    openers = np.flatnonzero((buffer == ord("{")) | (buffer == ord("[")))
    per_line = np.bincount(np.searchsorted(breaks, openers), minlength=len(breaks))[: len(breaks)]
    return per_line <= _DEEP


def _one_object(buffer: np.ndarray, starts: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """Which lines start with ``{`` and end with ``}`` (a line with spaces around its entry is the plain reader's)."""
    if not len(breaks):
        return np.zeros(0, dtype=bool)
    empty = starts == breaks
    firsts = buffer[np.where(empty, 0, starts)]
    lasts = buffer[np.where(empty, 0, breaks - 1)]
    return ~empty & (firsts == ord("{")) & (lasts == ord("}"))


def _utf8_lines(data: bytes, end: int, breaks: np.ndarray) -> np.ndarray:
    """Which lines are UTF-8 (those that are not go to the plain reader, which keeps their bad bytes as U+FFFD)."""
    good = np.ones(len(breaks), dtype=bool)
    if data.isascii():
        return good
    view = memoryview(data)
    position = 0
    while position < end:
        try:
            str(view[position:end], "utf-8")
        except UnicodeDecodeError as error:
            at = position + error.start
            line = int(np.searchsorted(breaks, at))  # the line whose break comes at or after the bad byte
            good[line] = False
            position = int(breaks[line]) + 1
            continue
        break
    return good


def _lines_array(data: bytes, breaks: np.ndarray, numbers: np.ndarray | None) -> Any:
    """The lines ``numbers`` (``None``: every line) as one Arrow string array, each with its line break (JSON
    allows the space after a value): every line over the file's own bytes without a copy, or the chosen ones
    copied once."""
    import pyarrow as pa

    offsets = np.empty(len(breaks) + 1, dtype=np.int64)
    offsets[0], offsets[1:] = 0, breaks + 1
    every = pa.LargeStringArray.from_buffers(len(breaks), pa.py_buffer(offsets), pa.py_buffer(data))
    return every if numbers is None else every.take(pa.array(numbers))


def _plain_rows(
    data: bytes, starts: np.ndarray, breaks: np.ndarray, numbers: np.ndarray, tape_of: np.ndarray, *, for_frame: bool
) -> Any | None:
    """The lines DuckDB left, decoded by the plain reader, as rows numbered by their line; ``None`` when one holds
    what the native table cannot (a run id or fork address that is not text; for a frame, a lone surrogate)."""
    import pyarrow as pa

    from bub_nb.tape.frames.arrow import _text, json_text

    out = Columns()
    rows: list[int] = []
    fields: list[tuple[int, str, Any, Any, str]] = []
    plain: list[int] = []
    bad: list[int] = []
    for number in numbers.tolist():
        line = data[starts[number] : breaks[number]]
        typed = typed_fields(line)
        if typed is not None:
            if _LOWEST_ID <= typed[0] < _BEYOND_ID:
                fields.append(typed)
                rows.append(number)
            continue
        record = decode_record(line)
        if record is None and (record := replacing_bad_bytes(line)) is not None:
            bad.append(len(fields))
        if record is not None and record["id"] >= _LOWEST_ID:
            plain.append(len(fields))
            fields.append((record["id"], record["kind"], record["payload"], record["meta"], record["date"]))
            rows.append(number)
    if fields:
        out.add(*zip(*fields, strict=True))
    out.plain_rows = [(row, row + 1) for row in plain]
    out.bad_rows = bad
    if not out.run_ids_are_text or any(not isinstance(value, str) for value in out.forked_from.values()):
        return None
    text = out.text
    if for_frame:
        for values in (text.roles, text.names, text.contents, text.own_names, out.run_ids):
            try:
                "".join(value for value in values if value).encode("utf-8")
            except UnicodeEncodeError:
                return None
    count = len(out)
    dates = _dates(out.dates)
    flags = np.zeros(count, dtype=bool)
    flags[np.asarray(bad, dtype=np.intp)] = True
    return pa.table(
        {
            "n": pa.array(np.asarray(rows, dtype=np.int64)),
            "t": pa.array(tape_of[np.asarray(rows, dtype=np.intp)]),
            "id": pa.array(np.asarray(out.ids, dtype=np.int64)),
            "kind": _text(out.kinds).cast(pa.string()),
            "date": dates,
            "role": _text(text.roles).cast(pa.string()),
            "own_name": _text(text.own_names).cast(pa.string()),
            "name": _text(text.names).cast(pa.string()),
            "content": _text(text.contents).cast(pa.string()),
            "tools": pa.array(text.tools, type=pa.list_(pa.string())),
            "run_id": _text(out.run_ids).cast(pa.string()),
            "forked_from": _text([out.forked_from.get(row) for row in range(count)]).cast(pa.string()),
            "prompt_tokens": pa.array([text.prompt_tokens.get(row) for row in range(count)], type=pa.int64()),
            "completion_tokens": pa.array([text.completion_tokens.get(row) for row in range(count)], type=pa.int64()),
            "bad_bytes": pa.array(flags),
            "payload": json_text(out.payloads, out.plain_rows).cast(pa.string()),
            "meta": json_text(out.metas, out.plain_rows).cast(pa.string()),
        }
    )


def _dates(dates: Sequence[str]) -> Any:
    """The plain reader's dates as UTC microseconds, parsed as its frame parses them."""
    import pandas as pd
    import pyarrow as pa

    moments = pd.to_datetime(pd.Series(list(dates), dtype="object"), utc=True, format="ISO8601", errors="coerce")
    return pa.Array.from_pandas(moments.astype("datetime64[us, UTC]"))


_ROW_COLUMNS = ("n", "t", "id", "kind", "date", "role", "own_name", "name", "content", "tools", "run_id",
                "forked_from", "prompt_tokens", "completion_tokens", "bad_bytes", "payload", "meta")  # fmt: skip


def _in_file_order(native: Any, plain: Any) -> Any:
    """DuckDB's rows and the plain reader's as one table in the order of their lines; what DuckDB's rows do not
    have (tool names, token counts, bad bytes) is theirs by construction: none, none, none."""
    import pyarrow as pa

    count = native.num_rows
    large = pa.large_string()
    no_tools = pa.ListArray.from_arrays(pa.array(np.zeros(count + 1, dtype=np.int32)), pa.array([], large))
    built = {
        **{name: native.column(name) for name in native.column_names},
        "name": native.column("own_name"),
        "tools": no_tools,
        "prompt_tokens": pa.nulls(count, pa.int64()),
        "completion_tokens": pa.nulls(count, pa.int64()),
        "bad_bytes": pa.array(np.zeros(count, dtype=bool)),
    }
    schema = pa.schema(
        [(name, plain.schema.field(name).type) for name in _ROW_COLUMNS],
    ).set(_ROW_COLUMNS.index("tools"), pa.field("tools", pa.list_(large)))
    schema = pa.schema([field.with_type(large) if pa.types.is_string(field.type) else field for field in schema])
    table = pa.table([built[name] for name in _ROW_COLUMNS], names=list(_ROW_COLUMNS)).cast(schema)
    if not plain.num_rows:
        return table
    table = pa.concat_tables([table, plain.select(list(_ROW_COLUMNS)).cast(schema)])
    return table.take(pa.array(np.argsort(table.column("n").to_numpy(), kind="stable")))


def _finish(table: Any, names: Sequence[str]) -> Any:
    """The rows in file order as ``to_arrow()``'s table: its columns, types and order, each row's phase (the last
    phase anchor at or before it on its tape: a named anchor whose name is not empty and not a memory/ one),
    ``retracted`` worked out per tape, ``tape_name`` a dictionary of the tapes that have rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    count = table.num_rows
    ids = table.column("id").to_numpy()
    tapes = table.column("t").to_numpy()
    own = table.column("own_name")
    kinds = table.column("kind")
    starts_phase = pc.and_(
        pc.equal(kinds, "anchor"),
        pc.and_(pc.not_equal(own, ""), pc.invert(pc.starts_with(own, MEMORY_ANCHOR_PREFIX))),
    )
    rows = np.arange(count)
    anchor_rows = np.maximum.accumulate(np.where(starts_phase.fill_null(False).to_numpy(), rows, -1))
    first_rows = np.flatnonzero(np.r_[True, tapes[1:] != tapes[:-1]])  # each tape's first row
    anchor_rows[anchor_rows < first_rows[np.searchsorted(first_rows, rows, side="right") - 1]] = -1
    no_phase = anchor_rows < 0
    phase_rows = pa.array(np.maximum(anchor_rows, 0), mask=no_phase)
    retracted = np.zeros(count, dtype=bool)
    is_retraction = pc.and_(pc.equal(kinds, "event"), pc.is_in(own, pa.array([RETRACT, UNRETRACT])))
    found_rows = np.flatnonzero(is_retraction.fill_null(False).to_numpy())
    if len(found_rows):
        from bub_nb.tape.entries import TapeEntry
        from bub_nb.tape.frames.arrow import loads

        payloads = table.column("payload").take(pa.array(found_rows)).to_pylist()
        for tape in np.unique(tapes[found_rows]).tolist():
            events = [
                TapeEntry(int(ids[row]), "event", loads(text))
                for row, text in zip(found_rows, payloads, strict=True)
                if tapes[row] == tape
            ]
            found = retracted_ids(events)
            if found:
                on_tape = tapes == tape
                retracted[on_tape] = np.isin(ids[on_tape], np.fromiter(found, dtype=np.int64))
    present, indices = np.unique(tapes, return_inverse=True)
    tape_names = pa.DictionaryArray.from_arrays(
        pa.array(indices.astype(np.int32)), pa.array([names[tape] for tape in present.tolist()], type=pa.string())
    )
    large = pa.large_string()
    built = {
        TAPE_NAME: tape_names,
        "id": table.column("id"),
        "kind": kinds.cast(pa.string()).combine_chunks().dictionary_encode(),
        "date": table.column("date").cast(pa.timestamp("us", tz="UTC")),
        "role": table.column("role"),
        "name": table.column("name"),
        "content": table.column("content"),
        "tools": table.column("tools"),
        "phase": own.take(phase_rows).cast(large),
        "phase_id": pa.array(ids[np.maximum(anchor_rows, 0)], mask=no_phase, type=pa.int64()),
        "run_id": table.column("run_id"),
        FORKED_FROM: table.column("forked_from"),
        "prompt_tokens": table.column("prompt_tokens"),
        "completion_tokens": table.column("completion_tokens"),
        "retracted": pa.array(retracted),
        "bad_bytes": table.column("bad_bytes"),
        "payload": table.column("payload"),
        "meta": table.column("meta"),
    }
    return pa.table([built[column] for column in COLUMNS], names=list(COLUMNS))


def table_to_frame(table: Any) -> Any:
    """A native table as the frame ``to_frame()`` gives: the plain reader's dtypes, ``payload`` and ``meta`` held
    as their JSON text and decoded on access."""
    import pandas as pd

    from bub_nb.tape.frames.columns import missing_text
    from bub_nb.tape.frames.json_column import json_text_column

    text = pd.StringDtype(na_value=np.nan)

    def strings(name: str) -> pd.Series:
        column = table.column(name)
        if column.null_count == len(column):
            return missing_text(len(column))
        return pd.Series(pd.arrays.ArrowStringArray(column.cast("large_string"), dtype=text), copy=False)

    def integers(name: str) -> Any:
        column = table.column(name)
        values = column.fill_null(0).to_numpy()
        return pd.arrays.IntegerArray(values.astype(np.int64), column.is_null().to_numpy(zero_copy_only=False))

    kinds = table.column("kind").combine_chunks()
    categorical = pd.Categorical.from_codes(kinds.indices.to_numpy(), categories=kinds.dictionary.to_pylist())
    kind = pd.Series(categorical.reorder_categories(sorted(categorical.categories)), copy=False)
    frame = pd.DataFrame(
        {
            TAPE_NAME: pd.Series(
                pd.arrays.ArrowStringArray(table.column(TAPE_NAME).cast("large_string"), dtype=text), copy=False
            ),
            "id": pd.Series(table.column("id").to_numpy()),
            "kind": kind,
            "date": pd.Series(table.column("date").to_pandas(), copy=False),
            "role": strings("role"),
            "name": strings("name"),
            "content": strings("content"),
            "tools": _tool_lists(table.column("tools")),
            "phase": strings("phase"),
            "phase_id": integers("phase_id"),
            "run_id": strings("run_id"),
            FORKED_FROM: strings(FORKED_FROM),
            "prompt_tokens": integers("prompt_tokens"),
            "completion_tokens": integers("completion_tokens"),
            "retracted": table.column("retracted").to_numpy(),
            "bad_bytes": table.column("bad_bytes").to_numpy(),
            "payload": json_text_column(table.column("payload")),
            "meta": json_text_column(table.column("meta")),
        },
        columns=list(COLUMNS),
        copy=False,
    )
    return frame


def _tool_lists(tools: Any) -> np.ndarray:
    """The ``tools`` column as the plain reader's frame holds it, a list per row: an empty one made in C for each
    row that calls none (most rows), the names read from Arrow only for the rows that call some."""
    import pyarrow.compute as pc

    count = len(tools)
    with gc_paused():  # a list per row holds no cycle: a collection started among them would walk them all
        lists = np.fromiter(map(list, itertools.repeat((), count)), dtype=object, count=count)
    calling = np.flatnonzero(pc.list_value_length(tools).fill_null(0).to_numpy(zero_copy_only=False))
    if len(calling):
        lists[calling] = np.fromiter(tools.take(calling).to_pylist(), dtype=object, count=len(calling))
    return lists


def native_table(store: Any, names: Sequence[str], *, for_frame: bool = False) -> Any | None:
    """The tapes ``names`` of a file store read by the native reader (``frames/native.py``), or ``None`` when it is
    off, the store is not one of files, or the tapes hold what only the plain reader's table holds."""
    from bub_nb.tape.stores.file import FileTapeStore

    if type(store) is not FileTapeStore or not names:
        return None
    if current_reader() != "native":
        return None
    if for_frame:
        import pandas as pd

        if pd.StringDtype(na_value=np.nan).storage != "pyarrow":  # text in Python strings: the plain reader's
            return None
    return files_table([(name, store.path_for(name)) for name in names], for_frame=for_frame)


def tape_to_arrow(tape: Any) -> Any:
    """``Tape.to_arrow()``: the native reader's table when it reads the tape, else the plain reader's."""
    from bub_nb.tape.frames import arrow

    table = native_table(tape.store, [tape.name])
    return table if table is not None else arrow.tape_to_arrow(tape)
