"""Server processes: started on a free local port and waited for until they listen, and which are still alive
(for tests that must leave no server process behind)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def processes_with(marker: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().split()[2]
            except OSError:
                continue
            if marker in command and state != "Z":
                found.append(int(entry.name))
    return found


def free_port() -> int:
    """A local TCP port no one listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def listening(process: subprocess.Popen[bytes], port: int, seconds: float = 120) -> Iterator[None]:
    """Once ``process`` accepts connections on ``port``; it is terminated on the way out. Fails with what it wrote
    to a piped stderr if it exits first (``seconds`` bounds a hang: a cold start on a busy machine takes seconds)."""
    try:
        deadline = time.monotonic() + seconds
        while True:
            if process.poll() is not None:
                raise AssertionError(process.stderr.read().decode() if process.stderr else f"{process.args} exited")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise AssertionError(f"{process.args} did not listen on port {port} within {seconds:.0f} s")
            time.sleep(0.05)
        yield
    finally:
        process.terminate()
        process.wait(10)
