"""A turn in progress, so that an abort from anywhere (another thread, a Ctrl-C) stops it at once."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bub_nb.agent.turn.outcome import Turn
    from bub_nb.agent.turn.recorder import TurnRecorder


@dataclass
class RunningTurn:
    """A turn in progress: its recorder and the task driving it, so an abort can stop it from anywhere."""

    recorder: TurnRecorder
    task: asyncio.Task[Any] | None
    aborted: bool = field(default=False, init=False)
    done: bool = field(default=False, init=False)

    def resumed(self, task: asyncio.Task[Any] | None) -> None:
        """The turn goes on in ``task`` (a synchronous stream resumes each delta in a new task)."""
        self.task = task

    def end(self) -> None:
        """The task driving the turn is done with it: an abort no longer cancels that task."""
        self.done = True

    def abort(self) -> Turn:
        """Close the turn as interrupted now, and cancel its task unless the caller is that task."""
        self.aborted = True
        turn = self.recorder.interrupt()
        task = self.task
        if task is None or task.done():
            return turn

        def cancel() -> None:
            if not self.done and task is not asyncio.current_task():
                task.cancel()

        loop = task.get_loop()
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            cancel()
        else:
            with contextlib.suppress(RuntimeError):  # that loop is already closed
                loop.call_soon_threadsafe(cancel)
        return turn
