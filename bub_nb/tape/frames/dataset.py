"""A home's tapes as a Parquet dataset partitioned by day and tape (``day=YYYY-MM-DD/tape=NAME/``), written by
increments: each export adds the entries that are new since the last one, in files no export overwrites.

The files hold the columns of ``Tape.to_arrow()`` (``payload`` and ``meta`` as JSON text) with ``tape_name`` kept
whole; the ``tape`` folder's value is the name as pyarrow's hive partitioning writes it, percent-encoded, so no
name (``..``, ``a/b``, ``%``, ``=``, non-ASCII) makes a path outside the dataset. ``_bub_nb_export.json`` beside
the partitions is the export state: for each tape the last id exported, the files that hold it and the identity
of its file (the length and SHA-256 of the complete lines exported). A tape whose file no longer starts with those
bytes was rewritten (redacted, reset, replaced): its files are written anew and the old ones removed, so a
redacted text leaves the dataset with the next export.

A new file is written under a hidden staging folder and renamed into its partition, so a reader never sees half a
file; the state names the files of an export before they are moved (a crash between is undone by the next export)
and ``read_tapes(dataset=...)`` reads only the files the state has committed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from bub_nb.errors import ExportError, TapeError
from bub_nb.tape.frames.arrow import columns_to_arrow, loads, pyarrow
from bub_nb.tape.stores.columns import TAPE_NAME, Columns

STATE = "_bub_nb_export.json"
LOCK = "_bub_nb_export.lock"
PARTITIONS = ("day", "tape")
_FORMAT = "bub_nb tape dataset"
_VERSION = 1
_NAME_MAX = 255  # bytes in one folder name on the file systems a dataset lives on
_BLOCK = 1 << 20


@dataclass(frozen=True)
class DatasetExport:
    """What one export wrote: the rows and files added, the tapes that grew and those written anew."""

    folder: Path
    rows: int = 0
    files: tuple[Path, ...] = ()
    grown: tuple[str, ...] = ()
    rewritten: tuple[str, ...] = ()
    unchanged: int = 0
    gone: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the command line."""
        line = f"Exported {self.rows} new entries of {len(self.grown)} tape(s) in {len(self.files)} file(s) to "
        line += f"{self.folder}; {self.unchanged} tape(s) unchanged"
        if self.rewritten:
            line += f"; rewritten since the last export, so written anew: {', '.join(self.rewritten)}"
        if self.gone:
            line += f"; no longer in the home, kept in the dataset: {', '.join(self.gone)}"
        return line


@dataclass
class _TapeState:
    last_id: int = 0
    length: int = 0  # bytes of complete lines the export read
    sha256: str = ""
    seen: list[int] = field(default_factory=list)  # size, mtime_ns, inode: unchanged without hashing
    files: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, data: Any) -> _TapeState:
        return cls(
            int(data["last_id"]), int(data["length"]), str(data["sha256"]), list(data["seen"]), list(data["files"])
        )


def export_dataset(folder: str | Path, home: str | Path | None = None, names: Sequence[str] = ()) -> DatasetExport:
    """``bub-nb tapes export --dataset DIR``: the tapes of ``home`` (``names``, or all) added to the dataset at
    ``folder`` (created when missing), only the entries new since the last export."""
    import pyarrow.compute as pc

    from bub_nb.tape.locations import bub_home, tapes_home
    from bub_nb.tape.stores.resolve import file_store

    pyarrow()
    out = _dataset_folder(folder, creating=True)
    if not bub_home(home).is_dir():
        raise ExportError(f"Bub home {str(bub_home(home))!r} is not a folder, so it holds no tapes")
    store = file_store(tapes_home(home))
    every = store.list_tapes()
    wanted = list(dict.fromkeys(names)) if names else every
    missing = [name for name in wanted if name not in every]
    if missing:
        raise ExportError(f"No tape named {missing[0]!r} under {store.directory}; bub-nb tapes list names them")
    for name in wanted:
        _check_partition(name)
    with _locked(out):
        state = _recover(out)
        tapes: dict[str, _TapeState] = state["tapes"]
        export = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
        parts, grown, rewritten, unchanged, updates = [], [], [], 0, {}
        for name in wanted:
            path = store.path_for(name)
            known = tapes.get(name)
            seen = _seen(path)
            if known is not None and known.seen == seen:
                unchanged += 1
                continue
            length, digest = _complete_lines(path, known.length if known else 0)
            fresh = known is None or known.length > length or digest[0] != known.sha256
            after = 0 if fresh or known is None else known.last_id
            table = _tape_table(store, name)
            new = table.filter(pc.greater(table.column("id"), after))
            last = max(after, pc.max(new.column("id")).as_py() or 0)
            files = [] if fresh or known is None else list(known.files)
            updates[name] = _TapeState(last, length, digest[1], seen, files)
            if fresh and known is not None:
                rewritten.append(name)
            if new.num_rows:
                parts.append(new)
                grown.append(name)
            elif not fresh:
                unchanged += 1
        gone = tuple(sorted(set(tapes) - set(every)))
        written = _write(out, export, parts) if parts else []
        for relative, tape_name in written:
            updates[tape_name].files.append(relative)
        dropped = [relative for name in rewritten for relative in tapes[name].files]
        _save(out, {**state, "pending": {"export": export, "files": [relative for relative, _ in written]}})
        staging = out / f".export-{export}"
        for relative, _ in written:
            target = out / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / relative, target)
        tapes.update(updates)
        _save(out, {**state, "tapes": tapes, "pending": None, "obsolete": dropped})
        _remove(out, dropped)
        shutil.rmtree(staging, ignore_errors=True)
        if dropped:
            _save(out, {**state, "tapes": tapes, "pending": None, "obsolete": []})
    return DatasetExport(
        out,
        sum(part.num_rows for part in parts),
        tuple(out / relative for relative, _ in written),
        tuple(grown),
        tuple(rewritten),
        unchanged,
        gone,
    )


def _tape_table(store: Any, name: str) -> Any:
    """One tape's rows as ``to_arrow()`` has them, in the dataset's one schema whichever reader read them."""
    from bub_nb.tape.anchors import NamedTape
    from bub_nb.tape.frames import arrow, native
    from bub_nb.tape.stores.cloudevents import CloudEventsTapeStore, is_cloudevents_file

    path = store.path_for(name)
    if is_cloudevents_file(path):  # Bub's next format: read by its own reader
        table = arrow.tape_to_arrow(NamedTape(name, CloudEventsTapeStore(path, name)))
    else:
        table = native.tape_to_arrow(NamedTape(name, store))  # any file read_tapes() reads, whatever its name
    return table.cast(_schema())


def _schema() -> Any:
    """The columns of ``to_arrow()`` with their types, as the plain reader gives them."""
    return columns_to_arrow(Columns(), names=[]).schema


def _partitioning() -> Any:
    import pyarrow.dataset as ds

    pa = pyarrow()
    return ds.HivePartitioning(
        pa.schema([("day", pa.string()), ("tape", pa.string())]), null_fallback="__HIVE_DEFAULT_PARTITION__"
    )


def _write(out: Path, export: str, parts: list[Any]) -> list[tuple[str, str]]:
    """The new rows written under the export's staging folder, a file per day and tape named after the export;
    each file's path in the dataset and its tape."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    pa = pyarrow()
    table = pa.concat_tables(parts)
    days = pc.strftime(table.column("date"), format="%Y-%m-%d")
    table = table.append_column("day", days).append_column("tape", table.column(TAPE_NAME).cast(pa.string()))
    staging = out / f".export-{export}"
    paths: list[str] = []
    ds.write_dataset(
        table,
        str(staging),
        format="parquet",
        partitioning=_partitioning(),
        basename_template=f"part-{export}-{{i}}.parquet",
        max_partitions=max(1024, table.num_rows),
        file_visitor=lambda written: paths.append(written.path),
    )
    found = []
    for path in paths:
        relative = Path(path).relative_to(staging)
        segment = relative.parts[1]
        found.append((relative.as_posix(), unquote(segment.removeprefix("tape="))))
    return found


def read_dataset(folder: str | Path) -> Any:
    """The committed rows of the dataset at ``folder`` as one Arrow table with the columns of ``to_arrow()``, tape
    by tape and by id, ``retracted`` worked out again over the whole tape (a row exported before its tape
    retracted it is retracted now)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    pa = pyarrow()
    out = _dataset_folder(folder, creating=False)
    if not (out / STATE).is_file():
        raise TapeError(
            f"{str(out)!r} is not a tape dataset: it holds no {STATE} (bub-nb tapes export --dataset DIR writes one)"
        )
    state = _load(out)
    files = [str(out / relative) for tape in state["tapes"].values() for relative in tape.files]
    schema = _schema()
    if not files:
        return schema.empty_table()
    dataset = ds.dataset(
        files, format="parquet", partitioning=_partitioning(), partition_base_dir=str(out), schema=schema
    )
    table = dataset.to_table(columns=schema.names)
    order = pc.sort_indices(
        pa.table({"t": table.column(TAPE_NAME).cast(pa.string()), "i": table.column("id")}),
        sort_keys=[("t", "ascending"), ("i", "ascending")],
    )
    table = table.take(order)
    return table.set_column(table.schema.get_field_index("retracted"), "retracted", _retracted_now(table))


def _retracted_now(table: Any) -> Any:
    """Whether each row is retracted by its tape's ``retract`` and ``unretract`` events, wherever they were
    exported."""
    import numpy as np
    import pyarrow.compute as pc

    from bub_nb.tape.entries import TapeEntry
    from bub_nb.tape.events import RETRACT, UNRETRACT, retracted_ids

    pa = pyarrow()
    names = table.column(TAPE_NAME).cast(pa.string()).to_numpy(zero_copy_only=False)
    ids = table.column("id").to_numpy()
    flags = np.zeros(len(ids), dtype=bool)
    events = table.filter(
        pc.and_(
            pc.equal(table.column("kind").cast(pa.string()), "event"),
            pc.is_in(table.column("name"), value_set=pa.array([RETRACT, UNRETRACT], type=pa.large_string())),
        )
    )
    by_tape: dict[str, list[Any]] = {}
    for tape, entry_id, payload in zip(
        events.column(TAPE_NAME).to_pylist(),
        events.column("id").to_pylist(),
        events.column("payload").to_pylist(),
        strict=True,
    ):
        by_tape.setdefault(tape, []).append(TapeEntry(entry_id, "event", loads(payload)))
    for tape, entries in by_tape.items():
        retracted = retracted_ids(entries)
        if retracted:
            flags |= (names == tape) & np.isin(ids, np.fromiter(retracted, dtype=np.int64))
    return pa.array(flags)


def _dataset_folder(folder: str | Path, *, creating: bool) -> Path:
    out = Path(folder).expanduser()
    if out.is_file():
        raise (ExportError if creating else TapeError)(
            f"{str(out)!r} is a file, not a tape dataset's folder; give a folder (a new one to start a dataset)"
        )
    if not creating and not out.is_dir():
        raise TapeError(f"No tape dataset at {str(out)!r} (bub-nb tapes export --dataset DIR writes one)")
    ours = (LOCK, STATE)  # what an export that stopped before its first state left is no one else's
    others = (
        [p for p in out.iterdir() if p.name not in ours and not p.name.startswith(".export-")] if out.is_dir() else []
    )
    if creating and not (out / STATE).exists() and others:
        raise ExportError(
            f"{str(out)!r} holds files but no {STATE}, so it is not a tape dataset; give an empty or new folder"
        )
    if creating:
        out.mkdir(parents=True, exist_ok=True)
    return out


def _check_partition(name: str) -> None:
    """A tape whose folder name would be longer than a file system allows is refused before anything is written."""
    from urllib.parse import quote

    segment = f"tape={quote(name, safe='')}"
    if len(segment.encode()) > _NAME_MAX:
        raise ExportError(
            f"Tape {name[:40]!r}... has a name whose partition folder would be {len(segment.encode())} bytes, "
            f"past the {_NAME_MAX} a folder name may have; export the other tapes by name"
        )


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    """One export at a time per dataset: a second one is refused in one line, not interleaved."""
    import fcntl

    with open(out / LOCK, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise ExportError(f"Another export is writing to {str(out)!r}; run this one after it") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _load(out: Path) -> dict[str, Any]:
    path = out / STATE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != _FORMAT or data.get("version") != _VERSION:
            raise ValueError(f"format {data.get('format')!r} version {data.get('version')!r}")
        data["tapes"] = {name: _TapeState.of(tape) for name, tape in data["tapes"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise TapeError(
            f"The export state {str(path)!r} cannot be read ({error}); it is not one bub_nb wrote"
        ) from None
    return data


def _save(out: Path, state: dict[str, Any]) -> None:
    """The state written whole, then renamed over the old one."""
    data = {
        **state,
        "format": _FORMAT,
        "version": _VERSION,
        "tapes": {name: vars(tape) for name, tape in sorted(state["tapes"].items())},
    }
    temporary = out / f".{STATE}.{uuid.uuid4().hex[:8]}"
    temporary.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, out / STATE)


def _recover(out: Path) -> dict[str, Any]:
    """The state, after undoing what a crashed export left: its moved files, its staging, the files it dropped."""
    if not (out / STATE).exists():
        return {"tapes": {}, "pending": None, "obsolete": []}
    state = _load(out)
    pending = state.get("pending") or {}
    _remove(out, [*pending.get("files", []), *state.get("obsolete", [])])
    for staging in out.glob(".export-*"):
        shutil.rmtree(staging, ignore_errors=True)
    return {**state, "pending": None, "obsolete": []}


def _remove(out: Path, files: Sequence[str]) -> None:
    for relative in files:
        with contextlib.suppress(FileNotFoundError):
            (out / relative).unlink()


def _seen(path: Path) -> list[int]:
    status = path.stat()
    return [status.st_size, status.st_mtime_ns, status.st_ino]


def _complete_lines(path: Path, known: int) -> tuple[int, tuple[str, str]]:
    """The length of the file's complete lines, and two SHA-256 digests: of its first ``known`` bytes (the
    complete lines the last export read; empty when the file is shorter now) and of all its complete lines."""
    digest = hashlib.sha256()
    prefix, length, pending = "", 0, b""
    if known == 0:
        prefix = digest.hexdigest()
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            data = pending + block
            end = data.rfind(b"\n") + 1
            complete, pending = data[:end], data[end:]  # a line the next block may finish waits
            if not prefix and length < known <= length + len(complete):
                head = digest.copy()
                head.update(complete[: known - length])
                prefix = head.hexdigest()
            digest.update(complete)
            length += len(complete)
    return length, (prefix, digest.hexdigest())
