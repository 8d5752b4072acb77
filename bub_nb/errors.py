"""The exceptions bub_nb raises, all under one base.

::

    BubNbError
    ├── TapeError
    │   ├── TapeNameError          a tape name that is not a plain name, or names a file the store keeps
    │   ├── TapeNotFoundError      a tape that does not exist, opened without ``create``
    │   ├── AnchorNameError        an anchor name a handoff may not use (``memory/…`` is the memory zone's)
    │   ├── TapeAccessError        a tape this database role may not read or write (also a PermissionError)
    │   ├── AnchorNotFoundError    an anchor name the tape does not hold (also a KeyError)
    │   ├── EntryNotFoundError     an entry id or address that resolves to nothing (also a KeyError)
    │   ├── CitationError          an anchor state citing entries the tape does not hold (also a ValueError)
    │   ├── TapeAddressError       a ``tape://`` address that cannot be parsed
    │   └── RetractionError        entries that cannot be retracted, brought back or redacted (also a ValueError)
    ├── ContextError               a view mode or strategy that cannot be used
    ├── MemoryZoneError            a memory note or date that cannot be stored
    ├── ModelError                 the model could not be reached or answered badly
    │   ├── ModelConfigError       no model, an unknown model spec or a missing API key
    │   └── ContextLengthError     the prompt is longer than the model's context window
    │       └── PromptTooLongError the turn's own prompt, with the system prompt, is over the window
    ├── ToolError                  a tool that cannot be made, registered or chosen; inside a tool, a refusal
    │   └── ToolCallError          one call that failed: unknown tool, bad arguments, the tool raised or was stopped
    ├── PipelineError              a plugin that cannot be registered, removed or used
    ├── ExportError                a tape a receiver did not take, or an export whose extra is not installed
    ├── PriceError                 a price table that cannot be read (also a ValueError)
    ├── BudgetError                a turn whose estimated prompt is over the token budget
    ├── ReplayError                a replay with nothing to replay
    ├── LogImportError             another agent's log whose format cannot be told, or a tape it may not be written to
    ├── CommandError               a malformed comma command
    ├── McpError                   an MCP server that cannot be configured, approved, started or reached
    ├── AgentError                 an agent name that is not allowed or names no agent; a handoff between agents refused
    │   └── NotHoldingError        an agent asked to run while another agent holds the conversation
    └── InterpolationError         a ``{placeholder}`` in a cell that names nothing in the notebook (also a KeyError)

    BubNbWarning                   (a warning, also a UserWarning)
    └── TapeOrderWarning           ids out of order that a writer without a lock added past what an open reader read

Every message names the offending value, so one line is enough to act on.
The notebook layer turns any of these into IPython's ``UsageError``.
An error raised while a turn ran carries that turn, recorded as failed, in ``turn``.
"""

from __future__ import annotations

from typing import Any


class BubNbError(Exception):
    """Base class of every error bub_nb raises on purpose."""

    #: The turn this error ended (a :class:`bub_nb.Turn`, recorded with status ``error``); ``None`` when the
    #: error did not happen inside a turn.
    turn: Any = None


class BubNbWarning(UserWarning):
    """Base class of every warning bub_nb gives: something worth one line that does not stop the work."""


class TapeOrderWarning(BubNbWarning):
    """A writer that takes no lock (Bub 0.5) repeated an id past what an open reader had read. That reader reads on
    and appends after the highest id; a fresh open refuses the tape until ``bub-nb tapes merge`` renumbers it."""


class TapeError(BubNbError):
    """A tape could not be opened, read or written as asked."""


class TapeNameError(TapeError, ValueError):
    """A tape name is not a plain name (it has a separator, ``..`` or is empty)."""


class TapeNotFoundError(TapeError, LookupError):
    """A tape that does not exist, opened where a new one is not wanted (``create=False``)."""


class AnchorNameError(TapeError, ValueError):
    """An anchor name a handoff may not use: empty, or under a prefix another part of bub_nb owns."""


class TapeAccessError(TapeError, PermissionError):
    """A tape in a shared store that belongs to another role."""


class AnchorNotFoundError(TapeError, KeyError):
    """An anchor name that the tape does not hold."""

    def __init__(self, name: str, known: list[str]) -> None:
        shown = ", ".join(dict.fromkeys(known)) or "(none)"
        super().__init__(f"Anchor {name!r} was not found; known anchors: {shown}")
        self.name = name
        self.known = known

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class EntryNotFoundError(TapeError, KeyError):
    """An entry id or address that resolves to nothing."""

    def __str__(self) -> str:
        return str(self.args[0])


class CitationError(TapeError, ValueError):
    """An anchor state whose text cites an entry past the tape's last id: a citation is bounded by the tape."""


class TapeAddressError(TapeError, ValueError):
    """A ``tape://`` address that cannot be parsed."""


class RetractionError(TapeError, ValueError):
    """Entries that cannot be taken back as asked: an anchor, an event, a backwards range, already retracted."""


class ContextError(BubNbError, ValueError):
    """A view mode or context strategy that cannot be used."""


class MemoryZoneError(BubNbError, ValueError):
    """A memory note or date that cannot be stored in the memory zone."""


class ModelError(BubNbError):
    """The model could not be reached, or answered with an error."""


class ModelConfigError(ModelError):
    """No model configured, an unknown model spec, or a missing API key."""


class ContextLengthError(ModelError):
    """The endpoint refused the prompt because it is longer than the model's context."""


class PromptTooLongError(ContextLengthError):
    """The turn's prompt alone (with the system prompt) is over the model's window: no handoff can help it."""

    #: The ``kind`` of the ``error`` entry such a turn ends with.
    kind = "prompt_too_long"


class ToolError(BubNbError):
    """A tool that cannot be made, registered or chosen.

    A tool may raise it to refuse a call; the call then fails as a :class:`ToolCallError` of kind ``tool``.
    """


class ToolCallError(ToolError):
    """A tool call that could not run or that failed; :meth:`as_result` is what the model is sent.

    ``kind`` is ``not_found`` (unknown tool), ``invalid_input`` (arguments that are not JSON or do
    not fit the schema), ``tool`` (the tool itself raised; the exception is the ``__cause__``) or
    ``interrupted`` (the turn was stopped before the tool returned).
    """

    def __init__(self, tool: str, kind: str, message: str) -> None:
        super().__init__(message)
        self.tool, self.kind, self.message = tool, kind, message

    def as_result(self) -> dict[str, object]:
        return {"kind": self.kind, "message": self.message}


class PipelineError(BubNbError):
    """A plugin the turn pipeline cannot register, remove or use."""


class ExportError(BubNbError):
    """A tape could not be exported: the receiver refused it, or the export's extra is not installed."""


class PriceError(BubNbError, ValueError):
    """A price table that is not ``{model: {"input": number, "output": number}}`` per million tokens."""


class BudgetError(BubNbError):
    """A turn refused before writing: its estimated prompt is over the token budget."""


class ReplayError(BubNbError):
    """A replay that cannot start: no recorded prompt in the range."""


class CommandError(BubNbError, ValueError):
    """A comma command that cannot be parsed or run."""


class AgentError(BubNbError, ValueError):
    """An agent name that is not allowed or names no agent, or a handoff between agents that cannot be made."""


class NotHoldingError(AgentError):
    """An agent asked to run after it handed the conversation to another agent, which holds it now."""


class InterpolationError(BubNbError, KeyError):
    """A placeholder in a cell names something the notebook does not have."""

    def __str__(self) -> str:
        return str(self.args[0])


class LogImportError(BubNbError, ValueError):
    """Another agent's log cannot be imported: its format is unknown or unreadable, or its tape is taken."""


class McpError(BubNbError):
    """An MCP server that cannot be configured, approved, started or reached; the message names the server."""
