"""Every tape of a Bub home, or of a store, in one DataFrame."""

from __future__ import annotations

import warnings
from collections.abc import Container, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bub_nb.errors import TapeError
from bub_nb.tape._lines import gc_paused
from bub_nb.tape.anchors import NamedTape, check_kinds
from bub_nb.tape.frames.frame import (
    COLUMNS,
    columns_to_frame,
    tape_notebooks,
    tape_to_frame,
    text_series,
    with_tape_columns,
)
from bub_nb.tape.frames.native import native_table, table_to_frame
from bub_nb.tape.frames.overview import store_frame
from bub_nb.tape.locations import bub_home, tapes_home
from bub_nb.tape.names import MAIN_AGENT, agent_of_tape, notebook_of_tape
from bub_nb.tape.sidecars import resolve_spill, sidecar_of, spill_handle
from bub_nb.tape.stores.agent_tapes import agent_tapes
from bub_nb.tape.stores.archive import ArchiveTapeStore, archive_files, archive_tape
from bub_nb.tape.stores.cloudevents import CloudEventsTapeStore, is_cloudevents_file
from bub_nb.tape.stores.columns import TAPE_NAME, Columns
from bub_nb.tape.stores.resolve import file_store, resolve_store
from bub_nb.tape.stores.wanted import WantedLines


def read_tapes(
    home: str | Path | None = None,
    *,
    include_archives: bool = False,
    store: Any = None,
    kinds: Sequence[str] = (),
    since: Any = None,
    columns: Sequence[str] | None = None,
    as_: str = "pandas",
    dataset: str | Path | None = None,
) -> Any:
    """Every tape under ``<home>/tapes`` in one frame, with a ``tape_name`` column first.

    ``home`` is a Bub home (or its ``tapes`` folder itself); one that does not exist is an error.
    With ``include_archives`` the ``.bak`` files a reset left are read too, marked in ``archived``.
    The tapes' lines are decoded into one set of columns and framed once (phases end with their tape),
    which costs about what one tape of the same size does.
    With ``store`` (a store or a ``postgresql://`` DSN) the tapes come from there instead, with an
    ``owner`` column after ``tape_name``. ``agent`` names the agent of a notebook whose tape a row is on:
    ``<tape>~<agent>`` is that agent's, and a notebook's own tape is ``main``'s once it has agents beside it.

    Leaner reads: ``kinds`` keeps the entries of those kinds, ``since`` (a date or time) those dated from
    then on, ``columns`` only those columns (phases are worked out on the whole tapes first, so every
    row keeps its phase). ``as_="arrow"`` gives a ``pyarrow.Table`` and ``as_="polars"`` a polars
    DataFrame, decoded without pandas, ``payload`` and ``meta`` as JSON text (the ``arrow`` extra).

    With ``dataset`` (a folder ``bub-nb tapes export --dataset`` wrote) the rows come from that Parquet dataset
    instead: the files its last export committed, tape by tape and by id, with the columns of ``to_arrow()`` and
    ``notebook``, ``retracted`` as the tapes' retractions leave it now.
    """
    if as_ not in ("pandas", "arrow", "polars"):
        raise TapeError(f"read_tapes(as_={as_!r}): give 'pandas', 'arrow' or 'polars'")
    check_kinds(kinds)
    if columns is not None:
        unknown = sorted(set(columns) - {*COLUMNS, "notebook", "agent", "archived", "owner", "sidecar", "spilled"})
        if unknown:
            raise TapeError(
                f"read_tapes(columns=...) names no such columns: {unknown}; the columns are {list(COLUMNS)}"
            )
    if dataset is not None:
        if home is not None or store is not None or include_archives:
            raise TapeError("read_tapes(dataset=...) reads the dataset alone: give no home, store or archives")
        return _from_dataset(dataset, kinds, since, columns, as_)
    if as_ != "pandas":
        if store is not None or include_archives:
            raise TapeError(f"read_tapes(as_={as_!r}) reads a Bub home's files, without archives")
        return _lean(_arrow_home(home, _wanted(kinds, since)), kinds, since, columns, as_)
    if store is not None:
        chosen = resolve_store(store) or file_store(tapes_home())  # a store was given: the fallback is never taken
        frame = store_frame(chosen, kinds, None if since is None else _moment(since), archives=include_archives)
        rows = frame[TAPE_NAME].tolist()
        frame["agent"] = text_series(agent_column(rows, recorded=agent_tapes(chosen, list(dict.fromkeys(rows)))))
        _warn_bad_bytes(frame)
        return _lean(_under_owners(frame, chosen), kinds, since, columns, as_)
    folder = _folder(home)
    store = file_store(folder)
    decoded, names, starts = Columns(), [], []
    wanted = _wanted(kinds, since)
    every = store.list_tapes()  # every file Bub would list, even one whose name we would not give
    table = native_table(store, every, for_frame=True) if wanted is None else None  # a lean read is the plain one's
    if table is not None:
        frame = table_to_frame(table)
        names = [""]
    else:
        with gc_paused():
            for name in every:
                starts.append(len(decoded))
                store.columns(name, into=decoded, wanted=wanted)
                names += [name] * (len(decoded) - starts[-1])
            frame = columns_to_frame(decoded, starts, names=names)
    if not names:
        frame["kind"] = frame["kind"].astype("category")  # categorical even with no rows, as analysts expect
    frame["notebook"] = text_series(_notebook_column(frame))
    frame["agent"] = text_series(agent_column(frame[TAPE_NAME].tolist(), every, agent_tapes(store, every)))
    frame = _with_cloudevents_tapes(frame, folder, every)
    if include_archives:
        frame["archived"] = False
        archives = [NamedTape(path.name, ArchiveTapeStore(path, store)) for path in archive_files(folder)]
        parts = [with_tape_columns(_archive_frame(tape), archived=True) for tape in archives]
        if parts:
            frame = pd.concat([frame, *parts], ignore_index=True)
            frame["kind"] = frame["kind"].astype("category")  # categories differ per part; concat drops them
    _warn_bad_bytes(frame)
    return _lean(_under_owners(frame, store), kinds, since, columns, as_)


def _from_dataset(folder: str | Path, kinds: Sequence[str], since: Any, columns: Sequence[str] | None, as_: str) -> Any:
    """The rows of an exported dataset, with each tape's ``notebook``, in the form asked for."""
    from bub_nb.tape.frames.dataset import read_dataset
    from bub_nb.tape.frames.saved import arrow_to_frame

    table = read_dataset(folder)
    table = table.append_column("notebook", _native_notebooks(table) if table.num_rows else _pa().nulls(0))
    if as_ != "pandas":
        return _lean(table, kinds, since, columns, as_)
    frame = arrow_to_frame(table)
    for column in ("role", "name", "content", "phase", "run_id", "forked_from", "notebook"):
        frame[column] = text_series([value if isinstance(value, str) else None for value in frame[column].tolist()])
    return _lean(frame, kinds, since, columns, as_)


def _with_cloudevents_tapes(frame: pd.DataFrame, folder: Path, names: Sequence[str]) -> pd.DataFrame:
    """The frame with the tapes in Bub's next (CloudEvents) format read by their own reader: the line reader saw
    no entry in them, only lines it could not decode."""
    cloud = [name for name in names if is_cloudevents_file(folder / f"{name}.jsonl")]
    if not cloud:
        return frame
    parts = []
    for name in cloud:
        part = with_tape_columns(tape_to_frame(NamedTape(name, CloudEventsTapeStore(folder / f"{name}.jsonl", name))))
        part[TAPE_NAME] = text_series([name] * len(part))
        part["agent"] = text_series([None] * len(part))
        parts.append(part)
    merged = pd.concat([frame[~frame[TAPE_NAME].isin(cloud)], *parts], ignore_index=True)
    merged["kind"] = merged["kind"].astype("category")  # categories differ per part; concat drops them
    return merged


def _under_owners(frame: pd.DataFrame, store: Any) -> pd.DataFrame:
    """Rows of Bub's sidecar tapes (``<owner>__sidecar__<name>``) named by their owner, the sidecar's name in a
    ``sidecar`` column (``""`` on the owner's own rows): a sidecar belongs to its owner's session. A ``spilled``
    column holds, on an owner's ``tool_result`` row whose result is Bub's spill pointer, the whole text the
    pointer leads to (the payload keeps the pointer, as written). A home without sidecars gets neither column."""
    names = frame[TAPE_NAME].astype(str).tolist()
    found = [sidecar_of(name) for name in names]
    if all(side is None for side in found):
        return frame
    owners = {side.owner for side in found if side is not None}
    spilled: list[str | None] = [None] * len(frame)
    for row, (name, side, kind, payload) in enumerate(zip(names, found, frame["kind"], frame["payload"], strict=True)):
        if side is None and name in owners and kind == "tool_result" and isinstance(payload, dict):
            results = payload.get("results")
            if isinstance(results, list) and any(spill_handle(r) for r in results):
                whole = [resolve_spill(r, store, name) for r in results]
                spilled[row] = "\n".join(str(r) for r in whole) if whole != results else None
    frame["sidecar"] = text_series(["" if side is None else side.name for side in found])
    frame["spilled"] = text_series(spilled)
    frame[TAPE_NAME] = text_series(
        [name if side is None else side.owner for name, side in zip(names, found, strict=True)]
    )
    return frame


def _archive_frame(tape: NamedTape) -> pd.DataFrame:
    """An archive's frame, its rows named by the tape it belongs to (``archived`` tells them apart)."""
    frame = tape_to_frame(tape)
    frame[TAPE_NAME] = text_series([archive_tape(tape.name) or tape.name] * len(frame))
    frame.attrs["archive"] = tape.name
    return frame


def _warn_bad_bytes(frame: pd.DataFrame) -> None:
    """One warning for the whole read when some lines held bytes that are not UTF-8 (kept, read as U+FFFD)."""
    count = int(frame["bad_bytes"].sum()) if "bad_bytes" in frame.columns else 0
    if count:
        tapes = frame.loc[frame["bad_bytes"], TAPE_NAME].nunique()
        warnings.warn(
            f"{count} entries in {tapes} tape(s) held bytes that are not UTF-8; they are kept with U+FFFD in their "
            "text and marked in the bad_bytes column (the files are left as they are)",
            UserWarning,
            stacklevel=3,
        )


def _folder(home: str | Path | None) -> Path:
    root = bub_home(home)
    if not root.is_dir():
        raise TapeError(f"Bub home {str(root)!r} is not a folder, so it holds no tapes")
    folder = tapes_home(home)
    if not folder.is_dir() and any(root.glob("*.jsonl")):
        folder = root  # the tapes folder itself was given
    return folder


def _wanted(kinds: Sequence[str], since: Any) -> WantedLines | None:
    """Which lines a lean read decodes, or ``None`` to decode them all."""
    if not kinds and since is None:
        return None
    return WantedLines(frozenset(kinds), None if since is None else _moment(since))


def _arrow_home(home: str | Path | None, wanted: WantedLines | None = None) -> Any:
    """Every tape of a home as one Arrow table, ``notebook`` last; with ``wanted``, only the lines it picks."""
    from bub_nb.tape.frames.arrow import columns_to_arrow, notebook_column, pyarrow

    pyarrow()  # the one-line error before any tape is read, when pyarrow is missing
    store = file_store(_folder(home))
    decoded, names, starts = Columns(), [], []
    every = store.list_tapes()
    native = native_table(store, every) if wanted is None else None
    if native is not None:
        rows = native.column(TAPE_NAME).to_pylist()
        agents = _pa().array(agent_column(rows, every, agent_tapes(store, every)), type=_pa().string())
        return native.append_column("notebook", _native_notebooks(native)).append_column("agent", agents)
    with gc_paused():
        for name in every:
            starts.append(len(decoded))
            store.columns(name, into=decoded, wanted=wanted)
            names += [name] * (len(decoded) - starts[-1])
        table = columns_to_arrow(decoded, starts, names)
        notebooks = notebook_column(decoded, starts, names)
    agents = _pa().array(agent_column(names, every, agent_tapes(store, every)), type=_pa().string())
    return table.append_column("notebook", notebooks).append_column("agent", agents)


def _native_notebooks(table: Any) -> Any:
    """``notebook_column`` for a native table: each row's tape's newest ``notebook`` event's path."""
    import pyarrow.compute as pc

    from bub_nb.tape.events import NOTEBOOK
    from bub_nb.tape.frames.arrow import loads

    pa = _pa()
    events = table.filter(pc.and_(pc.equal(table.column("kind").cast("string"), "event"),
                                  pc.equal(table.column("name"), NOTEBOOK)))  # fmt: skip
    found: dict[str, str] = {}
    for tape, text in zip(events.column(TAPE_NAME).to_pylist(), events.column("payload").to_pylist(), strict=True):
        data = loads(text).get("data")
        path = data.get("path") if isinstance(data, dict) else None
        if isinstance(path, str):
            found[tape] = path
    names = table.column(TAPE_NAME).combine_chunks()
    paths = pa.array([found.get(name) for name in names.dictionary.to_pylist()], type=pa.large_string())
    return paths.take(names.indices)


def _lean(table: Any, kinds: Sequence[str], since: Any, columns: Sequence[str] | None, as_: str) -> Any:
    """Only the rows of ``kinds`` dated from ``since`` on, and only ``columns``, in the form asked for."""
    if as_ == "pandas":
        frame = table
        if kinds:
            frame = frame[frame["kind"].isin(kinds)]
        if since is not None:
            frame = frame[frame["date"] >= _moment(since)]
        if (kinds or since is not None) and isinstance(frame["kind"].dtype, pd.CategoricalDtype):
            # the kinds of the rows kept, whichever lines were decoded to find them
            frame["kind"] = frame["kind"].cat.remove_unused_categories()
        if columns is not None:
            frame = frame[[column for column in frame.columns if column in columns]]
        return frame.reset_index(drop=True) if (kinds or since is not None) else frame
    import pyarrow.compute as pc

    if kinds:
        table = table.filter(pc.is_in(table.column("kind").cast("string"), value_set=_pa().array(list(kinds))))
    if since is not None:
        table = table.filter(pc.greater_equal(table.column("date"), _pa().scalar(_moment(since).to_pydatetime())))
    if columns is not None:
        table = table.select([column for column in table.column_names if column in columns])
    if as_ == "polars":
        import polars

        return polars.from_arrow(table)
    return table


def _pa() -> Any:
    from bub_nb.tape.frames.arrow import pyarrow

    return pyarrow()


def _moment(since: Any) -> pd.Timestamp:
    moment = pd.Timestamp(since)
    return moment.tz_localize("UTC") if moment.tzinfo is None else moment.tz_convert("UTC")


def _notebook_column(frame: pd.DataFrame) -> list[str | None]:
    """Each row's tape's notebook: the newest ``notebook`` event of that tape, else ``None``."""
    notebooks = tape_notebooks(frame)
    if not notebooks:
        return [None] * len(frame)
    return [notebooks.get(name) for name in frame[TAPE_NAME].tolist()]


def agent_column(
    names: Sequence[str], tapes: Sequence[str] | None = None, recorded: Container[str] = ()
) -> list[str | None]:
    """Each row's agent, from its tape's name: ``<tape>~<agent>`` is that agent's when it is among ``recorded``
    (the tapes that record an agent, :func:`~bub_nb.tape.stores.agent_tapes.agent_tapes`); a tape with agents'
    tapes beside it (among ``tapes``, default the rows' own) is its notebook's unnamed agent, ``main``; any other
    tape is no agent's."""
    unique = dict.fromkeys(names)
    agents = {name: agent_of_tape(name) if name in recorded else None for name in unique}
    notebooks = {notebook_of_tape(name) for name in (tapes if tapes is not None else unique) if name in recorded}
    for name, agent in agents.items():
        if agent is None and name in notebooks:
            agents[name] = MAIN_AGENT
    return [agents[name] for name in names]
