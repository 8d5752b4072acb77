"""Redaction by value on files: a secret's text is replaced wherever it occurs under a Bub home (quotes, other
agents' tapes, forks, archives, lineage), only where it occurs, and the report names what it rewrote and what
still holds the text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness.tapes import bub_read

import bub_nb
from bub_nb.agent.team import Team
from bub_nb.errors import TapeError
from bub_nb.tape import open_tape
from bub_nb.tape.corrections import marker
from bub_nb.tape.events import CONTEXT_HANDOFF, EXPORT, REDACT

SECRET = "tok-9f3b27c1-ZETA-quoted-everywhere"
ROOT = Path(__file__).resolve().parents[2]


def files_holding(home: Path, text: str) -> list[str]:
    """Every file under ``home`` whose bytes hold ``text``, however deep."""
    return sorted(
        str(path.relative_to(home)) for path in home.rglob("*") if path.is_file() and text.encode() in path.read_bytes()
    )


def cli(*words: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "bub_nb", *words], capture_output=True, text=True, timeout=120, env=env, input=stdin
    )


def a_home_quoting_the_secret(home: Path) -> Team:
    """A notebook's tape holding the secret in a prompt, a quote of it in a summary anchor, a handoff to another
    agent whose reason quotes it, a fork and an archive holding copies."""
    tape = open_tape("nb", home=home)
    tape.append_message({"role": "user", "content": f"deploy with {SECRET} please"})
    tape.append_message({"role": "assistant", "content": f"Deploying; I will keep {SECRET} out of the logs."})
    tape.handoff("phase/deploy", {"summary": f"The user gave the token {SECRET} [#1].", "sources": [1]})
    team = Team(tape, ["rev"])
    team.handoff("review", to="rev", reason=f"check the deploy that used {SECRET}")
    tape.fork_session("nb-fork", from_anchor="phase/deploy")
    side = open_tape("side", home=home)
    side.append_message({"role": "user", "content": f"an old note: {SECRET}"})
    side.reset(archive=True)
    return team


def test_every_copy_and_quote_under_the_home_is_replaced_and_only_where_it_was(tmp_path: Path) -> None:
    home = tmp_path / "home"
    team = a_home_quoting_the_secret(home)
    holding = files_holding(home, SECRET)
    assert {"tapes/nb.jsonl", "tapes/nb~rev.jsonl", "tapes/nb-fork.jsonl"} <= set(holding)
    assert any(".bak" in name for name in holding)
    before_holder = team.holder()

    done = bub_nb.redact_text(SECRET, home=home, by="ada")

    assert files_holding(home, SECRET) == []
    mark = marker(SECRET)
    tape = open_tape("nb", home=home)
    assert tape.get(1).payload["content"] == f"deploy with {mark} please"  # only the occurrence, the rest stays
    assert tape.find_anchor("phase/deploy").state["summary"] == f"The user gave the token {mark} [#1]."
    assert team.holder() == before_holder == "rev"  # from/to/ownership untouched: the transfer stands
    received = open_tape("nb~rev", home=home).read()
    record = next(e for e in received if e.kind == "event" and e.name == CONTEXT_HANDOFF).payload["data"]
    assert record["from"] == "agent:main" and record["to"] == "agent:rev"
    assert record["content"]["ownership"] == "transfer" and mark in record["content"]["reason"]
    events = {name: open_tape(name, home=home).read()[-1] for name in ("nb", "nb~rev", "nb-fork", "side")}
    for name, event in events.items():
        assert event.kind == "event" and event.name == REDACT, name
        assert event.payload["data"]["text"] == mark and event.payload["data"]["length"] == len(SECRET)
        assert event.id == done.events[name]
    assert set(done.files) >= {"tapes/nb.jsonl", "tapes/nb~rev.jsonl", "tapes/nb-fork.jsonl"}
    assert all(bub_read(home / "tapes" / f"{name}.jsonl") for name in events)  # Bub still reads every line
    assert "rewrote tapes/nb~rev.jsonl" in done.report() and done.unreached == []


def test_a_redaction_by_entry_reaches_the_quotes_of_its_text_and_keeps_the_handoff(tmp_path: Path) -> None:
    home = tmp_path / "home"
    team = a_home_quoting_the_secret(home)
    tape = open_tape("nb", home=home)
    anchor = next(e for e in tape.read() if e.kind == "anchor" and e.name == "review")

    tape.redact([anchor.id])  # the handoff anchor whose reason quotes the secret, named by id

    assert team.holder() == "rev"  # its from, to and ownership are kept whole
    record = tape.get(anchor.id).payload["state"][CONTEXT_HANDOFF]
    assert record["from"] == "agent:main" and record["to"] == "agent:rev"
    assert record["content"]["ownership"] == "transfer" and record["content"]["tape_ref"].startswith("tape://")
    reason = f"check the deploy that used {SECRET}"
    assert record["content"]["reason"] == marker(reason)
    assert reason.encode() not in (home / "tapes" / "nb~rev.jsonl").read_bytes()  # the receiver's copy, by value


def test_a_file_no_tape_reader_writes_and_an_export_are_named_not_rewritten(tmp_path: Path) -> None:
    home = tmp_path / "home"
    tape = open_tape("nb", home=home)
    tape.append_message({"role": "user", "content": f"the key is {SECRET}"})
    (home / "notes.txt").write_text(f"copied by hand: {SECRET}")
    exported = tmp_path / "out" / "nb.jsonl"
    exported.parent.mkdir()
    done = cli("tapes", "export", "nb", "--home", str(home), "--parquet", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    parquet = tmp_path / "out" / "nb.parquet"
    assert any(
        e.kind == "event" and e.name == EXPORT and e.payload["data"]["path"] == str(parquet) for e in tape.read()
    )

    report = bub_nb.redact_text(SECRET, home=home)

    assert files_holding(home, SECRET) == ["notes.txt"]
    assert any(str(parquet) in line and line.startswith("export ") for line in report.unreached)
    assert any("notes.txt under the home" in line for line in report.unreached)


def test_the_cli_reads_the_text_from_standard_input_and_refuses_a_short_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    a_home_quoting_the_secret(home)
    refused = cli("tapes", "redact", "--text", "tok", "--home", str(home))
    assert refused.returncode == 2 and "at least 4 characters" in refused.stderr
    assert len(files_holding(home, SECRET)) >= 4  # nothing was rewritten

    done = cli("tapes", "redact", "--text", "-", "--home", str(home), stdin=SECRET + "\n")

    assert done.returncode == 0, done.stderr
    assert files_holding(home, SECRET) == [] and SECRET not in done.stdout
    assert "rewrote tapes/nb~rev.jsonl" in done.stdout and "tapes record it in a redact event" in done.stdout


def test_a_torn_line_holding_the_text_is_scrubbed_in_its_bytes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    tape = open_tape("nb", home=home)
    tape.append_message({"role": "user", "content": "fine"})
    with tape.path.open("ab") as handle:  # type: ignore[union-attr]
        handle.write(f'{{"id": 2, "kind": "message", "payload": {{"content": "{SECRET}'.encode())  # a crash mid-write
    bub_nb.redact_text(SECRET, home=home)
    assert files_holding(home, SECRET) == [] and open_tape("nb", home=home).get(1).payload["content"] == "fine"


def test_ipython_history_is_named_and_scrubbed_when_asked(tmp_path: Path) -> None:
    home, ipython = tmp_path / "home", tmp_path / "ipython"
    open_tape("nb", home=home).append_message({"role": "user", "content": SECRET})
    script = (
        "from traitlets.config import Config\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "c = Config()\n"
        f"c.HistoryManager.hist_file = {str(ipython / 'profile_default' / 'history.sqlite')!r}\n"
        "shell = InteractiveShell.instance(config=c)\n"
        f"shell.run_cell({f'token = {SECRET!r}'!r}, store_history=True)\n"
        "shell.run_cell('token', store_history=True)\n"
        "shell.history_manager.end_session()\n"
    )
    (ipython / "profile_default").mkdir(parents=True)
    made = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert made.returncode == 0, made.stderr
    history = ipython / "profile_default" / "history.sqlite"
    assert SECRET.encode() in history.read_bytes()
    os.environ["IPYTHONDIR"] = str(ipython)
    try:
        named = bub_nb.redact_text(SECRET, home=home)
        assert any("--ipython-history" in line and str(history) in line for line in named.unreached)
        open_tape("nb", home=home).append_message({"role": "user", "content": SECRET})  # pasted again
        done = cli("tapes", "redact", "--text", SECRET, "--home", str(home), "--ipython-history")
    finally:
        del os.environ["IPYTHONDIR"]
    assert done.returncode == 0, done.stderr
    assert SECRET.encode() not in history.read_bytes() and "scrubbed IPython's history" in done.stdout
    import sqlite3

    with sqlite3.connect(history) as connection:
        sources = [row[0] for row in connection.execute("SELECT source_raw FROM history ORDER BY line")]
    assert sources == [f"token = '{marker(SECRET)}'", "token"]


def test_nothing_is_rewritten_when_the_history_to_scrub_is_missing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    open_tape("nb", home=home).append_message({"role": "user", "content": SECRET})
    before = (home / "tapes" / "nb.jsonl").read_bytes()
    with pytest.raises(TapeError, match="does not exist; nothing was redacted"):
        bub_nb.redact_text(SECRET, home=home, ipython_history=tmp_path / "none.sqlite")
    assert (home / "tapes" / "nb.jsonl").read_bytes() == before
    assert json.loads(before.splitlines()[0])["payload"]["content"] == SECRET


def test_a_line_appended_while_the_home_is_rewritten_is_kept_and_redacted_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.tapes import bub_append

    from bub_nb.tape import TapeEntry
    from bub_nb.tape.corrections import by_value

    home = tmp_path / "home"
    tape = open_tape("nb", home=home)
    tape.append_message({"role": "user", "content": f"first {SECRET}"})
    path: Path = tape.path  # type: ignore[assignment]
    real, appended = by_value._line_without, []

    def bub_writes_meanwhile(line: bytes, *args: object) -> object:
        if not appended:  # Bub, which takes no lock, appends as the first pass reads the file
            appended.append(bub_append(path, [TapeEntry.message({"role": "user", "content": f"again {SECRET}"})]))
        return real(line, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(by_value, "_line_without", bub_writes_meanwhile)
    bub_nb.redact_text(SECRET, home=home)

    contents = [e["payload"].get("content") for e in bub_read(path) if e["kind"] == "message"]
    assert contents == [f"first {marker(SECRET)}", f"again {marker(SECRET)}"]
    assert files_holding(home, SECRET) == []


def test_the_notebook_that_wrote_the_tape_is_named_when_its_saved_outputs_hold_the_text(tmp_path: Path) -> None:
    import nbformat

    from bub_nb.tape.events import NOTEBOOK

    home, path = tmp_path / "home", tmp_path / "analysis.ipynb"
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("%%bub\nuse the token", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"Using {SECRET}.")]
    notebook.cells = [cell]
    nbformat.write(notebook, path)
    tape = open_tape("nb", home=home)
    tape.append_event(NOTEBOOK, {"path": str(path), "source": "JPY_SESSION_NAME"})
    tape.append_message({"role": "assistant", "content": f"Using {SECRET}."})

    done = bub_nb.redact_text(SECRET, home=home)

    assert files_holding(home, SECRET) == [] and SECRET in path.read_text()  # the user's document is not rewritten
    assert any(line.startswith(f"notebook {path} (tape nb)") for line in done.unreached)
    assert f"notebook {path}" in done.report()
