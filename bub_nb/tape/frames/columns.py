"""The columns of a tape frame, and those only a frame has: the categorical kind and the phase each row falls under."""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.events import RETRACT, UNRETRACT, retracted_ids
from bub_nb.tape.stores.columns import FORKED_FROM, TAPE_NAME

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
import numpy as np
import pandas as pd

from bub_nb.tape.stores.columns import TEXT_OR_NONE

if TYPE_CHECKING:
    pass

COLUMNS = (
    TAPE_NAME, "id", "kind", "date", "role", "name", "content", "tools", "phase", "phase_id", "run_id",
    FORKED_FROM, "prompt_tokens", "completion_tokens", "retracted", "bad_bytes", "payload", "meta",
)  # fmt: skip
"""The columns of a tape's frame, in order (docs/schema.md says what each holds)."""

RETRACTIONS = (RETRACT, UNRETRACT)


def kind_column(kinds: list[str]) -> pd.Series:
    """The ``kind`` column: categorical, as ``pd.Series(kinds, dtype="category")`` makes it, from codes
    worked out in one pass, numbering each kind as it first appears (a tape has a handful), then put in the
    sorted order of the categories, rather than by hashing every row twice."""
    import numpy as np
    import pandas as pd

    if not kinds:
        return pd.Series(kinds, dtype="object")
    number_of: defaultdict[str, int] = defaultdict(itertools.count().__next__)
    codes = np.fromiter(map(number_of.__getitem__, kinds), dtype=np.int32, count=len(kinds))
    categories = sorted(number_of)
    sorted_code = np.empty(len(categories), dtype=np.int32)
    sorted_code[[number_of[kind] for kind in categories]] = np.arange(len(categories), dtype=np.int32)
    return pd.Series(pd.Categorical.from_codes(sorted_code[codes], categories=categories))


def phase_column(
    kinds: list[str], own_names: list[str | None], tape_starts: Sequence[int] = (0,)
) -> tuple[list[str | None], np.ndarray]:
    """The phase anchor each row falls under: its name, and the row of that anchor (-1 for none), which
    names the phase instance (names repeat, anchors do not); a phase ends at the next phase anchor or where
    its tape ends (``tape_starts``: the first row of each tape, in a frame of many). An anchor without a
    name (or with an empty one, as the anchor index keeps a missing name) starts no phase."""
    import numpy as np

    count = len(kinds)
    phases: list[str | None] = [None] * count
    anchor_rows = np.full(count, -1, dtype=np.int64)
    bounds = sorted({*tape_starts, count})
    starts = [row for row in _rows_of(kinds, "anchor") if own_names[row] and is_phase_anchor(own_names[row])]
    for number, row in enumerate(starts):
        end = min(starts[number + 1] if number + 1 < len(starts) else count, bounds[bisect.bisect_right(bounds, row)])
        phases[row:end] = [own_names[row]] * (end - row)
        anchor_rows[row:end] = row
    return phases, anchor_rows


def retracted_column(
    ids: np.ndarray,
    kinds: list[str],
    own_names: list[str | None],
    payloads: Sequence[dict[str, Any]],
    tape_starts: Sequence[int] = (0,),
) -> np.ndarray:
    """Whether each row is retracted now: what the ``retract`` and ``unretract`` events of its tape leave out."""
    import numpy as np

    flags = np.zeros(len(ids), dtype=bool)
    if RETRACT not in own_names:  # a scan in C: most tapes never retract anything
        return flags
    bounds = sorted({*tape_starts, len(ids)})
    for start, end in itertools.pairwise(bounds):
        rows = [row for row in range(start, end) if own_names[row] in RETRACTIONS and kinds[row] == "event"]
        events = [TapeEntry(int(ids[row]), "event", payloads[row]) for row in rows]
        retracted = retracted_ids(events)
        if retracted:
            flags[start:end] = np.isin(ids[start:end], np.fromiter(retracted, dtype=np.int64))
    return flags


def flag_column(rows: Sequence[int], count: int) -> np.ndarray:
    """``True`` on ``rows`` of ``count``, ``False`` elsewhere."""
    import numpy as np

    flags = np.zeros(count, dtype=bool)
    flags[np.asarray(rows, dtype=np.intp)] = True
    return flags


def part_keys(frame: pd.DataFrame) -> np.ndarray:
    """Which tape each row is on, an archive apart from its live tape (their ids and call ids repeat)."""
    if TAPE_NAME not in frame.columns:
        return np.zeros(len(frame), dtype=np.int64)
    keys = [frame[TAPE_NAME]] + ([frame["archived"]] if "archived" in frame.columns else [])
    return pd.MultiIndex.from_arrays(keys).factorize()[0] if len(keys) > 1 else keys[0].factorize()[0]


def phases_by_id(anchors: Sequence[tuple[int, str]], ids: Sequence[int]) -> tuple[list[str | None], list[int | None]]:
    """The phase each of some entries of a tape falls under, from the tape's anchors ``(id, name)`` in tape
    order: the last phase anchor at or before the entry, as the whole tape's frame gives it."""
    phase_anchors = [(at, name) for at, name in anchors if name and is_phase_anchor(name)]
    starts = [at for at, _ in phase_anchors]
    phases: list[str | None] = []
    anchor_ids: list[int | None] = []
    for entry in ids:
        number = bisect.bisect_right(starts, entry) - 1
        phases.append(phase_anchors[number][1] if number >= 0 else None)
        anchor_ids.append(starts[number] if number >= 0 else None)
    return phases, anchor_ids


def _rows_of(values: list[str], wanted: str) -> list[int]:
    rows: list[int] = []
    row = -1
    while True:
        try:
            row = values.index(wanted, row + 1)
        except ValueError:
            return rows
        rows.append(row)


# Rows per Arrow chunk of a text column. Arrow grows one buffer for a whole column by doubling it, and at 1M
# rows the text alone is some 200 MB of fresh memory touched twice over; chunks of this size grow less, and
# reuse what the chunk before them freed.
_ARROW_ROWS = 1 << 18


def text_column(values: list[Any], *, text_or_none: bool = False) -> pd.Series | list[Any]:
    """A column of strings (missing where ``None``) in pandas' ``str`` dtype, as ``pd.Series(values)`` infers it,
    built without the inference pass; with pyarrow installed, the Arrow array is made in a call per chunk of
    rows, which costs a fraction of pandas' own conversion. Anything else (no string at all, or other values)
    is left to pandas.

    ``text_or_none`` says the values are known to be strings or ``None`` (the columns derived here), so only
    whether any string is there needs checking, which spares a pass that reaches every value.
    """
    if text_or_none:
        if not any(values) and values.count(None) == len(values):  # ``any`` stops at the first non-empty string
            return missing_text(len(values))  # ``str`` all the same: one dtype
    else:
        kinds = set(map(type, values))
        if str not in kinds or not kinds <= TEXT_OR_NONE:
            return values
    dtype = pd.StringDtype(na_value=np.nan)  # the storage pandas picks: pyarrow when it is installed
    if dtype.storage == "pyarrow":
        import pyarrow as pa

        try:
            parts = [values[first : first + _ARROW_ROWS] for first in range(0, len(values), _ARROW_ROWS)]
            chunks = pa.chunked_array([pa.array(part, type=pa.large_string()) for part in parts], pa.large_string())
        except UnicodeEncodeError:  # a lone surrogate, which Arrow's UTF-8 cannot hold: kept in Python strings
            return pd.Series(values, dtype=pd.StringDtype("python", na_value=np.nan))
        return pd.Series(pd.arrays.ArrowStringArray(chunks, dtype=dtype), copy=False)
    # Python strings: pandas' own conversion from a list with the dtype given, one pass in C that also turns
    # ``None`` into NaN, is about twice as fast as filling an object array and marking the missing values
    return pd.Series(values, dtype=dtype)


def missing_text(count: int) -> pd.Series:
    """A ``str`` column of ``count`` missing values, as ``pd.Series([None] * count, dtype=str)`` makes it; with
    pyarrow, one null array rather than a pass over a list of ``None``."""
    dtype = pd.StringDtype(na_value=np.nan)
    if dtype.storage != "pyarrow":
        return pd.Series([None] * count, dtype=dtype)
    import pyarrow as pa

    chunks = pa.chunked_array([pa.nulls(count, pa.large_string())], pa.large_string())
    return pd.Series(pd.arrays.ArrowStringArray(chunks, dtype=dtype), copy=False)


def repeated_text(value: str, count: int) -> pd.Series:
    """A ``str`` column holding ``value`` on each of ``count`` rows (a frame's tape name), as ``text_column``
    makes it from ``[value] * count``; with pyarrow, its buffers are written by numpy in one go."""
    dtype = pd.StringDtype(na_value=np.nan)
    if dtype.storage != "pyarrow":
        return pd.Series([value] * count, dtype=dtype)
    import pyarrow as pa

    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the Python strings, as ``text_column`` keeps them
        return text_column([value] * count, text_or_none=True)  # type: ignore[return-value]
    chunks = []
    for first in range(0, count, _ARROW_ROWS):
        rows = min(_ARROW_ROWS, count - first)
        offsets = np.arange(rows + 1, dtype=np.int64) * len(data)
        text = pa.py_buffer(data * rows)
        chunks.append(pa.LargeStringArray.from_buffers(rows, pa.py_buffer(offsets), text))
    return pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array(chunks, pa.large_string()), dtype=dtype), copy=False)
