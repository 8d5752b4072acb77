"""Tapes as Arrow tables: the columns of ``to_frame()``, with ``payload`` and ``meta`` as JSON text."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from bub_nb.errors import TapeError
from bub_nb.tape.events import NOTEBOOK
from bub_nb.tape.frames.columns import COLUMNS, flag_column, phase_column, retracted_column
from bub_nb.tape.stores.columns import FORKED_FROM, TAPE_NAME, Columns

if TYPE_CHECKING:
    import pyarrow as pa

JSON_COLUMNS = ("payload", "meta")  # JSON text in Arrow, Parquet and CSV; dicts in a pandas frame
_ENCODE_LINES = msgspec.json.Encoder().encode_lines
_DECODE = msgspec.json.decode
_DECODE_LINES = msgspec.json.Decoder().decode_lines
_CHUNK = 1 << 16  # rows per chunk of a JSON text column


def pyarrow() -> Any:
    """pyarrow, or a one-line error naming the extra that brings it."""
    try:
        import pyarrow
    except ImportError:
        raise TapeError("Arrow and Parquet need pyarrow: pip install -e '.[arrow]' in the bub_nb checkout") from None
    return pyarrow


def json_text(values: Sequence[Any], plain_rows: Sequence[tuple[int, int]] | None = ()) -> pa.ChunkedArray:
    """Each value as compact JSON text, in ``large_string`` chunks encoded in one call each: the values
    newline-separated, then the newlines taken out and the offsets moved back by as many (compact JSON
    text never holds a raw newline: one inside a string is escaped).

    The fast encoder writes NaN as null and cannot write a lone surrogate, so a chunk holding rows of
    ``plain_rows`` (what the plain decode read, where such values come from; ``None``: any row may) is
    written value by value by ``json.dumps``, which keeps them as the tape line held them."""
    pa = pyarrow()
    chunks = []
    for first in range(0, len(values), _CHUNK):
        part = values[first : first + _CHUNK]
        stop = first + len(part)
        if plain_rows is None or any(start < stop and first < end for start, end in plain_rows):
            chunks.append(pa.array([dumps(value) for value in part], type=pa.large_string()))
            continue
        data = np.frombuffer(_ENCODE_LINES(part), dtype=np.uint8)
        breaks = data == 10
        offsets = np.empty(len(part) + 1, dtype=np.int64)
        offsets[0] = 0
        offsets[1:] = np.flatnonzero(breaks) + 1 - np.arange(1, len(part) + 1)
        text = data[~breaks]
        chunks.append(pa.LargeStringArray.from_buffers(len(part), pa.py_buffer(offsets), pa.py_buffer(text)))
    return pa.chunked_array(chunks, type=pa.large_string())


def dumps(value: Any) -> str:
    """JSON text in ASCII, as Python's ``json`` writes it: a lone surrogate escaped (Arrow's UTF-8 cannot
    hold it raw), NaN as ``NaN``, big integers exact, nesting as deep as the tape line's."""
    with deep_nesting():
        return json.dumps(value, separators=(",", ":"), default=str)


def loads(text: str) -> Any:
    """A value from its JSON text: the fast decoder first, Python's ``json`` for what only it reads."""
    try:
        return _DECODE(text)
    except (msgspec.DecodeError, RecursionError):
        with deep_nesting():
            return json.loads(text)


def loads_many(texts: Any) -> list[Any]:
    """Values from an Arrow array of JSON texts, in one call of the fast decoder when it reads them all."""
    text = texts.cast("large_string") if texts.type != "large_string" else texts
    if text.null_count == 0 and len(text):
        offsets = np.frombuffer(text.buffers()[1], dtype=np.int64)[text.offset : text.offset + len(text) + 1]
        body = np.frombuffer(text.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
        joined = np.insert(body, offsets[1:-1] - offsets[0], 10)  # a line break between values
        try:
            values = _DECODE_LINES(joined.tobytes())
        except (msgspec.DecodeError, RecursionError):
            pass
        else:
            if len(values) == len(text):
                return values
    return [loads(value) if isinstance(value, str) else value for value in text.to_pylist()]


@contextlib.contextmanager
def deep_nesting() -> Iterator[None]:
    """Python's recursion limit raised for a value nested as deep as a tape line may be."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def columns_to_arrow(
    columns: Columns, tape_starts: Sequence[int] = (0,), names: str | list[str] | None = None
) -> pa.Table:
    """The columns of ``to_frame()``, in its order, as an Arrow table: ``kind`` and ``tape_name`` as
    dictionaries (pandas' categories), ``date`` as UTC microseconds, the token counts and ``phase_id`` as
    nullable int64, ``tools`` as lists of strings, ``payload`` and ``meta`` as JSON text."""
    import pandas as pd

    pa = pyarrow()
    count, text = len(columns), columns.text
    ids = np.array(columns.ids, dtype=np.int64)
    phases, anchor_rows = phase_column(columns.kinds, text.own_names, tape_starts)
    dates = pd.to_datetime(pd.Series(columns.dates, dtype="object"), utc=True, format="ISO8601", errors="coerce")
    built = {
        TAPE_NAME: _tape_names(names, count, tape_starts),
        "id": pa.array(ids),
        "kind": pa.array(columns.kinds, type=pa.string()).dictionary_encode(),
        "date": pa.Array.from_pandas(dates.astype("datetime64[us, UTC]")),
        "role": _text(text.roles),
        "name": _text(text.names),
        "content": _text(text.contents),
        "tools": pa.array(text.tools, type=pa.list_(pa.large_string())),
        "phase": _text(phases),
        "phase_id": pa.array(ids[np.maximum(anchor_rows, 0)], mask=anchor_rows < 0),
        "run_id": _text([None if value is None else str(value) for value in columns.run_ids]
                        if not columns.run_ids_are_text else columns.run_ids),
        FORKED_FROM: _sparse(columns.forked_from, count),
        "prompt_tokens": _counts(text.prompt_tokens, count),
        "completion_tokens": _counts(text.completion_tokens, count),
        "retracted": pa.array(retracted_column(ids, columns.kinds, text.own_names, columns.payloads, tape_starts)),
        "bad_bytes": pa.array(flag_column(columns.bad_rows, count)),
        "payload": json_text(columns.payloads, columns.plain_rows),
        "meta": json_text(columns.metas, columns.plain_rows),
    }  # fmt: skip
    return pa.table([built[column] for column in COLUMNS], names=list(COLUMNS))


def _tape_names(names: str | list[str] | None, count: int, tape_starts: Sequence[int] = (0,)) -> Any:
    """The ``tape_name`` column as a dictionary: one name, or for several tapes the name of each row's tape
    (its rows run from its start to the next tape's)."""
    pa = pyarrow()
    if not isinstance(names, list):
        dictionary = pa.array([names], type=pa.string())
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(count, dtype=np.int32)), dictionary)
    starts = [start for start in tape_starts if start < count]
    if not starts:
        return pa.array(names, type=pa.string()).dictionary_encode()
    bounds = np.array([*starts, count], dtype=np.int64)
    indices = np.repeat(np.arange(len(starts), dtype=np.int32), np.diff(bounds))
    dictionary = pa.array([names[start] for start in starts], type=pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(indices), dictionary)


def _text(values: list[Any]) -> Any:
    pa = pyarrow()
    try:
        return pa.array(values, type=pa.large_string())
    except UnicodeEncodeError:  # a lone surrogate: kept as the replacement character, as Arrow holds UTF-8 only
        return pa.array(
            [v.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if v else v for v in values],
            type=pa.large_string(),
        )


def _sparse(values: dict[int, Any], count: int) -> Any:
    column: list[Any] = [None] * count
    for row, value in values.items():
        column[row] = value if isinstance(value, str) else str(value)
    return _text(column)


def _counts(counts: dict[int, int], count: int) -> Any:
    pa = pyarrow()
    values = np.zeros(count, dtype=np.int64)
    missing = np.ones(count, dtype=bool)
    rows = np.fromiter(counts, dtype=np.intp, count=len(counts))
    values[rows] = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    missing[rows] = False
    return pa.array(values, mask=missing)


def notebook_column(columns: Columns, tape_starts: Sequence[int], names: list[str]) -> Any:
    """Each row's tape's notebook: the path the newest ``notebook`` event of that tape records."""
    pa = pyarrow()
    found: dict[str, str] = {}
    own, row = columns.text.own_names, -1
    while True:
        try:
            row = own.index(NOTEBOOK, row + 1)
        except ValueError:
            break
        if columns.kinds[row] == "event":
            data = columns.payloads[row].get("data")
            path = data.get("path") if isinstance(data, dict) else None
            if isinstance(path, str):
                found[names[row]] = path
    starts = [start for start in tape_starts if start < len(names)]
    bounds = np.array([*starts, len(names)], dtype=np.int64)
    indices = np.repeat(np.arange(len(starts), dtype=np.int32), np.diff(bounds))
    paths = pa.array([found.get(names[start]) for start in starts], type=pa.large_string())
    return paths.take(pa.array(indices))


def tape_to_arrow(tape: Any) -> pa.Table:
    """``Tape.to_arrow()``: the whole tape, decoded straight into columns when its store can."""
    from bub_nb.tape._lines import gc_paused
    from bub_nb.tape.stores.protocol import ReadsColumns

    store = tape.store
    with gc_paused():
        if isinstance(store, ReadsColumns):
            columns = store.columns(tape.name)
        else:
            columns = Columns()
            columns.add_records(entry.to_dict() for entry in store.read(tape.name))
        return columns_to_arrow(columns, names=tape.name)
