"""Opening the files a store keeps (tapes, their index, the lineage file) without following a symbolic link.

A tape folder is shared with other programs; a link planted at ``<name>.jsonl`` must not turn an append into a
write to ``~/.bashrc``, nor a read into a read of any file the link names. Every open here adds ``O_NOFOLLOW``, so
the last part of the path must be the file itself; the folder was resolved once, when its store was made.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO

from bub_nb.errors import TapeError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def linked_file_error(path: str | Path) -> TapeError:
    return TapeError(
        f"{str(path)!r} is a symbolic link; bub_nb opens tape, index and lineage files only as themselves, "
        "never through a link"
    )


def open_fd(path: str | Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that refuses a symbolic link at ``path`` with a one-line :class:`TapeError`."""
    try:
        return os.open(path, flags | NOFOLLOW, mode)
    except OSError as error:
        if error.errno == errno.ELOOP or (error.errno == errno.EMLINK and os.path.islink(path)):
            raise linked_file_error(path) from None
        raise


def open_binary(path: str | Path) -> BinaryIO:
    """``open(path, "rb")``, refusing a symbolic link."""
    return open(path, "rb", opener=lambda name, flags: open_fd(name, flags))


def read_bytes(path: str | Path) -> bytes:
    """``Path.read_bytes``, refusing a symbolic link."""
    with open_binary(path) as handle:
        return handle.read()
