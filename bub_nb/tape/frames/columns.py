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

COLUMNS = (
    TAPE_NAME, "id", "kind", "date", "role", "name", "content", "tools", "phase", "phase_id", "run_id",
    FORKED_FROM, "prompt_tokens", "completion_tokens", "retracted", "payload", "meta",
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
