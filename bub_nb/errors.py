"""The exceptions bub_nb raises, all under one base.

::

    BubNbError
    ├── TapeError
    │   ├── TapeNameError          a tape name that is not a plain name
    │   ├── AnchorNotFoundError    an anchor name the tape does not hold (also a KeyError)
    │   ├── EntryNotFoundError     an entry id or address that resolves to nothing (also a KeyError)
    │   └── TapeAddressError       a ``tape://`` address that cannot be parsed
    ├── ContextError               a view mode or strategy that cannot be used
    ├── MemoryZoneError            a memory note or date that cannot be stored
    ├── ModelError                 the model could not be reached or answered badly
    │   ├── ModelConfigError       no model, an unknown model spec or a missing API key
    │   └── ContextLengthError     the endpoint refused the prompt as too long
    ├── ToolError                  an unknown tool, bad arguments or a failing tool
    └── CommandError               a malformed comma command

Every message names the offending value, so one line is enough to act on.
The notebook layer turns any of these into IPython's ``UsageError``.
"""

from __future__ import annotations


class BubNbError(Exception):
    """Base class of every error bub_nb raises on purpose."""


class TapeError(BubNbError):
    """A tape could not be opened, read or written as asked."""


class TapeNameError(TapeError, ValueError):
    """A tape name is not a plain name (it has a separator, ``..`` or is empty)."""


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


class TapeAddressError(TapeError, ValueError):
    """A ``tape://`` address that cannot be parsed."""


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


class ToolError(BubNbError):
    """An unknown tool, arguments that do not fit its schema, or a tool that failed."""


class CommandError(BubNbError, ValueError):
    """A comma command that cannot be parsed or run."""
