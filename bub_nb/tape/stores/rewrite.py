"""The one rewrite a tape file allows: some lines replaced in place, atomically, under the tape's lock.

Only redaction calls it. The new file is written beside the old one, flushed to disk, and moved over it with
``os.replace``, so a crash leaves either the old file or the new one, never a torn tape. Lines that do not
change stay byte for byte; the anchor index sidecar (``.idx``), whose byte offsets no longer hold, is removed
and rebuilt on the next read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from bub_nb.errors import TapeError
from bub_nb.tape._lines import Record, decode_record, dumps, load_json
from bub_nb.tape.stores._tape_file import open_fd, read_bytes

#: Given a decoded line, its replacement, or ``None`` to keep the line as it is.
LineChange = Callable[[Record], Record | None]

_ATTEMPTS = 5


def rewrite_lines(path: Path, change: LineChange) -> list[int]:
    """Replace the lines of ``path`` that ``change`` rewrites; returns their ids (nothing written when none).

    Only ``payload`` and ``meta`` of a changed line are replaced; its other fields stay as its writer wrote them
    (an older line's ``timestamp``, say).
    """
    return rewrite_file(path, lambda data: _changed_lines(data, change))


def rewrite_file(path: Path, change: Callable[[bytes], tuple[list[bytes], list[int]]]) -> list[int]:
    """Rewrite ``path`` with ``change(its bytes)``: its new lines and the ids they changed (none: nothing written).

    A writer that appends without the lock (Bub) and lands while the new file is prepared is noticed by the
    size, and the rewrite starts again from its line.
    """
    with FileLock(str(path) + ".lock", mode=0o600):
        for _ in range(_ATTEMPTS):
            try:
                original = read_bytes(path)
            except OSError as error:
                raise TapeError(f"Tape file {str(path)!r} cannot be read: {error.strerror}") from None
            lines, changed = change(original)
            if not changed:
                return []
            if path.stat().st_size != len(original):
                continue  # another writer appended meanwhile
            replace_atomically(path, b"\n".join(lines))
            path.with_name(path.name + ".idx").unlink(missing_ok=True)
            return changed
    raise TapeError(f"Tape file {str(path)!r} kept growing while it was rewritten; nothing was rewritten, try again")


def _changed_lines(data: bytes, change: LineChange) -> tuple[list[bytes], list[int]]:
    lines = data.split(b"\n")
    changed: list[int] = []
    for number, line in enumerate(lines):
        record = decode_record(line) if line.strip() else None
        replaced = change(record) if record is not None else None
        if record is None or replaced is None:
            continue
        raw = load_json(line)
        raw["payload"] = replaced["payload"]
        if "meta" in raw or replaced["meta"]:
            raw["meta"] = replaced["meta"]
        lines[number] = dumps(raw)
        changed.append(int(record["id"]))
    return lines, changed


def replace_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file beside ``path``, flush it to disk and move it over ``path``."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.rewrite")
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd = open_fd(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a crash only once the folder is on disk
    finally:
        os.close(directory)
