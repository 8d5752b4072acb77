"""Following a tape while another process writes it: a callback for each time it grows.

A store that can wake its readers (PostgreSQL's ``LISTEN``/``NOTIFY``) is waited on; for files,
the tape's size is looked at a few times a second, which costs one ``stat``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from bub_nb.errors import BubNbError
from bub_nb.tape.stores.protocol import WakesReaders

if TYPE_CHECKING:
    from bub_nb.tape.tape import Tape

_log = logging.getLogger(__name__)


class Following:
    """A background thread calling ``on_change`` whenever ``tape`` gains entries, until ``stop()``."""

    def __init__(self, tape: Tape, on_change: Callable[[], object], *, interval: float = 0.5) -> None:
        self.tape, self.on_change, self.interval = tape, on_change, interval
        self._stopped = threading.Event()
        store = tape.base_store
        self._follower = store.follow(tape.name) if isinstance(store, WakesReaders) else None
        self._last_id = tape.base_store.stats(tape.name).last_id
        self._thread = threading.Thread(target=self._run, name=f"bub_nb follow {tape.name}", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _changed(self) -> bool:
        if self._follower is not None:
            return bool(self._follower.poll(self.interval))
        self._stopped.wait(self.interval)
        last_id = self.tape.base_store.stats(self.tape.name).last_id
        changed, self._last_id = last_id != self._last_id, last_id
        return changed

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                if self._changed() and not self._stopped.is_set():
                    self.on_change()
            except BubNbError as error:  # a server restart, say: try again after a pause
                _log.debug("following %s: %s", self.tape.name, error)
                self._stopped.wait(self.interval)
        if self._follower is not None:
            self._follower.close()

    def stop(self, timeout: float | None = 5.0) -> None:
        self._stopped.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)


def follow_tape(tape: Tape, on_change: Callable[[], object], *, interval: float = 0.5) -> Following:
    """Call ``on_change()`` (from a background thread) each time ``tape`` grows; ``.stop()`` ends it."""
    return Following(tape, on_change, interval=interval)
