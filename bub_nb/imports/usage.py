"""``agents_usage``: what the agents whose logs were imported cost, by day, project and tool, from a frame of tapes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bub_nb.errors import TapeError
from bub_nb.imports.draft import SOURCE
from bub_nb.tape.stores.columns import TAPE_NAME

if TYPE_CHECKING:
    import pandas as pd


def agents_usage(
    frame: pd.DataFrame | None = None,
    *,
    home: str | Path | None = None,
    by: str | Sequence[str] = ("day", "project"),
    prices: Mapping[str, Mapping[str, float]] | None = None,
) -> pd.DataFrame:
    """Turns, tokens (cached and reasoning among them) and cost of the imported tapes of ``frame`` (default:
    ``read_tapes(home)``), grouped ``by`` any of: ``day`` (the UTC day a turn ended), ``project`` (the folder the
    agent worked in, as its log names it; none for llm), ``tool`` (the log's format: ``claude-code``, ``codex``,
    ``llm``, ...) and the frame's columns. Tapes that were not imported are left out."""
    import pandas as pd

    from bub_nb.tape.frames.tapes import read_tapes
    from bub_nb.tape.reports.usage import usage_frame

    keys = [by] if isinstance(by, str) else list(by)
    if frame is None:
        frame = read_tapes(home)
    if TAPE_NAME not in frame.columns:
        raise TapeError(f"agents_usage needs a frame of several tapes, with a {TAPE_NAME!r} column (read_tapes())")
    sources = frame[(frame["kind"] == "event") & (frame["name"] == SOURCE)]
    tool: dict[str, Any] = {}
    project: dict[str, Any] = {}
    for tape, payload in zip(sources[TAPE_NAME].tolist(), sources["payload"].tolist(), strict=True):
        data = payload.get("data") if isinstance(payload, dict) else None
        data = data if isinstance(data, dict) else {}
        tool[tape] = data.get("format")
        project[tape] = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    imported = frame[frame[TAPE_NAME].isin(list(tool))]
    names = imported[TAPE_NAME]
    imported = imported.assign(
        day=pd.to_datetime(imported["date"], utc=True).dt.floor("D"),
        project=pd.array(names.map(project).tolist(), dtype="string"),
        tool=pd.array(names.map(tool).tolist(), dtype="string"),
    )
    return usage_frame(imported, keys, prices, forked=False)
