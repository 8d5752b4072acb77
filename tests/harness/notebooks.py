"""Example notebooks run headless in a real kernel (nbclient), each on a copy of ``examples/`` with its own home."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from bub_nb.tape import Tape, TapeEntry, open_tape, session_tape_name

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(path.name for path in EXAMPLES.glob("*.ipynb"))
# Settings from the developer's shell that would change what the notebooks do.
UNSET = (
    "BUB_API_KEY", "OPENAI_API_KEY", "BUB_API_BASE", "OPENAI_BASE_URL",
    "BUB_CONTEXT", "BUB_TAPE", "BUB_MAX_STEPS", "MPLBACKEND",
)  # fmt: skip
CELL_TIMEOUT = 120


@dataclass
class Executed:
    """A notebook after a run: its cells with their outputs, its tape and the folder it ran in."""

    name: str
    notebook: Any
    tape: Tape
    folder: Path

    @property
    def code_cells(self) -> list[Any]:
        return [cell for cell in self.notebook.cells if cell.cell_type == "code"]

    def outputs(self, starting: str = "") -> list[Any]:
        """The outputs of the code cells whose source starts with ``starting``, in order."""
        return [output for cell in self.code_cells if cell.source.startswith(starting) for output in cell.outputs]

    def text(self, starting: str = "") -> str:
        """What those cells showed, as text: Markdown sources, plain reprs and streams."""
        parts = []
        for output in merged_streams(self.outputs(starting)):
            if output.output_type == "stream":
                parts.append(output.text)
            elif "data" in output:
                parts.append(output.data.get("text/markdown") or output.data.get("text/plain", ""))
        return "\n".join(parts)

    def entries(self, kind: str, name: str | None = None) -> list[TapeEntry]:
        return [entry for entry in self.tape.read(kinds=(kind,)) if name is None or entry.name == name]


def execute(name: str, tmp_path: Path, **settings: str) -> Executed:
    """Run the notebook ``name`` on a copy of ``examples/`` under ``tmp_path``; run again, it reuses that copy
    and its home, as a second Run All of the same notebook does. ``settings`` are environment variables over the
    offline defaults (``BUB_MODEL``, ``BUB_API_BASE``: a real endpoint)."""
    folder = tmp_path / "examples"
    if not folder.exists():
        shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.idx", "*.lock"))
    path = folder / name
    home = tmp_path / "home"
    env = {key: value for key, value in os.environ.items() if key not in UNSET}
    env.update({"BUB_HOME": str(home), "BUB_MODEL": "offline", "JPY_SESSION_NAME": str(path), **settings})
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )
    client.execute(env=env, cwd=str(folder))  # raises CellExecutionError, naming the cell, on any error
    return Executed(
        name, notebook, open_tape(lesson_name(notebook) or session_tape_name(folder, name), home=home), folder
    )


def lesson_name(notebook: Any) -> str | None:
    """The tape a ``%lesson start NAME`` line of the notebook works on, if it has one."""
    for cell in notebook.cells:
        for line in cell.source.splitlines() if cell.cell_type == "code" else ():
            words = line.split()
            if words[:2] == ["%lesson", "start"] and len(words) == 3:
                return words[2]
    return None


#: What differs between two runs of the same cells by the clock or by chance alone: dates, times, durations,
#: run ids and temporary folders.
CLOCK = (
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:\d{2}|Z)?"), "<date>"),
    (re.compile(r"\d{2}:\d{2}:\d{2}"), "<time>"),
    (re.compile(r"(elapsed_ms(&quot;|\"|')?:\s*)[\d.]+"), r"\1<ms>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(ms|µs|s)\b"), "<duration>"),
    (re.compile(r"<ms>[^…<\n]*…"), "<ms>…"),  # a shortened text that holds a duration ends where its length says
    (re.compile(r"\brun [0-9a-f]{16}\b"), "run <id>"),  # a turn's run id is random
    (re.compile(r"bub-home-[\w-]+"), "bub-home-<temporary>"),  # a notebook's own temporary folder
)


def without_clock(text: str) -> str:
    for pattern, replacement in CLOCK:
        text = pattern.sub(replacement, text)
    return text


#: Cells that show a column of milliseconds a run took, by notebook: their numbers, and the padding that lines them
#: up in columns, are left out of the comparison.
TIMED_CELLS = {
    "instruments.ipynb": ("entries_before = len(tape)", "from bub_nb.notebook.widgets import TapeTimeline"),
    "lesson-context.ipynb": ("TapeTimeline(tape, model=echo)",),
}


#: A timeline's activity per minute: a run that crosses a minute has one more column than a run that does not.
ACTIVITY = re.compile(r"Activity per .*?(?=Turns)", re.DOTALL)


def untimed(text: str) -> str:
    """A timed cell's output without its numbers, their padding and a timeline's activity over time."""
    return re.sub(r" +", " ", re.sub(r"\d+(\.\d+)?", "<n>", ACTIVITY.sub("", text)))


def merged_streams(outputs: list[Any]) -> list[Any]:
    """``outputs`` with each run of consecutive stream outputs to the same stream as one, as a frontend shows them.

    A kernel sends what a cell prints in as many messages as its buffer was flushed: ``print("a", "=", 1)`` is one
    message on a quiet machine and may be three on a busy one. Where those breaks fall is the machine's timing, not
    what the cell showed, so text is compared with them taken out.
    """
    merged: list[Any] = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.output_type == "stream"
            and previous is not None
            and previous.output_type == "stream"
            and previous.name == output.name
        ):
            merged[-1] = type(output)({**previous, "text": previous.text + output.text})
        else:
            merged.append(output)
    return merged


def comparable(name: str, source: str, shown: str) -> str:
    """What the cell of notebook ``name`` with ``source`` showed, as two runs of it must agree on: the clock taken out
    (:data:`CLOCK`), and for a timed cell (:data:`TIMED_CELLS`) every number too."""
    shown = without_clock(shown)
    return untimed(shown) if source.startswith(TIMED_CELLS.get(name, ())) else shown


def shown_outputs(run: Executed) -> list[str]:
    """What each code cell showed, as text, with the clock taken out (:data:`CLOCK`), for comparing two runs."""
    return [without_clock(shown_text(cell.outputs)) for cell in run.code_cells]


def shown_text(outputs: list[Any]) -> str:
    """The outputs of one cell as text, one part per output, a cell's consecutive stream messages as one
    (:func:`merged_streams`)."""
    parts: list[str] = []
    for output in merged_streams(outputs):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
        elif "data" in output:
            data = output.data
            parts.append(data.get("text/markdown") or data.get("text/html") or data.get("text/plain", ""))
    return "\n".join(parts)
