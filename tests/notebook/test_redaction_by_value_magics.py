"""A token pasted in a ``%%bub`` cell, then redacted by value while the notebook is open: a pending preview that
holds it is refused, a handoff between agents keeps its holder, and no later request carries it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from harness.shell import Notebook

import bub_nb
from bub_nb.tape.corrections import marker

TOKEN = "ghp_bubnb7Yq2Zr9TokenPastedByMistake"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def ipython_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """IPython's history goes to a folder of the test's own, set before the shell starts."""
    folder = tmp_path / "ipython"
    monkeypatch.setenv("IPYTHONDIR", str(folder))
    return folder


def files_holding(home: Path, text: str) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and text.encode() in p.read_bytes())


def cli(*words: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "bub_nb", *words], capture_output=True, text=True, timeout=120, env=env
    )


def paste_fork_and_preview(nb: Notebook, endpoint: Any) -> str:
    """The token pasted in a cell, the tape forked to ``forkB`` and back, and a summarizing preview quoting it."""
    endpoint.reply(f"Using {TOKEN} for the deploy.")
    nb.run(f"%%bub\nDeploy with my token {TOKEN}")
    first = nb.tape.name
    nb.run("%tape fork forkB")
    nb.run(f"%tape use {first}")
    asked = next(e.id for e in nb.tape.read() if e.kind == "message")
    endpoint.reply(f"Summary:\nThe user deployed with the token {TOKEN} [#{asked}].")
    nb.run("%handoff p1 --summarize --preview")
    return first


def test_a_preview_holding_a_text_redacted_in_another_process_is_refused(
    nb: Notebook, endpoint: Any, tmp_path: Path, ipython_dir: Path
) -> None:
    home = tmp_path / "home"
    paste_fork_and_preview(nb, endpoint)
    assert len(files_holding(home, TOKEN)) >= 2

    history = ipython_dir / "profile_default" / "history.sqlite"
    nb.shell.history_manager.writeout_cache()
    assert TOKEN.encode() in history.read_bytes()  # the shell's own history holds the pasted cell

    done = cli("tapes", "redact", "--text", TOKEN, "--home", str(home), "--ipython-history")

    assert done.returncode == 0, done.stderr
    assert files_holding(home, TOKEN) == [] and TOKEN.encode() not in history.read_bytes()
    assert f"scrubbed IPython's history {history}" in done.stdout
    before = len(nb.tape)
    nb.refused("%handoff p1 --accept", "stale")
    assert files_holding(home, TOKEN) == [] and len(nb.tape) == before
    assert "p1" not in nb.tape.anchor_names()
    endpoint.reply("Done.")
    nb.run("%%bub\nWhat did I paste?")  # the kernel reads the rewritten tape, not what it had seen before
    body = json.dumps(endpoint.last_request)
    assert TOKEN not in body and marker(TOKEN) in body


def test_a_preview_holding_a_text_redacted_in_the_kernel_is_dropped_and_refused(
    nb: Notebook, endpoint: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    paste_fork_and_preview(nb, endpoint)

    done = bub_nb.redact_text(TOKEN, home=home)

    assert done.previews >= 1 and "pending previews dropped" in done.report()
    assert any("IPython's history" in line and "--ipython-history" in line for line in done.unreached)
    nb.refused("%handoff p1 --accept", "No preview of handoff 'p1'")
    assert files_holding(home, TOKEN) == []


def test_redacting_the_forks_entries_by_id_reaches_the_first_tape_and_refuses_the_preview(
    nb: Notebook, endpoint: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    paste_fork_and_preview(nb, endpoint)
    fork = bub_nb.open_tape("forkB", home=home)
    holding = [str(e.id) for e in fork.read() if e.kind == "message" and TOKEN in json.dumps(e.payload)]
    assert len(holding) == 2

    done = cli("tapes", "redact", "forkB", *(f"--entry={i}" for i in holding), "--home", str(home))

    assert done.returncode == 0, done.stderr
    nb.refused("%handoff p1 --accept", "stale")
    assert files_holding(home, TOKEN) == []


def test_a_redacted_handoff_between_agents_keeps_its_holder_and_no_request_carries_the_text(
    nb: Notebook, endpoint: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    endpoint.reply("Noted.")
    nb.run(f"%%bub\nThe staging password is {TOKEN}")
    nb.run("%agent rev")
    nb.run(f"%handoff review --to rev --reason 'check what {TOKEN} unlocks'")
    nb.run("%agent")
    assert "`rev` holds the conversation" in nb.shown()

    done = bub_nb.redact_text(TOKEN, home=home)

    assert files_holding(home, TOKEN) == [] and done.events
    nb.run("%agent")
    assert nb.shown().rsplit("| agent |", 1)[1].count("`rev` holds the conversation") == 1
    endpoint.reply("Reviewed.")
    nb.run("%%bub\nWhat did main hand you?")
    body = json.dumps(endpoint.last_request)
    assert TOKEN not in body and marker(TOKEN) in body  # the receiver's anchor reached it, redacted
    assert all(TOKEN not in json.dumps(request) for request in endpoint.requests[-1:])


def test_a_memory_note_redacted_in_another_process_never_reaches_the_next_system_prompt(
    nb: Notebook, endpoint: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    nb.run(f"%memory save The vault token is {TOKEN}")
    endpoint.reply("Noted.")
    nb.run("%%bub\nWhat do you remember?")
    assert TOKEN in json.dumps(endpoint.last_request)  # the memory the kernel read once is in the system prompt

    done = cli("tapes", "redact", "--text", TOKEN, "--home", str(home))

    assert done.returncode == 0, done.stderr
    endpoint.reply("Nothing.")
    nb.run("%%bub\nAnd now?")
    body = json.dumps(endpoint.last_request)
    assert TOKEN not in body and marker(TOKEN) in body and files_holding(home, TOKEN) == []
