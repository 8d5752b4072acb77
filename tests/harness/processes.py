"""Which processes are alive: for tests that must leave no server process behind."""

from __future__ import annotations

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
