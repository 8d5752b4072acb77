"""Widget clicks reaching a cell that waits for them inside a running ``%%bub`` turn.

A turn runs its coroutines in the kernel's own event loop, re-entered (see
:func:`bub_nb.agent.eventloop.run_sync`). ipykernel 7 runs every cell in one shared context and
dispatches each shell message in a task of that context; while a cell runs, that context is entered,
so the re-entered loop must hold such tasks back, and a button's ``comm_msg`` would only arrive after
the cell ended. While a consent waits, comm messages are therefore dispatched through the kernel's
own ``shell_main`` in a context of their own, as ipykernel does for a waiting async cell; every other
message goes the usual way and waits for the cell, so queued cells keep their order and context.

An interrupt (■) during the wait must stop the turn, however it lands. ipykernel catches a
``KeyboardInterrupt`` raised inside a message's handler and logs it, so one that lands while a comm
message is handled would be lost and the cell would keep waiting. While the wait is on, the interrupt is
therefore recorded, and raised between two steps of the event loop, where it leaves the loop as an
interrupt that lands while the loop is idle does: through :func:`bub_nb.agent.eventloop.run_sync` to the
turn. A second press before the loop got to the first raises at once, as without the wait: it stops a
widget's handler that never returns, and the first press still stops the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import signal
import threading
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
def _interrupts_between_steps() -> Iterator[None]:
    """Inside the block, an interrupt is raised as a callback of the running event loop, not wherever the
    main thread happens to be; one still undelivered when the block ends is raised there.

    The handler is restored as soon as the interrupt is delivered: the turn that waits is cancelled then,
    but may leave the block only after its cell ended, when the kernel has put its own handler back."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    turn = asyncio.current_task()
    waiting, pressed, delivered = True, False, False

    def stopping() -> bool:
        """Whether the wait is over or being stopped, by this interrupt or another: then no interrupt goes to it."""
        return not waiting or delivered or (turn is not None and (turn.done() or turn.cancelling() > 0))

    def restore() -> None:
        if signal.getsignal(signal.SIGINT) is record:
            signal.signal(signal.SIGINT, previous)

    def deliver() -> None:
        nonlocal delivered
        if not stopping():
            delivered = True
            restore()
            raise KeyboardInterrupt

    def record(signum: int, frame: Any) -> None:
        nonlocal pressed
        if not pressed:
            pressed = True
            loop.call_soon_threadsafe(deliver)
        elif not stopping():  # pressed again before the loop got to it: a handler holds the loop, stop it there
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, record)
    try:
        yield
    finally:
        waiting = False
        restore()
    if pressed and not delivered:  # the wait ended in the same step as the press
        raise KeyboardInterrupt


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
        with _interrupts_between_steps():
            yield True
    finally:
        if getattr(stream, "_recv_callback", None) is comms_first:
            stream.on_recv(original, copy=False)
