"""Answers streamed into the cell: one Markdown display updated in place, or plain text in a terminal."""

from __future__ import annotations

import sys
import time
from typing import Any

from IPython.display import display, update_display

_UPDATE_EVERY = 0.08  # seconds between in-place redraws; the last one always happens
_CURSOR = " ▌"


class MarkdownText:
    """Markdown for notebooks whose ``text/plain`` is the text itself, for terminals and saved-notebook readers.

    IPython's ``Markdown`` object leaves ``<IPython.core.display.Markdown object>`` as its plain text.
    """

    def __init__(self, markdown: str, plain: str | None = None) -> None:
        self.markdown = markdown
        self.plain = plain_text(markdown) if plain is None else plain

    def _repr_markdown_(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        return self.plain

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.plain)


def plain_text(markdown: str) -> str:
    """The same text for a terminal: only the ``<sub>`` tags around a footer go."""
    return markdown.replace("<sub>", "").replace("</sub>", "")


def show(markdown: str) -> None:
    """Display one of bub_nb's confirmations: Markdown in a notebook, the same text as plain text."""
    display(MarkdownText(markdown))


def rich_frontend(shell: Any) -> bool:
    """Whether displays reach a Jupyter frontend (JupyterLab, Notebook 7, VS Code, nbclient)."""
    kernel = getattr(shell, "kernel", None)
    return kernel is not None and type(shell).__name__ != "TerminalInteractiveShell"


class AnswerDisplay:
    """Shows an answer while it streams and leaves the final Markdown with its metadata."""

    def __init__(self, shell: Any, *, stream: bool = True) -> None:
        self.rich = rich_frontend(shell)
        self.stream = stream
        self.text = ""
        self._shown = 0
        self._last = 0.0
        self._display_id: str | None = None
        if self.rich and stream:
            handle = display(MarkdownText("*…*", "…"), display_id=True)
            self._display_id = getattr(handle, "display_id", None)

    def add(self, delta: str) -> None:
        self.text += delta
        if not self.stream:
            return
        if not self.rich:
            sys.stdout.write(delta)
            sys.stdout.flush()
            self._shown = len(self.text)
            return
        now = time.monotonic()
        if now - self._last >= _UPDATE_EVERY:
            self._last = now
            update_display(MarkdownText(self.text + _CURSOR, self.text), display_id=self._display_id)

    def discard(self) -> None:
        """Take the waiting placeholder away: the turn was refused before any answer (the error says why)."""
        if self._display_id is not None:
            update_display(MarkdownText("", ""), display_id=self._display_id)

    def finish(self, text: str, *, footer: str = "", metadata: dict[str, Any] | None = None) -> None:
        """Show the final answer (``text`` may differ from the stream, e.g. a command's output)."""
        body = text + (f"\n\n{footer}" if footer else "")
        if not self.rich:
            rest = text[self._shown :] if text.startswith(self.text[: self._shown]) else "\n" + text
            sys.stdout.write(rest + ("\n" if not rest.endswith("\n") else ""))
            if footer:
                sys.stdout.write(plain_text(footer).replace("`", "") + "\n")
            sys.stdout.flush()
            return
        if self._display_id is not None:
            update_display(MarkdownText(body), display_id=self._display_id, metadata=metadata)
        else:
            display(MarkdownText(body), metadata=metadata)
