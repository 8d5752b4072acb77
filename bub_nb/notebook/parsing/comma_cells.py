"""A cell whose first non-blank character is ``,`` is a bub_nb command, in any cell while the extension is loaded.

IPython would otherwise read ``,handoff name=x`` as autoquote (``handoff("name=x")``). This cleanup
transformer runs before that and turns the cell into ``%%bub`` with the same text, so a comma
cell behaves exactly as it does under ``%%bub``.
"""

from __future__ import annotations

from typing import Any

from bub_nb.agent.commands import PREFIX


def comma_cell(lines: list[str]) -> list[str]:
    """IPython's cleanup transformer: a comma cell becomes a ``%%bub`` cell, any other cell stays as it is."""
    first = next((line for line in lines if line.strip()), "")
    if not first.lstrip().startswith(PREFIX):
        return lines
    return ["%%bub\n", *lines]


def install(shell: Any) -> None:
    if comma_cell not in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.append(comma_cell)


def uninstall(shell: Any) -> None:
    while comma_cell in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.remove(comma_cell)
