"""Who holds the conversation is state on the tapes: a fresh shell over the same home (a kernel restart, then
``%load_ext bub_nb``) finds the same agents, the same holder and the same refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.shell import loaded_shell

from bub_nb.agent.team import Team, holder_on_tapes
from bub_nb.tape import open_tape


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def test_after_a_restart_the_agents_the_holder_and_the_refusals_are_those_before(home: Path) -> None:
    with loaded_shell() as before:
        before.run("%agent rev --instructions 'Check every figure.'")
        before.run("%agent other -m offline")
        before.run("%%bub\nThe March sales were 120, 95 and 130.")
        before.run("%handoff h1 --to rev")
        notebook = before.tape.name
        listed_before = before.magics.agent_commands.listing()

    with loaded_shell() as after:
        listed = after.magics.agent_commands.listing()
        assert listed == listed_before
        for name in ("main", "rev", "other"):
            assert f"| {name} |" in listed
        assert "`rev` holds the conversation" in listed
        assert "| other | " in listed and "`offline`" in listed.split("| other |")[1].split("\n")[0]

        main, rev = after.tape, open_tape(f"{notebook}~rev")
        main_entries, rev_entries = len(main), len(rev)
        after.refused("%%bub --agent main\nMay I go on?", "'main' handed the conversation to 'rev'")
        assert len(rev) == rev_entries

        after.run("%%bub\nIs the mean right?")  # a plain cell runs as the holder, on its tape
        assert len(main) == main_entries and len(rev) > rev_entries
        system = next(entry for entry in rev.read(rev_entries + 1) if entry.kind == "system")
        assert "Check every figure." in system.payload["content"]  # its recorded instructions came back too

        after.run("%handoff h2 --to other")
        assert "`other` holds the conversation" in after.magics.agent_commands.listing()
        assert holder_on_tapes(main) == after.magics.session.team().holder() == "other"
        assert Team(main).holder() == "other"  # and a team made from nothing but the tapes agrees
