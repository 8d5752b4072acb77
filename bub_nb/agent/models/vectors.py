"""The vectors an embedding model made for a tape's entries, kept by tape, entry id and model.

An entry never changes, so its vector is made once: a turn embeds only the entries it has not seen and its prompt.
Each vector is kept with the digest of the text it was made from, and one whose text differs (an entry rewritten
by a redaction) is never served. The cache lives in memory for the process; a file (SQLite) is kept only when one
is given, because a vector is derived from the entry's text and would outlive a redaction on a disk nobody reads:
the file keeps only the vectors of the entries its tape last asked for, so a redacted entry's vector goes the
next time that tape recalls.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    import numpy as np

Vector: TypeAlias = "np.ndarray[Any, Any]"
"""One embedding, float32, unit length (so a dot product is the cosine similarity). numpy is imported on first
use, so an agent that never recalls by embeddings does not load it."""


def text_digest(text: str) -> str:
    """What a vector is checked against: the SHA-256 of the text it was made from."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def unit(values: Sequence[float]) -> Vector:
    """``values`` as a float32 vector of unit length (a zero vector stays zero)."""
    import numpy as np

    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


class VectorCache:
    """Vectors by ``(tape, entry id, model)``, in memory, and in the SQLite file ``path`` when one is given."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        self._memory: dict[tuple[str, int, str], tuple[str, Vector]] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def __len__(self) -> int:
        return len(self._memory)

    def get(self, model: str, tape: str, wanted: Iterable[tuple[int, str]]) -> dict[int, Vector]:
        """The vectors kept for the entries ``wanted`` (id and text digest) whose text is still the same."""
        wanted = list(wanted)
        found: dict[int, Vector] = {}
        with self._lock:
            missing = []
            for entry, digest in wanted:
                kept = self._memory.get((tape, entry, model))
                if kept is not None and kept[0] == digest:
                    found[entry] = kept[1]
                else:
                    missing.append((entry, digest))
            if missing and self.path is not None:
                for entry, digest, vector in self._read(model, tape, missing):
                    self._memory[(tape, entry, model)] = (digest, vector)
                    found[entry] = vector
        return found

    def put(self, model: str, tape: str, made: Iterable[tuple[int, str, Vector]]) -> None:
        """Keep the vectors just made, each with the digest of its text."""
        import numpy as np

        made = list(made)
        with self._lock:
            for entry, digest, vector in made:
                self._memory[(tape, entry, model)] = (digest, vector)
            if made and self.path is not None:
                db = self._connection()
                with db:
                    db.executemany(
                        "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)",
                        [
                            (tape, entry, model, digest, vector.astype(np.float32).tobytes())
                            for entry, digest, vector in made
                        ],
                    )

    def keep_only(self, model: str, tape: str, entries: Iterable[int]) -> None:
        """Forget the vectors of ``tape``'s other entries (retracted or redacted since): they will not be asked for."""
        keep = set(entries)
        with self._lock:
            for key in [key for key in self._memory if key[0] == tape and key[2] == model and key[1] not in keep]:
                del self._memory[key]
            if self.path is not None and self.path.exists():
                db = self._connection()
                with db:
                    rows = db.execute("SELECT entry FROM vectors WHERE tape = ? AND model = ?", (tape, model))
                    gone = [(tape, model, entry) for (entry,) in rows.fetchall() if entry not in keep]
                    db.executemany("DELETE FROM vectors WHERE tape = ? AND model = ? AND entry = ?", gone)

    def close(self) -> None:
        with self._lock:
            db, self._db = self._db, None
            if db is not None:
                db.close()

    def _read(self, model: str, tape: str, missing: list[tuple[int, str]]) -> list[tuple[int, str, Vector]]:
        if self.path is None or not self.path.exists():
            return []
        import numpy as np

        digests = dict(missing)
        rows = self._connection().execute(
            "SELECT entry, digest, vector FROM vectors WHERE tape = ? AND model = ?", (tape, model)
        )
        return [
            (entry, digest, np.frombuffer(blob, dtype=np.float32).copy())
            for entry, digest, blob in rows.fetchall()
            if digests.get(entry) == digest
        ]

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
            db.execute("PRAGMA journal_mode=WAL")  # kernels of one home may share the file
            db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (tape TEXT NOT NULL, entry INTEGER NOT NULL, model TEXT NOT NULL, "
                "digest TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (tape, entry, model))"
            )
            self._db = db
        return self._db
