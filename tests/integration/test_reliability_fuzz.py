"""Bad input: fuzzed magic lines, fuzzed API calls, and tape files full of foreign and broken lines.

From a magic the only exception that may escape is IPython's one-line ``UsageError``; from the API
only ``BubNbError``. Whatever is typed, no tape file is ever rewritten: each file's old bytes stay a
prefix of its new bytes. Lines a tape file holds that are not entries are skipped, counted and kept.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from harness.shell import Notebook, loaded_shell
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

from bub_nb.errors import BubNbError
from bub_nb.tape import FileTapeStore, TapeEntry, open_tape

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Text people might type, including quotes, braces, shell syntax, non-ASCII and lone surrogates.
WORDS = st.text(
    alphabet=st.characters(codec=None, blacklist_characters="\n\r\x00"),
    max_size=24,
)
PUNCTUATED = st.one_of(
    WORDS,
    st.sampled_from(["'", '"', "{", "}", "{x}", "{{", "=", "==", "a=b", "--", "-", "\\", "..", "/", ",", "*", "~"]),
)


def line_of(*parts: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(*parts), max_size=6).map(" ".join)


class Workspace:
    """A shell with bub_nb loaded on a tape in a scratch home, and a watch on every tape file's bytes."""

    def __init__(self, root: Path, notebook: Notebook) -> None:
        self.root = root
        self.tapes = root / "home" / "tapes"
        self.shell, self.magics = notebook.shell, notebook.magics
        self.shell.user_ns.update(x=1, items=[1, 2, 3], table={"a": 1}, text="words", odd="half \udc00 pair")
        self.main = self.magics.session.tape.name
        self.shell.run_line_magic("handoff", "fuzz/start note='a tape that is never rewritten'")
        self.snapshot: dict[Path, bytes] = {}

    def watch(self) -> None:
        self.magics.session.use(self.main)
        self.shell.display_pub.outputs.clear()
        self.snapshot = {path: path.read_bytes() for path in self._files()}

    def _files(self) -> list[Path]:
        return sorted({*self.tapes.glob("*.jsonl"), *self.root.glob("*.jsonl")})

    def assert_nothing_rewritten(self) -> None:
        for path, before in self.snapshot.items():
            assert path.exists(), f"{path.name} disappeared"
            assert path.read_bytes().startswith(before), f"{path.name} was rewritten"

    def magic(self, name: str, line: str, cell: str | None = None) -> Any:
        """Run a magic as a cell would; only a one-line UsageError may come out."""
        assume("\n" not in line and "\r" not in line)
        self.watch()
        try:
            if cell is None:
                result = self.shell.run_line_magic(name, line)
            else:
                result = self.shell.run_cell_magic(name, line, cell)
        except UsageError as exc:
            assert str(exc).strip() and "\n" not in str(exc).strip(), f"a UsageError of several lines: {exc}"
            event(f"%{name}: a usage error")
            # a refused command leaves the session where it was, with a tape that still works
            assert self.magics.session.tape.name == self.main, f"%{name} {line} failed but switched tapes"
            self.magics.session.tape.stats()
            return None
        finally:
            self.assert_nothing_rewritten()
        event(f"%{name}: ran")
        return result


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Iterator[Workspace]:
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BUB_MODEL", "offline")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    with loaded_shell() as notebook:
        yield Workspace(tmp_path, notebook)


# -- magics ----------------------------------------------------------------------------------------------------

BUB_VALUES = st.sampled_from(
    ["offline", "openai:", "openai:gpt-x", "bogus:model", "last", "full", "window:0", "window:3", "notebook:2",
     "anchor:fuzz/start", "fuzz/start", "memory.*", "tape.*", "none", "x", "1bad", "answer", "nope.*"]
)  # fmt: skip
BUB_OPTION = st.one_of(
    st.builds(
        "{} {}".format,
        st.sampled_from(["-m", "--model", "--context", "-o", "--output", "--tools"]),
        st.one_of(BUB_VALUES, WORDS).map(shlex.quote),
    ),
    st.just("--no-stream"),
    PUNCTUATED,
)
PROMPTS = st.one_of(
    WORDS, line_of(PUNCTUATED, WORDS), st.sampled_from(["{x}", "{items[1]}", "{table['a']}", "{{x}}", "{odd}"])
)


@FUZZ
@given(options=st.lists(BUB_OPTION, max_size=3), cell=PROMPTS)
def test_bub_cells_with_fuzzed_options_raise_only_usage_errors(ws: Workspace, options: list[str], cell: str) -> None:
    ws.magic("bub", " ".join(options), cell)


COMMANDS = st.sampled_from(
    ["help", "handoff", "anchors", "memory", "tape.handoff", "tape.anchors", "tape.info", "tape.search",
     "memory.save", "memory.daily", "memory.recall", "memory.show", "memory.clear", "nope", "tape.", "9x"]
)  # fmt: skip
COMMAND_ARGUMENTS = st.sampled_from(
    ["name=phase/x", "summary='two words'", "query=hello", "limit=3", "limit=-1", "limit=x", "date=2024-02-30",
     "date=2024-01-01", "content=remember", "days=0", "archive=maybe", "=x", "name=", "name=a name=b", "'open"]
)  # fmt: skip


@FUZZ
@given(name=COMMANDS, words=line_of(COMMAND_ARGUMENTS, COMMAND_ARGUMENTS, WORDS.map(shlex.quote), PUNCTUATED))
def test_comma_commands_with_fuzzed_arguments_raise_only_usage_errors(ws: Workspace, name: str, words: str) -> None:
    ws.magic("bub", "", f",{name} {words}")


HANDOFF_STATES = st.one_of(
    st.none(),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | WORDS,
        lambda children: st.lists(children, max_size=3) | st.dictionaries(WORDS, children, max_size=3),
        max_leaves=6,
    ).map(lambda value: json.dumps(value, ensure_ascii=False)),
    WORDS,
)


@FUZZ
@given(
    name=st.one_of(
        WORDS.map(shlex.quote), st.sampled_from(["phase/1", "session/start", "memory/open", "-x", "--state"])
    ),
    pairs=line_of(
        st.builds("{}={}".format, st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), WORDS.map(shlex.quote)),
        st.builds("{}={}".format, WORDS, WORDS),
        PUNCTUATED,
    ),
    state=HANDOFF_STATES,
)
def test_handoff_with_fuzzed_names_pairs_and_state_raise_only_usage_errors(
    ws: Workspace, name: str, pairs: str, state: str | None
) -> None:
    quoted = shlex.quote(state) if state is not None else None
    line = f"{name} {pairs}" + (f" --state {quoted}" if quoted is not None else "")
    before = ws.magics.session.tape.last_id
    ws.magic("handoff", line)
    written = ws.magics.session.tape.read(before + 1)
    assert written == [] or [e.kind for e in written] == ["anchor", "event"]


TAPE_SUBCOMMANDS = st.sampled_from(
    ["info", "df", "search", "fork", "export", "use", "record", "retract", "unretract", "reset!", "nope", ""]
)
TAPE_WORDS = st.sampled_from(
    ["--limit", "3", "-1", "--from", "fuzz/start", "--intention", "next", "md", "jsonl", "on", "off", "--archive",
     "out.md", "out.jsonl", "copy", "..", "../up", "a/b", ".hidden", "x.jsonl", "fuzz/none", "2", "3-1", "1-9",
     "--reason", "#2", "9" * 5000]
)  # fmt: skip


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()


# Export targets stay relative to the scratch folder: the fuzz must not write files anywhere else.
EXPORTS = st.sampled_from(
    ["md out.md", "jsonl out.jsonl", "out.md", "markdown out.txt", "md", "", "a b c", "--x", "missing/out.md",
     "jsonl missing/out.jsonl", ".", "md .", "''", "out.md/inside", "home", "home/tapes"]
)  # fmt: skip


@FUZZ
@given(
    subcommand=TAPE_SUBCOMMANDS,
    rest=line_of(TAPE_WORDS, TAPE_WORDS, WORDS.map(shlex.quote), PUNCTUATED),
    export=EXPORTS,
)
def test_tape_subcommands_with_fuzzed_arguments_raise_only_usage_errors(
    ws: Workspace, subcommand: str, rest: str, export: str
) -> None:
    if subcommand == "export":
        rest = export
    if subcommand == "use":  # `use` makes the tape's folder: keep it inside the scratch folder
        assume(".." not in rest and not any(word.startswith(("/", "~")) for word in _words(rest)))
    assume(subcommand != "reset!")  # a reset starts the tape over on purpose; it has its own test
    ws.magic("tape", f"{subcommand} {rest}")
    ws.magics.recorder.stop()


@FUZZ
@given(
    action=st.sampled_from(["show", "save", "daily", "clear", "prune", "nope", ""]),
    text=line_of(WORDS.map(shlex.quote), PUNCTUATED),
    date=st.one_of(
        st.none(), st.sampled_from(["2024-01-01", "2024-02-30", "0001-01-01", "9999-12-31", "today"]), WORDS
    ),
)
def test_memory_with_fuzzed_actions_raise_only_usage_errors(
    ws: Workspace, action: str, text: str, date: str | None
) -> None:
    ws.magic("memory", f"{action} {text}" + (f" --date {shlex.quote(date)}" if date is not None else ""))


@FUZZ
@given(
    mode=st.one_of(
        st.sampled_from(["last", "full", "window:2", "window:-1", "notebook", "anchor:", "fuzz/start"]), WORDS
    )
)
def test_context_with_fuzzed_modes_raises_only_usage_errors(ws: Workspace, mode: str) -> None:
    ws.magic("context", mode)


def test_a_tape_reset_keeps_the_old_bytes_in_its_archive(ws: Workspace) -> None:
    ws.watch()
    path = ws.tapes / f"{ws.main}.jsonl"
    before = path.read_bytes()
    ws.shell.run_line_magic("tape", "reset --archive")
    archives = list(ws.tapes.glob(f"{ws.main}.jsonl.*.bak"))
    assert len(archives) == 1 and archives[0].read_bytes() == before
    assert [e.name for e in ws.magics.session.tape.read()] == ["session/start", "handoff"]


@pytest.mark.parametrize("target", ["missing/out.md", "missing/out.jsonl", "."])
def test_an_export_to_a_path_that_cannot_be_written_is_a_usage_error(ws: Workspace, target: str) -> None:
    with pytest.raises(UsageError):
        ws.shell.run_line_magic("tape", f"export {target}")


@pytest.mark.parametrize(
    "target",
    [
        "plain-file/t.jsonl",  # its folder cannot exist: a file is in the way
        ".jsonl",  # no tape name before the suffix
    ],
)
def test_using_a_tape_under_a_file_is_a_usage_error_and_keeps_the_current_tape(ws: Workspace, target: str) -> None:
    (ws.root / "plain-file").write_text("not a folder")
    with pytest.raises(UsageError):
        ws.shell.run_line_magic("tape", f"use {target}")
    ws.shell.run_line_magic("handoff", "still/working")
    assert ws.magics.session.tape.name == ws.main
    assert not (ws.root / ".jsonl").exists()


# -- the API ---------------------------------------------------------------------------------------------------


@pytest.fixture
def api_tape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)  # fuzzed paths are relative to the scratch folder
    tape = open_tape("fuzz", store=FileTapeStore(tmp_path / "tapes"))
    tape.handoff("session/start", {"owner": "human"})
    tape.append_message({"role": "user", "content": "hello"})
    return tape


def api_calls(tape: Any, text: str, number: int) -> list[Any]:
    home = Path(tape.path).parent.parent
    from bub_nb.agent.commands import run_command
    from bub_nb.agent.models import resolve_model
    from bub_nb.context import parse_mode

    return [
        lambda: open_tape(text, home=home),
        lambda: tape.after_anchor(text),
        lambda: tape.between_anchors(text, "session/start"),
        lambda: tape.find_anchor(text),
        lambda: tape.resolve(text),
        lambda: tape.resolve(f"tape://{text}/entry/{number}"),
        lambda: tape.resolve(f"tape://{tape.name}/anchor/{text}"),
        lambda: tape.get(number),
        lambda: tape.search(text, limit=abs(number) % 50),
        lambda: tape.handoff(text, {"note": text}),
        lambda: tape.append_message({"role": text, "content": text}),
        lambda: tape.anchors(limit=number),
        lambda: tape.fork_session(text),
        lambda: tape.view(parse_mode(text)),
        lambda: resolve_model(text),
        lambda: run_command(tape, "," + text),
        lambda: tape.memory.append_daily(text or "note", text),
        lambda: tape.memory.save_long_term(text),
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(WORDS, PUNCTUATED), number=st.integers(min_value=-(2**70), max_value=2**70))
def test_the_api_raises_only_bub_nb_errors_on_fuzzed_arguments(api_tape: Any, text: str, number: int) -> None:
    path = api_tape.path
    before = path.read_bytes()
    for call in api_calls(api_tape, text, number):
        try:
            call()
        except BubNbError as exc:
            assert str(exc).strip()
    assert path.read_bytes().startswith(before)


@pytest.mark.parametrize("text", ["\ud800", "half a pair \udc00 here"])
def test_a_lone_surrogate_is_stored_and_the_file_stays_utf8(api_tape: Any, text: str) -> None:
    stored = api_tape.append_message({"role": "user", "content": text})
    assert api_tape.get(stored.id).payload["content"] == text
    api_tape.path.read_bytes().decode("utf-8")  # Bub reads the file as UTF-8 text


@pytest.mark.parametrize("name", ["phase/plain", "phase/\ud800"])
def test_a_lone_surrogate_in_an_anchor_is_written_read_and_indexed(api_tape: Any, name: str) -> None:
    before = len(api_tape)
    anchor, _event = api_tape.handoff(name, {"note": "half a pair \udc00", "big": 2**70})
    assert len(api_tape) == before + 2
    assert api_tape.search("half a pair")[0].id == anchor.id + 1  # the event's text holds the state too
    assert api_tape.find_anchor(name).state == {"note": "half a pair \udc00", "big": 2**70}
    assert api_tape.to_frame()["content"].str.contains("half a pair").sum() == 2
    fresh = open_tape(api_tape.name, store=FileTapeStore(api_tape.path.parent))  # reads the saved index
    assert fresh.anchor_names()[-1] == name


# -- foreign and broken lines in a tape file ---------------------------------------------------------------------


def entry_line(entry_id: int, content: str) -> bytes:
    return TapeEntry(entry_id, "message", {"role": "user", "content": content}).to_line()


JUNK_LINES: dict[str, bytes] = {
    "garbage bytes": bytes(range(1, 10)) + b"\xfe\xff garbage\n",
    "invalid UTF-8": b'{"id": 99, "kind": "message", "payload": {"content": "\xc3\x28"}}\n',
    "a JSON array": b"[1, 2, 3]\n",
    "a JSON string": b'"just text"\n',
    "missing id": b'{"kind": "message", "payload": {}, "meta": {}, "date": "2024-01-01T00:00:00+00:00"}\n',
    "missing kind": b'{"id": 50, "payload": {}, "meta": {}, "date": "2024-01-01T00:00:00+00:00"}\n',
    "payload not an object": b'{"id": 51, "kind": "message", "payload": "text"}\n',
    "id as text": b'{"id": "52", "kind": "message", "payload": {}}\n',
    "half a line": b'{"id": 53, "kind": "mess\n',
    "deep nesting": b"[" * 100_000 + b"]" * 100_000 + b"\n",
}


def test_foreign_and_broken_lines_are_skipped_counted_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "tapes" / "mixed.jsonl"
    path.parent.mkdir()
    huge = entry_line(3, "h" * (16 * 1024 * 1024))
    parts = [entry_line(1, "one"), b"\n", *JUNK_LINES.values(), entry_line(2, "two"), b"   \n", huge]
    parts += [b"x" * (8 * 1024 * 1024) + b"\n", entry_line(4, "four")]
    data = b"".join(parts)
    path.write_bytes(data)

    tape = open_tape(path, store=FileTapeStore(path.parent))
    assert [e.id for e in tape.read()] == [1, 2, 3, 4]
    assert tape.get(3).payload["content"] == "h" * (16 * 1024 * 1024)
    info = tape.info()
    assert info.entries == 4 and info.bad_lines == len(JUNK_LINES) + 1 and info.torn_tail_bytes == 0
    assert [e.id for e in tape.iter_reverse()] == [4, 3, 2, 1]
    assert [e.id for e in tape.search("two")] == [2]
    assert path.read_bytes() == data  # reading never touches the file

    stored = tape.append_message({"role": "user", "content": "five"})
    assert stored.id == 5 and path.read_bytes().startswith(data)
    fresh = open_tape(path, store=FileTapeStore(path.parent)).info()
    assert (fresh.entries, fresh.bad_lines) == (5, len(JUNK_LINES) + 1)


LINE = st.one_of(
    st.tuples(st.just("entry"), WORDS),
    st.tuples(st.just("junk"), st.binary(max_size=40).filter(lambda b: b"\n" not in b)),
    st.tuples(st.just("junk"), st.sampled_from([v.rstrip(b"\n") for v in JUNK_LINES.values()][:-1])),
    st.tuples(st.just("blank"), st.sampled_from([b"", b" ", b"\t", b"  \t "])),
    st.tuples(st.just("json"), st.recursive(st.none() | st.integers() | WORDS, st.lists, max_leaves=4)),
)


def _is_entry(line: bytes) -> bool:
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            return False
    if not isinstance(data, dict):
        return False
    return type(data.get("id")) is int and isinstance(data.get("kind"), str) and isinstance(data.get("payload"), dict)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINE, max_size=25), torn=st.binary(max_size=30).filter(lambda b: b"\n" not in b))
@example(lines=[("json", ["\ud800"]), ("entry", "after")], torn=b"")
def test_any_mix_of_lines_reads_as_its_entries_with_the_rest_counted(
    tmp_path_factory: pytest.TempPathFactory, lines: list[tuple[str, Any]], torn: bytes
) -> None:
    directory = tmp_path_factory.mktemp("mix")
    path = directory / "t.jsonl"
    raw, next_id, expected_bad = [], 1, 0
    for kind, value in lines:
        if kind == "entry":
            raw.append(entry_line(next_id, value).rstrip(b"\n"))
            next_id += 1
        elif kind == "json":
            # A lone surrogate has no UTF-8 form: written as its surrogate bytes, the line is still not an entry.
            raw.append(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
            expected_bad += 1
        elif kind == "junk":
            assume(not _is_entry(value))
            expected_bad += bool(value.strip())
            raw.append(value)
        else:
            raw.append(value)
    data = b"".join(line + b"\n" for line in raw) + torn
    path.write_bytes(data)
    tape = open_tape(path, store=FileTapeStore(directory))
    entries = tape.read()
    assert [e.id for e in entries] == list(range(1, next_id))
    info = tape.info()
    torn_entry = _is_entry(torn)
    assert info.bad_lines == expected_bad and info.torn_tail_bytes == len(torn)
    assert path.read_bytes() == data
    stored = tape.append_message({"role": "user", "content": "after"})
    taken = orjson.loads(torn)["id"] if torn_entry else 0
    assert stored.id == max(next_id, taken + 1)
    assert path.read_bytes().startswith(data)
    assert os.stat(path).st_size > len(data)


def test_a_placeholder_whose_attribute_raises_is_a_usage_error(ws: Workspace) -> None:
    ws.shell.run_cell("class Fragile:\n    @property\n    def value(self):\n        raise RuntimeError('not ready')")
    ws.shell.user_ns["fragile"] = ws.shell.user_ns["Fragile"]()
    with pytest.raises(UsageError, match=r"fragile\.value"):
        ws.shell.run_cell_magic("bub", "", "Look at {fragile.value}")
