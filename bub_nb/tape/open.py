"""``open_tape``: a tape by name, by path, or the current notebook's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bub_nb.errors import TapeError, TapeNameError, TapeNotFoundError
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.locations import current_notebook, tapes_home
from bub_nb.tape.names import (
    AGENT_MARK,
    MAIN_AGENT,
    TapeAddress,
    agent_of_tape,
    check_file_name,
    check_tape_file_name,
    notebook_of_tape,
    validate_tape_name,
)
from bub_nb.tape.stores.agent_tapes import defined_agents, records_agent
from bub_nb.tape.stores.archive import ArchiveTapeStore, is_archive_name
from bub_nb.tape.stores.cloudevents import CloudEventsTapeStore, is_cloudevents_file
from bub_nb.tape.stores.file import FileTapeStore
from bub_nb.tape.stores.protocol import KnowsOwners, TapeStore
from bub_nb.tape.stores.resolve import check_folder, file_store, readable_tape, resolve_store
from bub_nb.tape.tape import Tape

if TYPE_CHECKING:
    from bub_nb.tape.tape import Tape


def open_tape(
    name_or_path: str | Path | None = None,
    *,
    home: str | Path | None = None,
    store: TapeStore | str | None = None,
    create: bool = True,
) -> Tape:
    """Open a tape. Nothing is written until something is appended.

    ``store`` is a ``TapeStore`` or a ``postgresql://`` DSN; without one, ``$BUB_STORE`` names a
    database, and otherwise tapes are files under the Bub home.

    - ``None``: the current notebook's tape, named as Bub names sessions.
    - a ``Path``, or a string ending in ``.jsonl``: that file.
    - an archive a reset left (``<name>.jsonl.<stamp>.bak``), as a path or a file name under
      ``<home>/tapes``: that archive, read-only.
    - any other string: a tape name under ``<home>/tapes`` (``$BUB_HOME``, default ``~/.bub``).

    With ``create=False`` a tape that does not exist yet is a :class:`TapeNotFoundError` naming
    the tapes it may have meant, instead of a new empty tape (a typo must not start a new session).
    """
    if name_or_path is not None and is_archive_name(name_or_path):
        path = Path(name_or_path).expanduser()
        if not path.exists() and path.name == str(name_or_path):  # a bare file name: the tapes home's archive
            path = tapes_home(home) / path.name
        return open_archive(path, file_store(check_folder(path.parent)))
    if isinstance(name_or_path, Path) or (isinstance(name_or_path, str) and name_or_path.endswith(".jsonl")):
        path = Path(name_or_path).expanduser()
        if not path.name.endswith(".jsonl"):
            raise TapeNameError(f"Tape path {str(path)!r} must end in .jsonl")
        name = path.name[: -len(".jsonl")]
        try:
            check_file_name(name)
        except TapeNameError:
            raise TapeNameError(f"Tape path {str(path)!r} does not name a tape: {name!r} comes before .jsonl") from None
        check_tape_file_name(name)
        given = resolve_store(store) if store is not None else None
        if given is None and is_cloudevents_file(path):  # Bub's next format: read, never written
            return Tape(name, CloudEventsTapeStore(path, name))
        return _existing(Tape(name, given or file_store(check_folder(path.parent))), create)
    chosen = resolve_store(store) if home is None or store is not None else None
    if name_or_path is None:
        notebook = current_notebook()
        name = notebook.tape_name
        if isinstance(chosen, KnowsOwners) and notebook.source != "cwd":  # the database records the notebook
            chosen.note_notebook(name, str(notebook.workspace / notebook.session_id))
    elif isinstance(chosen, KnowsOwners) and "/" in name_or_path:  # another role's tape: owner/name
        owner, plain = chosen.owner_and_name(name_or_path)
        validate_tape_name(plain)
        name = name_or_path if owner and plain else validate_tape_name(name_or_path)
    else:
        name = validate_tape_name(name_or_path)
    if chosen is None and is_cloudevents_file(tapes_home(home) / f"{name}.jsonl"):  # Bub's next format, read-only
        return Tape(name, CloudEventsTapeStore(tapes_home(home) / f"{name}.jsonl", name))
    return _existing(Tape(name, chosen or file_store(check_folder(tapes_home(home)))), create)


START_HINT = " (use --new, or create=True, to start it)"
"""How a notebook or a program starts a tape that does not exist; a command that never starts one leaves it off."""


def _existing(tape: Tape, create: bool) -> Tape:
    if create or tape.store.exists(tape.name):
        return tape
    import difflib

    near = difflib.get_close_matches(tape.name, tape.store.list_tapes(), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    store = tape.base_store
    if isinstance(store, KnowsOwners) and "/" in tape.name:  # another role's tape: this role cannot start it
        owner, _name = store.owner_and_name(tape.name)
        raise TapeNotFoundError(
            f"Tape {tape.name!r} does not exist, or role {owner!r} has not opened it to this role{hint}; "
            "a tape of another role is started by that role"
        )
    where = f" at {str(tape.path)!r}" if tape.path is not None else ""
    raise TapeNotFoundError(f"Tape {tape.name!r} does not exist{where}{hint}{START_HINT}")


def open_archive(path: Path, folder: FileTapeStore) -> Tape:
    """An archive file as a read-only tape, beside the live tapes of ``folder``."""
    from bub_nb.tape.tape import Tape

    if not path.is_file():
        raise TapeError(f"Archive {str(path)!r} does not exist")
    return Tape(path.name, ArchiveTapeStore(path, folder))


def resolve(address: str, *, home: str | Path | None = None, store: TapeStore | str | None = None) -> TapeEntry:
    """The entry or anchor a ``tape://`` address names, in the store :func:`open_tape` would use.

    ``tape://<tape>/entry/<id>`` is that entry; ``tape://<tape>/anchor/<name>`` the last anchor so named. On a
    database ``tape://<owner>/<tape>/...`` names another role's tape, which this role must be allowed to read.
    """
    parsed = TapeAddress.parse(address)
    chosen = resolve_store(store) if home is None or store is not None else None
    base = chosen or file_store(check_folder(tapes_home(home)))
    return Tape(readable_tape(base, parsed.tape, address), base).resolve(address)


def notebook_tapes(tape: Tape) -> dict[str, Tape]:
    """The tapes of the notebook ``tape`` belongs to, by agent: ``main`` first, then each agent's, by name. A tape
    named ``<tape>~<name>`` is agent ``name``'s only when the tapes record that agent
    (:func:`~bub_nb.tape.stores.agent_tapes.records_agent`)."""
    base = notebook_of_tape(tape.name)
    store = tape.base_store
    found = {MAIN_AGENT: Tape(base, store)}
    defined = set(defined_agents(store, base))
    for name in sorted(store.list_tapes()):
        agent = agent_of_tape(name)
        if agent and name == f"{base}{AGENT_MARK}{agent}" and records_agent(store, name, lambda _notebook: defined):
            found[agent] = Tape(name, store)
    return found
