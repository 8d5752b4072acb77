"""Widget clicks reaching a cell that waits for them inside a running ``%%bub`` turn.

A turn runs its coroutines in the kernel's own event loop, re-entered (see
:func:`bub_nb.agent.eventloop.run_sync`). ipykernel 7 runs every cell in one shared context and
dispatches each shell message in a task of that context; while a cell runs, that context is entered,
so the re-entered loop must hold such tasks back, and a button's ``comm_msg`` would only arrive after
the cell ended. While a consent waits, comm messages are therefore dispatched through the kernel's
own ``shell_main`` in a context of their own, as ipykernel does for a waiting async cell; every other
message goes the usual way and waits for the cell, so queued cells keep their order and context.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

_COMM_MESSAGES = frozenset({"comm_open", "comm_msg", "comm_close"})


def _main_shell_stream(kernel: Any) -> Any:
    """The stream the main thread reads shell messages from: behind the shell channel thread on
    ipykernel 7, the shell socket's own stream before it."""
    thread = getattr(kernel, "shell_channel_thread", None)
    if thread is not None:
        pair = getattr(getattr(thread, "manager", None), "_shell_channel_to_main", None)
        return getattr(pair, "to_stream", None)
    return getattr(kernel, "shell_stream", None)


def _is_comm(kernel: Any, frames: list[Any]) -> bool:
    try:
        _, rest = kernel.session.feed_identities(frames, copy=False)
        header = kernel.session.deserialize(rest, content=False, copy=False)["header"]
    except Exception:
        return False
    return header.get("msg_type") in _COMM_MESSAGES


@contextlib.contextmanager
def comms_while_waiting(shell: Any) -> Iterator[bool]:
    """Inside the block, comm messages (widget clicks) are dispatched at once; yields whether they can be."""
    kernel = getattr(shell, "kernel", None)
    stream = _main_shell_stream(kernel) if kernel is not None else None
    original = getattr(stream, "_recv_callback", None)
    shell_main = getattr(kernel, "shell_main", None)
    if stream is None or original is None or shell_main is None:
        yield False
        return

    async def comms_first(frames: list[Any]) -> Any:
        if _is_comm(kernel, frames):
            return await asyncio.create_task(shell_main(None, frames), context=contextvars.Context())
        return await original(frames)

    stream.on_recv(comms_first, copy=False)
    try:
        yield True
    finally:
        if getattr(stream, "_recv_callback", None) is comms_first:
            stream.on_recv(original, copy=False)
