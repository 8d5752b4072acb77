"""What tapes and anchors may be called: Bub's session names, the rules for a tape's name, and the names bub_nb keeps.

A tape's name becomes a file name, so every rule here keeps ``<name>.jsonl`` and its sidecars inside the tapes
folder and apart from the files the store keeps for itself. An address names an entry or an anchor of any tape:
``tape://<tape>/entry/<id>``, ``tape://<tape>/anchor/<name>``.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bub_nb.errors import AgentError, AnchorNameError, TapeAddressError, TapeNameError
from bub_nb.tape.entries import MEMORY_ANCHOR_PREFIX

# Room for the longest file made from a name, "<name>.jsonl.<stamp>-<n>.bak", within 255 bytes.
MAX_NAME_BYTES: Final = 200

RESERVED_ANCHOR_PREFIXES: Final = (MEMORY_ANCHOR_PREFIX,)
"""A handoff under these prefixes would forge what the memory zone writes (``memory/open``, ``memory/seal``)."""

LINEAGE_TAPE_NAME: Final = "session_graph"
"""``session_graph.jsonl`` holds fork lineage, not entries."""

LINEAGE_FILE: Final = f"{LINEAGE_TAPE_NAME}.jsonl"
"""The file beside the tapes of a folder that records which tape was forked from which."""

SIDECAR_SUFFIXES: Final = (".idx", ".lock", ".bak")
"""What the store puts after ``<name>.jsonl``: its index, its lock and archives."""


def session_tape_name(workspace: str | Path, session_id: str) -> str:
    """Bub's tape name for a session: ``md5(workspace)[:16] + "__" + md5(session_id)[:16]``."""
    workspace_hash = hashlib.md5(str(Path(workspace).resolve()).encode()).hexdigest()[:16]
    session_hash = hashlib.md5(session_id.encode()).hexdigest()[:16]
    return f"{workspace_hash}__{session_hash}"


def check_file_name(name: str) -> str:
    """``name`` if ``<name>.jsonl`` stays inside its folder; the store's own, looser check.

    Names taken from existing files (``my..notes.jsonl``) pass; anything with a separator, ``.``,
    ``..``, a NUL or too many bytes does not.
    """
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or any(mark in name for mark in ("/", "\\", "\x00", os.sep, os.altsep or "/"))
        or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES
        or not _encodable(name)
    ):
        raise TapeNameError(f"Tape name {name!r} cannot name a file inside the tapes folder")
    return name


def _encodable(name: str) -> bool:
    """Whether ``name`` can be a file name here (a lone surrogate cannot)."""
    try:
        os.fsencode(name)
    except UnicodeError:
        return False
    return True


def validate_tape_name(name: str) -> str:
    """Return ``name`` if it is a plain tape name; raise ``TapeNameError`` quoting it otherwise."""
    problem = None
    if not isinstance(name, str) or not name.strip():
        problem = "it is empty"
    elif "/" in name or "\\" in name or os.sep in name or (os.altsep and os.altsep in name):
        problem = "it contains a path separator"
    elif ".." in name:
        problem = "it contains '..'"
    elif "\x00" in name or name.startswith("."):
        problem = "it is not a plain file name"
    elif len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        problem = f"it is longer than {MAX_NAME_BYTES} bytes"
    elif not _encodable(name):
        problem = "the file system cannot store it (a lone surrogate)"
    if problem:
        raise TapeNameError(
            f"Tape name {name!r} is not allowed: {problem}; use a plain name, or a path ending in .jsonl"
        )
    return check_tape_file_name(name)


MAX_ANCHOR_NAME: Final = 200
"""Characters an anchor name a handoff writes may have: it is a line of ``%agent``, ``--lanes`` and every table."""


def owner_qualified(name: str) -> bool:
    """Whether ``name`` reads as a database's ``owner/name``, another role's tape: one ``/``, and nothing a path of
    the file system would be (no ``.jsonl`` at the end, no ``.`` or ``~`` first)."""
    owner, slash, plain = name.partition("/")
    return (
        bool(slash and owner and plain)
        and "/" not in plain
        and not name.endswith(".jsonl")
        and not owner.startswith((".", "~"))
    )


def check_handoff_name(name: object) -> str:
    """``name`` if a handoff may write an anchor with it; an :class:`AnchorNameError` naming the rule otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise AnchorNameError(f"Anchor name {name!r} must be a non-empty string")
    if len(name) > MAX_ANCHOR_NAME:
        raise AnchorNameError(f"Anchor name {name[:40]!r}… has {len(name):,} characters; at most {MAX_ANCHOR_NAME}")
    control = next((char for char in name if unicodedata.category(char) == "Cc"), None)
    if control is not None:
        raise AnchorNameError(f"Anchor name {name!r} holds the control character {control!r}; use one line of text")
    for prefix in RESERVED_ANCHOR_PREFIXES:
        if name.strip().lower().startswith(prefix):
            raise AnchorNameError(
                f"Anchor name {name!r} is reserved: names starting with {prefix!r} belong to the memory zone; "
                "use %memory (or the memory.* tools) to change memory, and another name for a handoff"
            )
    return name


def check_tape_file_name(name: str) -> str:
    """``name`` unless ``<name>.jsonl`` would be, or look like, a file the store keeps for itself."""
    lowered = name.lower()
    if lowered == LINEAGE_TAPE_NAME:
        raise TapeNameError(f"Tape name {name!r} is reserved: {LINEAGE_TAPE_NAME}.jsonl holds fork lineage, not a tape")
    if ".jsonl." in lowered or lowered.endswith((".jsonl", *SIDECAR_SUFFIXES)):
        raise TapeNameError(
            f"Tape name {name!r} is reserved: its files would pass for the store's own "
            f"(<name>.jsonl{', <name>.jsonl'.join(SIDECAR_SUFFIXES)}); "
            "choose a name without '.jsonl', '.idx', '.lock' or '.bak'"
        )
    return name


SCHEME = "tape://"


@dataclass(frozen=True, slots=True)
class TapeAddress:
    """``tape://<tape>/entry/<id>`` or ``tape://<tape>/anchor/<name>`` (names may contain ``/``). On a database
    another role's tape is ``owner/name``: ``tape://<owner>/<tape>/entry/<id>``."""

    tape: str
    kind: str
    target: str

    @classmethod
    def parse(cls, address: str) -> TapeAddress:
        if not isinstance(address, str) or not address.startswith(SCHEME):
            raise TapeAddressError(f"Address {address!r} does not start with {SCHEME!r}")
        tape, _, rest = address[len(SCHEME) :].partition("/")
        kind, _, target = rest.partition("/")
        if kind not in ("entry", "anchor") and target.partition("/")[0] in ("entry", "anchor"):  # owner/name
            tape, (kind, _, target) = f"{tape}/{kind}", target.partition("/")
        if not tape or kind not in ("entry", "anchor") or not target:
            raise TapeAddressError(
                f"Address {address!r} is not tape://<tape>/entry/<id> or tape://<tape>/anchor/<name>"
            )
        if kind == "entry" and not target.isdigit():
            raise TapeAddressError(f"Address {address!r} names entry {target!r}, which is not an id")
        return cls(tape, kind, target)

    def __str__(self) -> str:
        return f"{SCHEME}{self.tape}/{self.kind}/{self.target}"


def entry_address(tape: str, entry_id: int) -> str:
    return str(TapeAddress(tape, "entry", str(entry_id)))


def anchor_address(tape: str, name: str) -> str:
    return str(TapeAddress(tape, "anchor", name))


MAIN_AGENT: Final = "main"
"""The notebook's unnamed agent, which works on the notebook's own tape."""

AGENT_MARK: Final = "~"
"""Between a notebook's tape name and an agent's name in that agent's tape name: ``<tape>~reviewer``."""

_AGENT_NAME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")


def check_agent_name(name: object) -> str:
    """``name`` if an agent may be called so: a letter, then up to 39 letters, digits, ``_`` or ``-``."""
    if not isinstance(name, str) or not _AGENT_NAME.match(name):
        raise AgentError(
            f"Agent name {name!r} is not allowed: use a letter, then letters, digits, '_' or '-' (at most 40)"
        )
    return name


def agent_tape_name(tape: str, agent: str) -> str:
    """The tape of agent ``agent`` of the notebook whose tape is ``tape``: ``<tape>~<agent>``; ``main`` is the
    notebook's own tape. A tape that is already an agent's names its notebook's tape first."""
    base = notebook_of_tape(tape)
    if check_agent_name(agent) == MAIN_AGENT:
        return base
    return check_tape_file_name(f"{base}{AGENT_MARK}{agent}")


def agent_of_tape(tape: str) -> str | None:
    """The agent whose tape ``tape`` is (``<tape>~<agent>``); ``None`` for any other tape."""
    _, mark, agent = tape.rpartition(AGENT_MARK)
    return agent if mark and _AGENT_NAME.match(agent) and agent != MAIN_AGENT else None


def notebook_of_tape(tape: str) -> str:
    """The notebook's tape an agent's tape belongs to; any other tape is its own."""
    agent = agent_of_tape(tape)
    return tape[: -len(agent) - len(AGENT_MARK)] if agent else tape
