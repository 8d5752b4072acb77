"""Security: API keys never reach a tape or an export, tape files are private, tape names stay in their folder,
and no builtin tool runs code.
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import stat
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.shell import Notebook, loaded_shell
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

import bub_nb
from bub_nb.agent.models import OpenAIModel
from bub_nb.agent.tools import ToolCallError, ToolContext
from bub_nb.agent.tools.builtin import BUILTIN_TOOLS, builtin_registry
from bub_nb.errors import BubNbError, TapeNameError
from bub_nb.tape import FileTapeStore, TapeEntry, open_tape, seams
from bub_nb.testing import OpenAICompatibleServer

BUB_KEY = "sk-bub-SECRET0123456789abcdefXYZ"
OPENAI_KEY = "sk-proj-OTHERSECRET9876543210zyxw"
PLAIN_KEY = "plainsecretvalue-not-sk-shaped-42"  # a key without the sk- shape: known from the environment only
SK_SHAPE = re.compile(rb"\bsk-[A-Za-z0-9_\-]{16,}")


def leaks(data: bytes) -> list[str]:
    found = [key for key in (BUB_KEY, OPENAI_KEY, PLAIN_KEY) if key.encode() in data]
    return found + [match.decode() for match in SK_SHAPE.findall(data)]


def every_file(*folders: Path) -> Iterator[Path]:
    for folder in folders:
        yield from (path for path in folder.rglob("*") if path.is_file())


# -- no key on a tape or an export ---------------------------------------------------------------------------


class Session:
    """A real shell with bub_nb loaded, its model a local endpoint that knows the API key."""

    def __init__(self, root: Path, server: OpenAICompatibleServer, notebook: Notebook) -> None:
        self.root, self.server, self.capsys = root, server, notebook.capsys
        self.shell, self.magics = notebook.shell, notebook.magics
        self.magics.model = "endpoint"  # a model object named in the notebook, as users pass one
        self.shell.user_ns["endpoint"] = OpenAIModel(
            "test-model", api_key=BUB_KEY, base_url=server.base_url, timeout=60, max_retries=0
        )
        self.shown = ""

    def cell(self, source: str) -> Any:
        result = self.shell.run_cell(source, store_history=True)
        captured = self.capsys.readouterr()
        self.shown += captured.out + captured.err + str(self.shell.display_pub.outputs)
        return result


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Iterator[Session]:
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BUB_API_KEY", BUB_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("BUB_MODEL", "openai:test-model")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    with OpenAICompatibleServer() as server:
        monkeypatch.setenv("BUB_API_BASE", server.base_url)
        with loaded_shell(capsys) as notebook:
            yield Session(tmp_path, server, notebook)


def test_no_api_key_reaches_any_file_under_bub_home_or_any_export(session: Session) -> None:
    server, cell = session.server, session.cell
    session.shell.user_ns["my_key"] = OPENAI_KEY
    cell("%tape record on")
    cell(f"credentials = {{'openai': {OPENAI_KEY!r}, 'bub': {BUB_KEY!r}}}")  # a cell that holds keys
    server.reply(f"Your key is {BUB_KEY}, and the other one is {OPENAI_KEY}.")
    cell(f"%%bub\nHere is my key {BUB_KEY}; keep it safe")
    cell("%%bub\nAnd this one: {my_key}")
    server.reply_tool_calls([{"name": "memory_save", "arguments": {"content": f"api key {OPENAI_KEY}"}}])
    server.reply_tool_calls([{"name": "tape_handoff", "arguments": {"name": "keys", "summary": BUB_KEY}}])
    server.reply_tool_calls([{"name": "tape_search", "arguments": {"query": OPENAI_KEY}}]).reply("Stored.")
    cell("%%bub\nRemember my key")
    server.fail(401, f"Incorrect API key provided: {BUB_KEY}. You can find your key at ...")
    assert isinstance(cell("%%bub\nOne more").error_in_exec, UsageError)
    server.fail(400, f"Bad request for key {OPENAI_KEY}")
    assert isinstance(cell("%%bub\nAgain").error_in_exec, UsageError)
    cell(f'%handoff phase/secret key={BUB_KEY} --state \'{{"other": "{OPENAI_KEY}"}}\'')
    cell(f"%memory save remember {OPENAI_KEY}")
    cell(f"%memory daily note {BUB_KEY}")
    cell(f"%%bub\n,tape.handoff name=cmd summary={OPENAI_KEY}")
    cell("%tape record off")
    exports = session.root / "exports"
    exports.mkdir()
    cell(f"%tape export md {exports / 'transcript.md'}")
    cell(f"%tape export jsonl {exports / 'tape.jsonl'}")
    cell(f"_frame = %tape df\n_frame.to_csv({str(exports / 'frame.csv')!r})")
    main = session.magics.session.tape.name
    cell("%tape fork forked --from phase/secret")
    cell(f"%tape use {main}")
    cell("%tape reset --archive")

    tape_files = list((session.root / "home").rglob("*.jsonl*"))
    assert len(tape_files) >= 5  # the tape, its sidecars, the archive, the fork, the lineage
    # the view is built from the redacted tape, so even the model never receives a key typed in a prompt
    assert "[redacted]" in str(server.requests) and not leaks(str(server.requests).encode())
    for path in every_file(session.root / "home", exports):
        assert leaks(path.read_bytes()) == [], f"a key in {path.name}"
    errors = [line for line in session.shown.splitlines() if "UsageError" in line]
    assert len(errors) == 2 and BUB_KEY not in errors[0]  # the model's own key is scrubbed from what is shown


def test_an_error_line_never_shows_any_known_key(session: Session) -> None:
    session.server.fail(400, f"Bad request for key {OPENAI_KEY} (and sk-unknown-0123456789abcdef)")
    result = session.cell("%%bub\nHello")
    assert isinstance(result.error_in_exec, UsageError)
    assert leaks(str(result.error_in_exec).encode()) == []


def test_a_key_only_the_environment_knows_is_redacted_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUB_API_KEY", PLAIN_KEY)
    tape = open_tape("t", home=tmp_path)
    tape.append_message({"role": "user", "content": f"the key is {PLAIN_KEY}"})
    tape.append_error("model_error", f"refused {PLAIN_KEY}", {"echo": [PLAIN_KEY, {PLAIN_KEY: PLAIN_KEY}]})
    tape.handoff("phase/x", {"k": PLAIN_KEY}, note=PLAIN_KEY)
    assert all(leaks(path.read_bytes()) == [] for path in every_file(tmp_path))
    assert PLAIN_KEY not in str(tape.read())


@pytest.mark.parametrize("form", ["md", "jsonl"])
def test_an_export_carries_no_key_even_from_a_foreign_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    from bub_nb.tape.reports.transcript import transcript_markdown, write_jsonl

    monkeypatch.setenv("BUB_API_KEY", BUB_KEY)
    tape = open_tape("t", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    with tape.path.open("ab") as handle:  # Bub (or an older tool) wrote a key; that line is not ours to change
        handle.write(TapeEntry(3, "message", {"role": "user", "content": f"key {BUB_KEY}"}).to_line())
    target = tmp_path / f"export.{form}"
    if form == "jsonl":
        write_jsonl(tape, target)
    else:
        target.write_text(transcript_markdown(tape), encoding="utf-8")
    assert leaks(target.read_bytes()) == []


# -- private files ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_tapes_their_sidecars_archives_and_lineage_are_private_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        tape = open_tape("private", home=tmp_path)
        tape.ensure_bootstrap_anchor()
        for number in range(5):
            tape.append_message({"role": "user", "content": f"talk {number}"})
            tape.handoff(f"phase/{number}")
        tape.info()
        tape.fork_session("child", from_anchor="phase/2").append_message({"role": "user", "content": "x"})
        tape.reset(archive=True)
        tape.append_message({"role": "user", "content": "after the reset"})
        tape.info()
    finally:
        os.umask(old)
    tapes = tmp_path / "tapes"
    files = sorted(p for p in tapes.iterdir() if p.is_file())
    names = {p.name.split(".", 1)[1] if "." in p.name else p.name for p in files}
    assert {"jsonl", "jsonl.idx", "jsonl.lock"} <= names and any(n.endswith(".bak") for n in names)
    assert (tapes / "session_graph.jsonl").exists()
    assert {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {p.name: "0o600" for p in files}
    assert stat.S_IMODE(tapes.stat().st_mode) == 0o700


# -- tape names stay in their folder --------------------------------------------------------------------------

NAMES = st.one_of(
    st.text(max_size=40),
    st.lists(
        st.sampled_from(["..", ".", "/", "\\", "~", "a", "%2e", "\x00", " ", ".jsonl", "tapes", "$HOME"]), max_size=6
    ).map("".join),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES)
def test_a_tape_name_is_refused_or_stays_inside_the_tapes_folder(tmp_path: Path, name: str) -> None:
    home = tmp_path / "home"
    folder = (home / "tapes").resolve()
    if name.endswith(".jsonl"):
        name = name[: -len(".jsonl")] + ".json"  # a string ending in .jsonl is a path on purpose, not a name
    try:
        tape = open_tape(name, home=home)
    except TapeNameError as exc:
        assert repr(name) in str(exc)
        return
    assert tape.path is not None and tape.path.resolve().parent == folder
    assert tape.name == name


@pytest.mark.parametrize("name", ["../escape", "a/../../escape", "{absolute}", ".."])
def test_the_file_store_refuses_a_name_that_leaves_its_folder(tmp_path: Path, name: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    name = name.format(absolute=outside / "escape")
    store = FileTapeStore(tmp_path / "tapes")
    with pytest.raises(TapeNameError):
        store.append(name, [TapeEntry.message({"role": "user", "content": "x"})])
    assert list(tmp_path.glob("*.jsonl")) == [] and list(outside.iterdir()) == []


def test_a_name_too_long_for_the_file_system_is_refused_by_name(tmp_path: Path) -> None:
    try:
        tape = open_tape("n" * 250, home=tmp_path)
    except TapeNameError:
        return
    try:
        tape.append_message({"role": "user", "content": "x"})  # works, or says in one line why not
    except BubNbError as exc:
        assert "n" * 250 in str(exc)


# -- no builtin tool runs code --------------------------------------------------------------------------------

FORBIDDEN_NAMES = {"exec", "eval", "compile", "__import__", "get_ipython", "breakpoint", "execfile"}
# os.<attr> that starts processes or replaces this one
FORBIDDEN_OS = {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "startfile"}
FORBIDDEN_OS_PREFIXES = ("exec", "spawn")
# IPython's ways to run code, whatever object they are called on
FORBIDDEN_SHELL = {"run_cell", "run_line_magic", "run_cell_magic", "run_code", "ex", "ev", "safe_execfile"}
FORBIDDEN_MODULES = {
    "subprocess",
    "importlib",
    "pty",
    "ctypes",
    "pickle",
    "marshal",
    "runpy",
    "code",
    "multiprocessing",
}


def code_execution_in(source: str) -> list[str]:
    """Names, attributes and imports in ``source`` that run code or processes."""
    found = []
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES | FORBIDDEN_MODULES:
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if owner == "os" and (node.attr in FORBIDDEN_OS or node.attr.startswith(FORBIDDEN_OS_PREFIXES)):
                found.append(f"os.{node.attr}")
            elif owner == "builtins" and node.attr in FORBIDDEN_NAMES:
                found.append(f"builtins.{node.attr}")
            elif node.attr in FORBIDDEN_SHELL or node.attr == "get_ipython":
                found.append(f".{node.attr}")
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FORBIDDEN_MODULES:
            found.append(node.module or "")
    return found


def test_the_code_check_catches_what_it_looks_for() -> None:
    hostile = (
        "import subprocess\nfrom importlib import import_module\nos.system('x'); eval('1'); ip.run_cell('x')\n"
        "os.execv('/bin/sh', []); builtins.exec('1'); get_ipython().run_line_magic('x', '')"
    )
    assert set(code_execution_in(hostile)) == {
        "subprocess", "importlib", "os.system", "eval", ".run_cell", "os.execv", "builtins.exec", "get_ipython",
        ".run_line_magic",
    }  # fmt: skip
    assert code_execution_in("re.compile('x'); TapeEntry.system('hi'); pattern.exec_time") == []


@pytest.mark.parametrize("tool", BUILTIN_TOOLS, ids=lambda tool: tool.name)
def test_no_builtin_tool_handler_runs_code(tool: Any) -> None:
    assert code_execution_in(inspect.getsource(tool.handler)) == []


def test_nothing_a_builtin_tool_reaches_runs_code() -> None:
    """The handlers call into the tape, memory and context layers; none of those modules runs code either."""
    package = Path(bub_nb.__file__).parent
    modules = [package / "agent" / "tools" / "builtin.py", package / "agent" / "tools" / "registry.py"]
    modules += sorted((package / "tape").rglob("*.py")) + sorted((package / "memory").rglob("*.py"))
    modules += sorted((package / "context").rglob("*.py"))
    findings = {str(m.relative_to(package)): code_execution_in(m.read_text()) for m in modules}
    # The one import by name: the tape layer's seams import the layer above that fills them, from a fixed table.
    assert findings.pop("tape/seams.py") == ["importlib", "importlib"]
    assert set(seams._LAYERS.values()) == {"context", "memory"}
    assert {name: found for name, found in findings.items() if found} == {}


HOSTILE = [
    "__import__('os').system('touch PWNED')",
    "$(touch PWNED)",
    "`touch PWNED`",
    "; touch PWNED #",
    "{0.__class__.__mro__}",
    "%system touch PWNED",
    "!touch PWNED",
    "../../../../etc/passwd",
    "\x00\x1b[2J",
    "x" * 200_000,
]


@pytest.mark.parametrize("tool", BUILTIN_TOOLS, ids=lambda tool: tool.name)
def test_builtin_tools_treat_hostile_arguments_as_text(
    tool: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    tape = open_tape("hostile", home=tmp_path / "home")
    tape.ensure_bootstrap_anchor()
    properties = tool.parameters.get("properties", {})
    registry = builtin_registry()
    for text in HOSTILE:
        arguments = {key: text for key, schema in properties.items() if "string" in str(schema.get("type", "string"))}
        for key, schema in properties.items():
            if key not in arguments:
                arguments[key] = {"integer": 3, "boolean": False}.get(str(schema.get("type")), text)
        before = tape.path.read_bytes()
        try:
            output = registry.get(tool.name).run_sync(arguments, ToolContext(tape=tape))
        except ToolCallError as exc:
            assert exc.kind in ("invalid_input", "tool")
            continue
        assert isinstance(output, str)
        if tool.name != "tape.reset":
            assert tape.path.read_bytes().startswith(before)
    assert list(tmp_path.rglob("PWNED")) == [] and not Path("/tmp/PWNED").exists()


def test_a_model_calling_every_tool_with_hostile_arguments_runs_nothing(session: Session) -> None:
    calls = [{"name": tool.model_name, "arguments": {"query": HOSTILE[0], "content": HOSTILE[1], "name": HOSTILE[5]}}
             for tool in BUILTIN_TOOLS if tool.name != "tape.reset"]  # fmt: skip
    session.server.reply_tool_calls(calls).reply("done")
    result = session.cell("%%bub\nUse every tool")
    assert result.error_in_exec is None
    tape = session.magics.session.tape
    results = [e for e in tape.read() if e.kind == "tool_result"]
    assert len(results) == 1 and len(results[0].payload["results"]) == len(calls)
    assert list(session.root.rglob("PWNED")) == [] and not Path("/tmp/PWNED").exists()
