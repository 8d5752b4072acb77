"""Tape frames that save: Parquet and CSV files with ``payload`` and ``meta`` as JSON text, read back whole."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bub_nb.errors import TapeError
from bub_nb.tape.corrections.unreached import record_export
from bub_nb.tape.frames.arrow import JSON_COLUMNS, dumps, json_text, loads, pyarrow
from bub_nb.tape.frames.json_column import JsonDtype, json_column
from bub_nb.tape.frames.native import tape_to_arrow

_INTEGERS = ("phase_id", "prompt_tokens", "completion_tokens")
_TEXT = ("tape_name", "role", "name", "content", "phase", "run_id", "forked_from", "notebook", "agent", "owner")


def frame_to_arrow(frame: pd.DataFrame) -> Any:
    """A tape frame as an Arrow table: the JSON columns as JSON text, as ``Tape.to_arrow()`` has them."""
    pa = pyarrow()
    plain = frame.drop(columns=[c for c in JSON_COLUMNS if c in frame.columns]).reset_index(drop=True)
    table = pa.Table.from_pandas(plain, preserve_index=False)
    for column in JSON_COLUMNS:
        if column in frame.columns:
            position = list(frame.columns).index(column)
            table = table.add_column(position, column, json_text(frame[column].tolist(), None))
    return table


def arrow_to_frame(table: Any) -> pd.DataFrame:
    """An Arrow table of tape columns (``to_arrow()``, a saved frame) as the frame ``to_frame()`` gives."""
    frame = table.to_pandas()
    return _typed(frame)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    for column in JSON_COLUMNS:
        if column in frame.columns and not isinstance(frame[column].dtype, JsonDtype):
            texts = frame[column].tolist()
            frame[column] = json_column([loads(text) if isinstance(text, str) else {} for text in texts]).to_numpy()
            frame[column] = frame[column].astype(JsonDtype())
    if "kind" in frame.columns:
        frame["kind"] = frame["kind"].astype("category")
    if "tape_name" in frame.columns:
        frame["tape_name"] = frame["tape_name"].astype(object).astype("str")
    for column in _INTEGERS:
        if column in frame.columns:
            frame[column] = frame[column].astype("Int64")
    if "tools" in frame.columns:
        frame["tools"] = [_tools(tools) for tools in frame["tools"].tolist()]
    if "date" in frame.columns:
        frame["date"] = pd.to_datetime(frame["date"], utc=True, format="ISO8601", errors="coerce").astype(
            "datetime64[us, UTC]"
        )
    return frame


def _tools(tools: Any) -> list[str]:
    """A row's tool names: a list from Arrow, JSON text from CSV."""
    if isinstance(tools, str):
        return list(loads(tools))
    return [] if tools is None else list(tools)


def save_parquet(frame: pd.DataFrame, path: str | Path) -> None:
    """``df.tape.to_parquet(path)``."""
    import pyarrow.parquet as pq

    pq.write_table(frame_to_arrow(frame), str(path))


def save_csv(frame: pd.DataFrame, path: str | Path) -> None:
    """``df.tape.to_csv(path)``: every column as text, ``payload``, ``meta`` and ``tools`` as JSON text."""
    out = frame.copy()
    for column in (*JSON_COLUMNS, "tools"):
        if column in out.columns:
            out[column] = [dumps(value) for value in out[column].tolist()]
    out.to_csv(path, index=False)


def read_frame(path: str | Path) -> pd.DataFrame:
    """A tape frame saved with ``df.tape.to_parquet`` or ``df.tape.to_csv`` (or ``bub-nb tapes export
    --parquet``), back with the columns and dtypes the ``df.tape`` helpers read."""
    path = Path(path)
    if not path.exists():
        raise TapeError(f"No saved frame at {str(path)!r}")
    if path.suffix == ".csv":
        text = {column: "str" for column in _TEXT}
        missing = {column: [""] for column in (*_INTEGERS, *_TEXT)}
        read_as = {**text, "payload": "str", "meta": "str", "tools": "str"}
        frame = pd.read_csv(path, dtype=read_as, keep_default_na=False, na_values=missing)
        return _typed(frame)
    import pyarrow.parquet as pq

    return arrow_to_frame(pq.read_table(str(path)))


def write_parquet(tapes: Sequence[Any], folder: str | Path) -> list[Path]:
    """``bub-nb tapes export --parquet DIR``: ``DIR/<tape>.parquet`` for each tape, the columns of
    ``Tape.to_arrow()``, each recorded on its tape as an ``export`` event; the paths written, in order."""
    import pyarrow.parquet as pq

    pyarrow()
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for tape in tapes:
        target = out / f"{Path(tape.name).name.removesuffix('.jsonl')}.parquet"
        pq.write_table(tape_to_arrow(tape), str(target))
        record_export([tape], target, "parquet")  # so a redaction can name the file
        written.append(target)
    return written
