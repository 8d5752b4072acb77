"""``bub-nb`` answers plainly: every command is listed in its help, and every bad input is one line and a failure."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from bub_nb.cli.main import parser
from bub_nb.tape import open_tape

ROOT = Path(__file__).resolve().parents[1]
UNREACHABLE_DSN = "postgresql://nobody:secret-pw@127.0.0.1:1/none"


def bub_nb(*words: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The real command, in its own process, as a user runs it."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "BUB_API_KEY", "BUB_STORE", "CI")}
    env["BUB_HOME"] = str(home)
    command = [sys.executable, "-m", "bub_nb.cli", *words]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=home.parent, timeout=240)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    tape = open_tape("kept", home=tmp_path / "home")
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "hello"})
    return tmp_path / "home"


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A port bound but not listening: a connection to it is refused, and no other process can take it."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


BAD_INPUTS = {
    "no command": ([], "required"),
    "an unknown command": (["nope"], "nope"),
    "a file that is not a notebook": (["run", str(ROOT / "README.md")], "README.md"),
    "a notebook that does not exist": (["run", "nowhere.ipynb"], "nowhere.ipynb"),
    "a kernel that does not exist": (["run", "{notebook}", "--kernel", "no-such-kernel"], "no-such-kernel"),
    "a timeout that is not a number": (["run", "{notebook}", "--timeout", "soon"], "soon"),
    "a home that is not a folder": (["tapes", "list", "{home}/missing"], "missing"),
    "push to a text that is not a DSN": (["tapes", "push", "not-a-dsn"], "not-a-dsn"),
    "push to a database nobody answers at": (["tapes", "push", UNREACHABLE_DSN], "cannot be reached"),
    "pull from a database nobody answers at": (["tapes", "pull", UNREACHABLE_DSN], "cannot be reached"),
    "push with two homes": (["tapes", "push", "a", "b", UNREACHABLE_DSN], "unrecognized"),
    "export without a target": (["tapes", "export", "kept"], "--otlp"),
    "export a tape that does not exist": (["tapes", "export", "--otlp", "http://127.0.0.1:1", "gone"], "'gone'"),
    "export to a receiver nobody answers at": (
        ["tapes", "export", "--otlp", "http://127.0.0.1:{port}", "kept"],
        "Nothing answers",
    ),
    "export to a text that is not a URL": (["tapes", "export", "--otlp", "receiver", "kept"], "receiver"),
    "export Parquet of a tape that does not exist": (["tapes", "export", "--parquet", "{home}/pq", "gone"], "'gone'"),
    "export a dataset of a tape that does not exist": (["tapes", "export", "--dataset", "{home}/ds", "gone"], "'gone'"),
    "export a dataset into a file": (["tapes", "export", "--dataset", "{home}/tapes/kept.jsonl"], "kept.jsonl"),
    "export a dataset into a folder that holds other files": (["tapes", "export", "--dataset", "{home}"], "no _bub_nb"),
    "import a log that does not exist": (["tapes", "import", "{home}/none.jsonl"], "none.jsonl"),
    "import a file in no known format": (["tapes", "import", str(ROOT / "README.md")], "README.md"),
    "redact a tape that does not exist": (["tapes", "redact", "gone", "--entry", "1"], "'gone'"),
    "redact an entry the tape does not have": (["tapes", "redact", "kept", "--entry", "99"], "#99"),
    "redact without an entry": (["tapes", "redact", "kept"], "--entry"),
    "init a text that is not a DSN": (["db", "init", "not-a-dsn"], "not-a-dsn"),
    "init a database nobody answers at": (["db", "init", UNREACHABLE_DSN], "cannot be reached"),
    "enroll at a database nobody answers at": (["db", "enroll", UNREACHABLE_DSN, "class", "role"], "cannot be reached"),
    "db without a subcommand": (["db"], "required"),
    "mcp without a subcommand": (["mcp"], "required"),
    "serve over HTTP at a text that is not HOST:PORT": (["mcp", "serve", "--http", "somewhere"], "somewhere"),
    "serve a home and a store at once": (
        ["mcp", "serve", "--home", "{home}", "--store", UNREACHABLE_DSN],
        "not allowed",
    ),
    "import with a log and --discover": (["tapes", "import", "{home}/none.jsonl", "--discover"], "not allowed"),
    "redact a text too short to be a secret": (["tapes", "redact", "--text", "ab"], "ab"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_every_bad_input_is_one_line_and_a_failure(case: str, home: Path, refused_port: int, tmp_path: Path) -> None:
    notebook = tmp_path / "fine.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]), notebook)
    words, named = BAD_INPUTS[case]
    filled = [w.format(notebook=notebook, home=home, port=refused_port) for w in words]
    done = bub_nb(*filled, home=home)
    said = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(said) == 1, done.stderr
    assert said[0].startswith("bub-nb") and named in said[0]
    assert "secret-pw" not in done.stderr + done.stdout


def test_the_help_lists_every_command_a_user_can_type(home: Path) -> None:
    shown = bub_nb("--help", home=home).stdout
    tapes = parser()[1].choices
    assert {"list", "push", "pull", "export", "import", "redact"} <= set(tapes)
    for command in ["run", *(f"tapes {name}" for name in tapes), "db init", "db enroll"]:
        assert f"bub-nb {command} " in shown
    assert "%%bub" in bub_nb("run", "--help", home=home).stdout


def test_tapes_list_lists_the_home_from_the_environment_or_as_given(home: Path) -> None:
    listed = bub_nb("tapes", "list", home=home)
    assert listed.returncode == 0 and listed.stdout.startswith("kept ")
    assert bub_nb("tapes", "list", str(home), home=home).stdout == listed.stdout
    assert bub_nb("tapes", home=home).returncode == 2  # one spelling: `tapes list`
