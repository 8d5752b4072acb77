"""Every command of the notebook surface in one notebook, driven by a state machine the way a user types them.

A real IPython ``InteractiveShell`` runs the magic text (so IPython's input transforms apply) over a Bub home in a
temporary folder; the model is the local OpenAI-compatible server reached by the real ``openai`` client, scripted
to be hostile: odd text, calls of the ``tape.*`` tools with odd arguments, handoffs to anyone, echoes of what it
was shown. Several agents, summaries, forks, previews, retraction, redaction, a kernel restart and a second writer
meet; after every step the home is read back with plain ``json`` (``harness.home_files``) and checked.

A new command of the surface adds a rule here; every invariant then covers it.

Checks named in ``KNOWN_OPEN`` are skipped: each fails on today's code for a reason a fix in progress addresses,
and its comment holds the shortest failing example. Remove a name when its fix is in; ``BUB_NB_MACHINE_ALL=1``
runs every check regardless.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import pytest
from harness import home_files, hostile_text
from harness.hostile_model import NASTY_STRINGS
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from bub_nb.testing import OpenAICompatibleServer

KNOWN_OPEN: set[str] = set()
"""Checks known to fail today, each named with what found it, while a fix is in progress: a check named here is
skipped (``BUB_NB_MACHINE_ALL=1`` runs it anyway). The reproducers the set held when the machine was written are
pinned in ``test_pinned_examples.py`` and pass with every check on."""

ENFORCE_ALL = os.environ.get("BUB_NB_MACHINE_ALL") == "1"
AGENT_NAMES = ("rev", "ana")
ANCHOR_NAMES = ("p1", "p2", "phase/x", "memory/x", "a b", "")
FORK_NAMES = ("forkB", "forkC")
ODD_TEXTS = tuple(text for text in NASTY_STRINGS if len(text) <= 400)
HOSTILE_MCP = Path(__file__).resolve().parents[1] / "harness" / "hostile_mcp.py"
ENVIRONMENT = ("BUB_HOME", "BUB_MODEL", "BUB_API_BASE", "BUB_API_KEY", "BUB_STORE", "JPY_SESSION_NAME")
LIVE_FILES = (".jsonl", ".bak")


def checked(name: str) -> bool:
    """Whether the check ``name`` runs (it is not known to fail today, or every check was asked for)."""
    return ENFORCE_ALL or name not in KNOWN_OPEN


class Finding(AssertionError):
    """A check of the machine failed; the message starts with the check's name."""


def check(name: str, condition: bool, message: str) -> None:
    if checked(name) and not condition:
        raise Finding(f"[{name}] {message}")


@dataclass
class Shell:
    """One kernel's life: a fresh ``InteractiveShell`` with bub_nb loaded."""

    shell: InteractiveShell
    displays: CapturingDisplayPublisher = field(default_factory=CapturingDisplayPublisher)

    @classmethod
    def start(cls) -> Shell:
        InteractiveShell.clear_instance()
        made = cls(InteractiveShell.instance())
        made.shell.display_pub = made.displays
        made.run("%load_ext bub_nb")
        return made

    def run(self, source: str) -> Any:
        result = self.shell.run_cell(source, store_history=True)
        result.raise_error()
        return result.result

    @property
    def magics(self) -> Any:
        return next(c for c in self.shell.configurables if type(c).__name__ == "BubMagics")

    @property
    def session(self) -> Any:
        return self.magics.session


# -- what the hostile model replies -------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One scripted reply: text, or tool calls ``(name, arguments)`` beside text."""

    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    echo: int = 0
    """Quote a text the model was shown (the ``echo``-th newest marker still in view, secrets first); 0: none."""
    summary: bool = False
    """Answer as a summary citing every entry of the holder's tape (a summary keeps the citations of its phase)."""


SUMMARY = Reply("The user asked for more", echo=1, summary=True)
"""A summary a summarizing request accepts (it cites the holder's entries), quoting what it was shown."""


def tool_calls() -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    odd = st.sampled_from(ODD_TEXTS)
    return st.one_of(
        st.tuples(st.just("tape_search"), st.fixed_dictionaries({"query": st.sampled_from(["tok", "PASTED", "x"])})),
        st.tuples(
            st.just("tape_handoff"),
            st.fixed_dictionaries(
                {"name": st.sampled_from(ANCHOR_NAMES), "to": st.sampled_from([*AGENT_NAMES, "main", "nobody"])},
                optional={"summary": odd, "reason": odd, "share": st.booleans()},
            ),
        ),
        st.tuples(st.just("tape_handoff"), st.fixed_dictionaries({"name": st.sampled_from(ANCHOR_NAMES)})),
        st.tuples(st.just("tape_retract"), st.fixed_dictionaries({"entries": st.sampled_from(["1", "2-4", "6", "0"])})),
        st.tuples(st.just("tape_unretract"), st.fixed_dictionaries({"entries": st.sampled_from(["6", "2-4"])})),
        st.tuples(st.just("tape_reset"), st.just({})),
        st.tuples(st.just("tape_info"), st.just({})),
        st.tuples(st.just("tape_anchors"), st.just({"limit": 3})),
        st.tuples(st.just("memory_save"), st.fixed_dictionaries({"content": odd})),
        st.tuples(st.sampled_from(["no_such_tool", "tape_handoff"]), st.just({"bogus": 1})),
        # an MCP server's tools, offered while the `mcp` rule has one added (unknown tools otherwise)
        st.tuples(st.just("mcp_h_echo"), st.fixed_dictionaries({"text": st.one_of(odd, st.just("tok"))})),
        st.tuples(st.sampled_from(["mcp_h_refuse", "mcp_h_picture", "mcp_h_lying"]), st.just({})),
    )


replies = st.one_of(
    st.builds(Reply, st.sampled_from(["fine.", *ODD_TEXTS]), echo=st.integers(0, 3)),
    st.builds(Reply, st.just("The user asked for more"), echo=st.integers(0, 3), summary=st.just(True)),
    st.builds(Reply, st.sampled_from(["", "calling"]), st.lists(tool_calls(), min_size=1, max_size=2).map(tuple)),
)


def texts_in(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def searched_ids(body: dict[str, Any]) -> set[str]:
    """The ids of the ``tape_search`` calls a request body's messages hold."""
    return {
        call.get("id")
        for message in body.get("messages") or []
        for call in message.get("tool_calls") or []
        if (call.get("function") or {}).get("name") == "tape_search"
    }


def searched_results(body: dict[str, Any]) -> list[Any]:
    """What ``tape_search`` answered, in a request body."""
    ids = searched_ids(body)
    return [m for m in body.get("messages") or [] if m.get("role") == "tool" and m.get("tool_call_id") in ids]


def without_searches(body: dict[str, Any]) -> dict[str, Any]:
    """A request body without what ``tape_search`` answered."""
    ids = searched_ids(body)
    kept = [m for m in body.get("messages") or [] if not (m.get("role") == "tool" and m.get("tool_call_id") in ids)]
    return {**body, "messages": kept}


class NotebookMachine(RuleBasedStateMachine):
    """A notebook used as a team uses one: agents, handoffs, forks, previews, retraction, redaction, restarts."""

    secrets = Bundle("secrets")

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="bub-nb-machine-"))
        self.home = self.root / "home"
        self.folder = self.home / "tapes"
        self.saved_env = {name: os.environ.get(name) for name in ENVIRONMENT}
        self.saved_cwd = os.getcwd()
        self.server = OpenAICompatibleServer(model="machine").start()
        os.environ.update(
            BUB_HOME=str(self.home),
            BUB_MODEL="openai:machine",
            BUB_API_BASE=self.server.base_url,
            BUB_API_KEY="test-key-not-secret",
        )
        os.environ.pop("BUB_STORE", None)
        os.environ.pop("JPY_SESSION_NAME", None)
        os.chdir(self.root)
        self.kernel = Shell.start()
        self.counter = 0
        self.markers: set[str] = set()  # a unique text per prompt, and every secret pasted
        self.redacted: set[str] = set()
        self.restored_by_accept: set[str] = set()  # redacted secrets an accepted preview wrote back
        self.defined: set[str] = set()  # agents %agent defined in this kernel's life
        self.previews: dict[str, tuple[Any, dict[str, bytes]]] = {}  # name -> (the session's tape, the tapes then)
        self.seen: dict[str, dict[int, dict[str, Any]]] = {}  # tape file -> the lines seen, by id
        self.retracted: dict[str, set[tuple[str, int]]] = {}  # marker -> its copies, all retracted
        self.retracted_before: set[str] = set()
        self.requests_checked = 0
        self.outputs_checked = 0
        self.notebook_files: dict[Path, str] = {}  # the notebook files on disk -> which notebook each is
        self.notebook_now = "n0"  # the notebook the kernel runs
        self.parents: dict[str, tuple[str, int]] = {}  # a duplicate -> (its original, the prompt count it split at)
        self.prompts: dict[str, tuple[str, int]] = {}  # a prompt's marker -> (its notebook, its count)
        self.identity_checked = 0

    def teardown(self) -> None:
        self.session.mcp.close()  # as unloading the extension would: no MCP server outlives the example
        InteractiveShell.clear_instance()
        self.server.stop()
        os.chdir(self.saved_cwd)
        for name, value in self.saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(self.root, ignore_errors=True)

    # -- helpers -------------------------------------------------------------------------------------------

    def marker(self, kind: str = "tok") -> str:
        self.counter += 1
        made = f"{kind}{self.counter:04d}q" if kind == "tok" else f"PASTED-{self.counter:04d}-{os.urandom(4).hex()}"
        self.markers.add(made)
        return made

    def live_markers(self) -> list[str]:
        """The markers still in view, the secrets last (an echo quotes from the end)."""
        return sorted(self.markers - self.redacted - set(self.retracted), key=lambda m: (m.startswith("PASTED"), m))

    @property
    def session(self) -> Any:
        return self.kernel.session

    def notebook(self) -> str:
        return home_files.notebook_of(str(self.session.tape.name))

    def tape_bytes(self) -> dict[str, bytes]:
        if not self.home.exists():
            return {}
        return {k: v for k, v in home_files.snapshot(self.home).items() if k.endswith(LIVE_FILES)}

    def cell(self, source: str) -> bool:
        """Run a cell; ``True`` when it ran, ``False`` when it was refused (one ``UsageError``, nothing written).

        Anything else a cell raises is a traceback from the internals, which a magic must never show.
        """
        before = self.tape_bytes()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                try:
                    self.kernel.run(source)
                finally:
                    self.server.drop_pending()  # what this cell's turn did not ask for is not a later cell's answer
        except UsageError as exc:
            after = self.tape_bytes()
            changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
            check("refusal_wrote_nothing", not changed, f"{source!r} was refused ({exc}) but changed {changed}")
            self.last_refusal = str(exc)
            return False
        except Exception as exc:
            raise Finding(f"[usage_errors_only] {source!r} raised {type(exc).__name__}: {exc}") from exc
        return True

    def script(self, plan: list[Reply]) -> None:
        """Queue the hostile model's replies for the next requests (an empty queue answers plain text)."""
        live = self.live_markers()
        holder = self.holder_from_tapes()
        path = self.folder / f"{self.notebook()}{'' if holder == 'main' else '~' + holder}.jsonl"
        cited = " ".join(
            f"[#{n}]" for n in range(1, min(len(home_files.records(path)) if path.exists() else 1, 80) + 1)
        )
        for reply in plan:
            text = reply.text + (f" as you said: {live[-reply.echo % len(live) - 1]}" if reply.echo and live else "")
            if reply.summary:
                text = f"Summary:\n{text} {cited}.\n\nNext steps:\nGo on."
            if reply.calls:
                self.server.reply_tool_calls([{"name": n, "arguments": a} for n, a in reply.calls], content=text)
            else:
                self.server.reply(text or "ok")

    def holder_from_tapes(self) -> str:
        return home_files.holder(self.folder, self.notebook())

    # -- rules ------------------------------------------------------------------------------------------------

    @initialize(agents=st.lists(st.sampled_from(AGENT_NAMES), unique=True))
    def first_turn(self, agents: list[str]) -> None:
        self.server.reply("hello")
        self.cell(f"%%bub\nhello {self.marker()}")
        for name in agents:
            self.define_agent(name)

    def someone(self, data: st.DataObject, *extra: str) -> str:
        """An agent to name: one defined in this kernel's life mostly, sometimes any other name."""
        known = sorted(self.defined | {"main"})
        return data.draw(st.one_of(st.sampled_from(known), st.sampled_from([*AGENT_NAMES, *extra])))

    @rule(name=st.sampled_from(AGENT_NAMES))
    def define_agent(self, name: str) -> None:
        if self.cell(f"%agent {name}"):
            self.defined.add(name)

    @rule(data=st.data(), plain=st.booleans(), plan=st.lists(replies, max_size=3))
    def bub(self, data: st.DataObject, plain: bool, plan: list[Reply]) -> None:
        agent = None if plain else self.someone(data)
        expected = self.holder_from_tapes()
        self.script(plan)
        option = f" --agent {agent}" if agent else ""
        ran = self.cell(f"%%bub{option}\nplease go on {self.marker()}")
        if ran and agent is None and len(home_files.agents_on_disk(self.folder, self.notebook())) > 1:
            runner = self.session.last_agent.name or "main"
            check("plain_bub_runs_as_holder", runner == expected, f"a plain %%bub ran as {runner}, {expected} holds")

    @rule(mode=st.sampled_from(["recall", "last+recall", "recall:200"]), plan=st.lists(replies, max_size=2))
    def bub_with_recall(self, mode: str, plan: list[Reply]) -> None:
        # Recall by the prompt: the words every earlier prompt shares rank them all, retracted and redacted ones
        # among them; the invariants check that none of those reaches the request.
        self.script(plan)
        self.cell(f"%%bub --context {mode}\nplease go on, as before {self.marker()}")

    @rule(plan=st.lists(st.builds(Reply, st.sampled_from(["fine.", *ODD_TEXTS])), max_size=2))
    def bub_fresh(self, plan: list[Reply]) -> None:
        """``%%bub --fresh``, as a notebook run again from the top starts a turn over: its first request's history
        holds none of the prompts before it (their markers), though every one of them stays on the tape."""
        self.script(plan)
        before = len(self.server.requests)
        prompt = self.marker()
        earlier = sorted(m for m in self.markers if m.startswith("tok") and m != prompt)
        if not self.cell(f"%%bub --fresh\nstart over {prompt}"):
            return
        asked = [body for body in self.server.requests[before:] if prompt in texts_in(body)]
        check("fresh_turn_asked", bool(asked), f"the --fresh turn {prompt} sent no request")
        if asked:
            # The system prompt carries the memory zone, which a fresh run keeps (memory_save's markers); the
            # history after it is what --fresh starts over.
            text = texts_in([m for m in asked[0].get("messages") or [] if m.get("role") != "system"])
            carried = [m for m in earlier if m in text]
            check("fresh_turn_starts_clean", not carried, f"the first request after --fresh holds {carried[:5]}")

    @rule(share=st.sampled_from([0.0, 0.3, 0.8]), plan=st.lists(replies, max_size=2))
    def handoff_at(self, share: float, plan: list[Reply]) -> None:
        # A handoff before a turn that would pass the share of the window; the invariants hold either way.
        self.cell(f"%config BubMagics.handoff_at = {share}")
        self.script(plan)
        self.cell(f"%%bub\nplease go on {self.marker()}")

    @rule(target=secrets, plan=st.lists(replies, max_size=2))
    def paste_secret(self, plan: list[Reply]) -> str:
        secret = self.marker("secret")
        self.script(plan)
        self.cell(f"%%bub\nmy token is {secret}, keep it safe {self.marker()}")
        return secret

    @rule(
        name=st.sampled_from(ANCHOR_NAMES[:3]),
        summarize=st.booleans(),
        plan=st.lists(replies, max_size=2),
    )
    def handoff(self, name: str, summarize: bool, plan: list[Reply]) -> None:
        self.script([SUMMARY, *plan] if summarize else plan)
        self.cell(f"%handoff {name} --summarize" if summarize else f"%handoff {name} note=done")

    @rule(
        name=st.sampled_from(ANCHOR_NAMES[:3]),
        how=st.sampled_from(["--reason review", "--share", "--summarize"]),
        data=st.data(),
        plan=st.lists(replies, max_size=2),
    )
    def hand_over(self, name: str, how: str, data: st.DataObject, plan: list[Reply]) -> None:
        """``%handoff NAME --to AGENT``: a transfer, a share, or a transfer with a summary."""
        to = self.someone(data, "nobody")
        self.script([SUMMARY, *plan] if how == "--summarize" else plan)
        self.cell(f"%handoff {name} --to {to} {how}")

    @rule(target=secrets, data=st.data())
    def hand_over_secret(self, data: st.DataObject) -> str:
        """A secret pasted into a handoff's reason (``%handoff p3 --to AGENT --reason '...'``)."""
        secret = self.marker("secret")
        self.cell(f"%handoff p3 --to {self.someone(data)} --reason 'use key {secret}'")
        return secret

    @rule(name=st.sampled_from(ANCHOR_NAMES[:2]), plan=st.lists(replies, max_size=2))
    def preview(self, name: str, plan: list[Reply]) -> None:
        self.script([SUMMARY, *plan])
        if self.cell(f"%handoff {name} --summarize --preview"):
            self.previews[name] = (self.session.tape, self.tape_bytes())

    @precondition(lambda self: self.previews or self.counter % 3 == 0)  # mostly after a preview was shown
    @rule(name=st.sampled_from(ANCHOR_NAMES[:2]), comma=st.booleans())
    def accept(self, name: str, comma: bool) -> None:
        shown = self.previews.get(name)
        before = {s for s in self.redacted if self.found_in_files(s)}
        line = f",handoff name={name} accept=true" if comma else f"%handoff {name} --accept"
        if self.cell(line):
            self.previews.pop(name, None)
            back = {s for s in self.redacted if self.found_in_files(s)} - before
            if not checked("accept_restores_redacted"):
                self.restored_by_accept |= back
            check("accept_restores_redacted", not back, f"accepting {name} wrote redacted {sorted(back)} back")
        elif shown is not None and "No preview" in self.last_refusal:
            tape, files = shown  # nothing changed since it was shown: the same tape, and not a byte written
            same = tape is self.session.tape and files == self.tape_bytes()
            check(
                "accept_finds_preview", not same, f"{line!r} found no preview after one was shown: {self.last_refusal}"
            )

    @rule(name=st.sampled_from(FORK_NAMES))
    def fork(self, name: str) -> None:
        self.cell(f"%tape fork {name}")

    @rule(which=st.sampled_from(["notebook", *FORK_NAMES]))
    def use(self, which: str) -> None:
        target = self.notebook() if which == "notebook" else which
        self.cell(f"%tape use {target}")

    def ids_with_markers(self, tape: Any) -> list[int]:
        path = self.folder / f"{tape.name}.jsonl"
        if not path.exists():
            return []
        return [
            r["id"]
            for r in home_files.records(path)
            if r["kind"] in ("message", "tool_call", "tool_result")
            and any(m in texts_in(r["payload"]) for m in self.markers)
        ]

    @rule(pick=st.integers(0, 30), form=st.sampled_from(["magic", "comma", "range"]))
    def retract(self, pick: int, form: str) -> None:
        team_tape = self.session.team().tape_of(self.session.team().holder() or "main") if self.session.agents else None
        tape = team_tape if form == "comma" and team_tape is not None else self.session.tape
        ids = self.ids_with_markers(tape) or [pick]
        chosen = ids[pick % len(ids)]
        target = f"{chosen}-{chosen + 1}" if form == "range" else str(chosen)
        before = self.tape_bytes()
        line = f",retract entries={target}" if form == "comma" else f"%tape retract {target}"
        if self.cell(line) and form != "comma" and self.session.agents:
            holder = self.holder_from_tapes()
            expected = self.notebook() + ("" if holder == "main" else f"~{holder}")
            grew = [k for k, v in self.tape_bytes().items() if before.get(k) != v]
            check(
                "retract_acts_on_holders_tape",
                grew == [f"tapes/{expected}.jsonl"],
                f"%tape retract wrote on {grew}, {holder} holds the conversation on {expected}",
            )

    @rule(pick=st.integers(0, 30))
    def unretract(self, pick: int) -> None:
        path = self.folder / f"{self.session.tape.name}.jsonl"
        ids = sorted(home_files.retracted_ids(home_files.records(path))) if path.exists() else []
        self.cell(f"%tape unretract {ids[pick % len(ids)] if ids else pick}")

    @rule(archive=st.booleans())
    def reset(self, archive: bool) -> None:
        holder = self.holder_from_tapes()  # the tape a reset acts on: the holder's (one target for every command)
        path = self.folder / f"{self.notebook()}{'' if holder == 'main' else '~' + holder}.jsonl"
        if self.cell("%tape reset --archive" if archive else "%tape reset") and not archive:
            self.seen.pop(path.name, None)  # asked for: the old entries are discarded

    @rule(text=st.sampled_from(["prefers tables", *ODD_TEXTS[:6]]), secret=st.booleans())
    def memory_save(self, text: str, secret: bool) -> None:
        extra = f" {self.marker('secret')}" if secret else ""
        self.cell(f"%memory save {text}{extra} {self.marker()}")

    @rule(
        command=st.sampled_from(
            [",anchors", ",tape.info", ",tape.search query=tok", ",handoff name=c1 summary=done", ",help", ",nosuch"]
        )
    )
    def comma(self, command: str) -> None:
        self.cell(command)

    @rule(line=st.sampled_from(["%agent", "%context", "%anchors", "%tape info", "%memory"]))
    def look(self, line: str) -> None:
        before = self.tape_bytes()
        self.cell(line)
        check("looking_writes_nothing", self.tape_bytes() == before, f"{line!r} changed a tape")

    @rule(
        payload=st.sampled_from(hostile_text.PAYLOADS),
        field=st.sampled_from(["reply", "anchor name", "summary"]),
        then=st.sampled_from(["%tape info", "%anchors", "%context", "%context --turn -1"]),
    )
    def hostile_text(self, payload: str, field: str, then: str) -> None:
        """Markup, breakouts and control characters in a reply, a model-chosen anchor name or a summary; then a
        surface that shows them. The ``displays_hold_no_markup_bub_nb_did_not_write`` invariant reads the outputs."""
        text = payload.replace("BEACON", "http://127.0.0.1:9")
        if field == "reply":
            self.script([Reply(text)])
        else:
            handoff = {"name": text if field == "anchor name" else "phase/x", "summary": f"{text} [#1]"}
            self.script([Reply("", (("tape_handoff", handoff),)), Reply(text)])
        self.cell(f"%%bub\nshow me {self.marker()}")
        self.cell(then)

    @rule(action=st.sampled_from(["add", "remove", "list", "restart"]))
    def mcp(self, action: str) -> None:
        """``%mcp``: a hostile MCP server added, listed, restarted or removed; its tools are then offered to the
        turns (the hostile model calls them), and no ``%mcp`` command writes to a tape."""
        line = {
            "add": f"%mcp add h -- {sys.executable} {HOSTILE_MCP} tools {self.root.name}",
            "remove": "%mcp remove h",
            "list": "%mcp",
            "restart": "%mcp restart h",
        }[action]
        before = self.tape_bytes()
        self.cell(line)
        check("mcp_writes_nothing", self.tape_bytes() == before, f"{line!r} changed a tape")

    @rule(secret=consumes(secrets), which=st.integers(0, 3))
    def redact(self, secret: str, which: int = 0) -> None:
        """Redact a pasted secret: by value where ``bub_nb.redact_text`` exists, else as a user would by entry: every
        entry holding it on the ``which``-th tape it was pasted on (``bub-nb tapes redact NAME --entry ID ...``)."""
        if not self.found_in_files(secret):
            return
        try:
            from bub_nb import redact_text  # type: ignore[attr-defined]
        except ImportError:
            redact_text = None
        holder = self.holder_from_tapes()
        if redact_text is not None:
            redact_text(secret, home=self.home)
        else:
            from bub_nb.cli import main

            holding = {
                path.name[: -len(".jsonl")]: [r for r in home_files.records(path) if secret in texts_in(r["payload"])]
                for path in home_files.tape_files(self.folder)
            }
            pasted = [name for name, found in holding.items() if any(r["payload"].get("role") == "user" for r in found)]
            candidates = pasted or [name for name, found in holding.items() if found]
            if not candidates:
                return
            name = candidates[which % len(candidates)]
            entries = [arg for record in holding[name] for arg in ("--entry", str(record["id"]))]
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["tapes", "redact", name, *entries, "--home", str(self.home)]) == 0
        self.redacted.add(secret)
        after = self.holder_from_tapes()
        check("redaction_keeps_holder", after == holder, f"{holder} held the conversation, after redaction {after}")

    # -- the notebook's file: renamed, moved, duplicated, as JupyterLab does it ---------------------------------

    def save_notebook(self) -> Path:
        """The running notebook's file as JupyterLab saves it: its answer's metadata names the tape it writes."""
        path = next((p for p, n in self.notebook_files.items() if n == self.notebook_now), self.root / "nb0.ipynb")
        metadata = {"bub_nb": {"tape": self.notebook(), "entry_ids": [], "anchor": None}}
        output = nbformat.v4.new_output("display_data", {"text/plain": "an answer"}, metadata=metadata)
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("%%bub\nhi", outputs=[output])]), path)
        self.notebook_files[path] = self.notebook_now
        return path

    def open_notebook(self, path: Path) -> None:
        """A new kernel for the notebook at ``path`` (opening it after its file changed), and one turn there."""
        self.session.mcp.close()
        os.environ["JPY_SESSION_NAME"] = str(path)
        self.kernel = Shell.start()
        self.outputs_checked = 0
        self.defined.clear()
        self.previews.clear()
        self.notebook_now = self.notebook_files[path]
        self.counter += 1
        prompt = f"nbprompt{self.counter:04d}x"
        self.prompts[prompt] = (self.notebook_now, self.counter)
        self.cell(f"%%bub\nthe file changed {prompt}")

    def descends(self, child: str, parent: str) -> bool:
        while child in self.parents:
            child = self.parents[child][0]
            if child == parent:
                return True
        return False

    def split(self, child: str, parent: str) -> int:
        """The prompt count at which ``child`` left ``parent``'s line (its first step off it)."""
        while self.parents[child][0] != parent:
            child = self.parents[child][0]
        return self.parents[child][1]

    @precondition(lambda self: self.folder.exists())
    @rule(folder=st.sampled_from(["", "sub"]))
    def rename_or_move_notebook(self, folder: str) -> None:
        """The notebook's file renamed in its folder, or moved to another (contents PATCH), then opened again."""
        old = self.save_notebook()
        new = self.root / folder / f"nb{self.counter + 1}.ipynb"
        new.parent.mkdir(exist_ok=True)
        old.rename(new)
        self.notebook_files[new] = self.notebook_files.pop(old)
        self.open_notebook(new)

    @precondition(lambda self: self.folder.exists() and self.notebook_files)
    @rule()
    def duplicate_notebook(self) -> None:
        """File > Duplicate (contents POST with copy_from): the copy opened in a kernel of its own."""
        original = self.save_notebook()
        copy = original.with_name(f"{original.stem}-Copy{self.counter + 1}.ipynb")
        shutil.copy(original, copy)
        made = f"n{len(self.parents) + 1}"
        self.parents[made] = (self.notebook_now, self.counter)
        self.notebook_files[copy] = made
        self.open_notebook(copy)

    @precondition(lambda self: len(set(self.notebook_files.values())) > 1)
    @rule(data=st.data())
    def switch_notebook(self, data: st.DataObject) -> None:
        """Another of the notebooks opened, saved as its kernel left it."""
        self.save_notebook()
        self.open_notebook(data.draw(st.sampled_from(sorted(self.notebook_files))))

    @precondition(lambda self: self.folder.exists())
    @rule()
    def restart(self) -> None:
        """A kernel restart: a fresh shell and extension over the same home; the tapes are all that is left."""
        self.session.mcp.close()  # the old kernel's MCP servers end with it
        InteractiveShell.clear_instance()
        self.kernel = Shell.start()
        self.outputs_checked = 0
        self.defined.clear()
        self.previews.clear()
        # A restarted kernel is back on the notebook's own tape (%tape use and a fork's switch are not kept): what the
        # files say of that tape is what the fresh extension must find.
        holder, agents = self.holder_from_tapes(), set(home_files.agents_on_disk(self.folder, self.notebook()))
        team = self.session.team()
        named = set(team.names)
        check(
            "agents_after_restart", agents <= named, f"after a restart the agents are {named}, the tapes hold {agents}"
        )
        after = team.holder() or "main"
        check("holder_after_restart", after == holder, f"{holder} held the conversation, after a restart {after}")

    @precondition(lambda self: self.folder.exists())
    @rule(agent=st.sampled_from(["main", *AGENT_NAMES]))
    def second_writer(self, agent: str) -> None:
        """Another writer (a second kernel, Bub's CLI) appends to one of the notebook's tapes."""
        from bub_nb.tape import FileTapeStore, Tape

        name = self.notebook() + ("" if agent == "main" else f"~{agent}")
        if not (self.folder / f"{name}.jsonl").exists():
            return
        Tape(name, FileTapeStore(self.folder)).append_message({"role": "user", "content": f"aside {self.marker()}"})

    @precondition(lambda self: self.folder.exists())
    @rule(data=st.data(), plan=st.lists(replies, max_size=2), comma=st.booleans())
    def acp_prompt(self, data: st.DataObject, plan: list[Reply], comma: bool) -> None:
        """An ACP client (the SDK's, connected in process) loads one of the notebook's tapes as its session and
        prompts beside the kernel, as jupyter-ai's chat would on the same tape. One holder, nothing lost: a turn on
        the tape of an agent that may run lands there; on the tape of one that handed the conversation away it is
        refused in one line naming the holder (-32600), and nothing is written anywhere."""
        import acp
        from harness.acp_client import RecordingClient, in_process, text_prompt

        from bub_nb.agent.acp import AcpServer, Place
        from bub_nb.agent.eventloop import run_sync

        agents = sorted(home_files.agents_on_disk(self.folder, self.notebook()))
        if not agents:
            return
        agent = data.draw(st.sampled_from(agents))
        name = self.notebook() + ("" if agent == "main" else f"~{agent}")
        may_run = agent not in home_files.handed_away(self.folder, self.notebook())
        holder = self.holder_from_tapes()
        if may_run:
            self.script(plan)
        text = ",tape.info" if comma else f"over acp {self.marker()}"
        before = self.tape_bytes()

        async def drive() -> Any:
            async with in_process(RecordingClient(permit=None), AcpServer(Place(str(self.home)))) as conn:
                await conn.load_session(cwd=str(self.root), session_id=name)
                return await conn.prompt(session_id=name, prompt=text_prompt(text))

        try:
            answer = run_sync(drive())
        except acp.RequestError as exc:
            message = str((exc.data or {}).get("message", "")) if isinstance(exc.data, dict) else str(exc.data)
            after = self.tape_bytes()
            changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
            check("acp_refusal_wrote_nothing", not changed, f"ACP refused ({message}) but changed {changed}")
            check("acp_refused_only_off_the_holder", not may_run, f"{agent!r} may run, yet ACP refused: {message}")
            check(
                "acp_refusal_is_one_line_naming_the_holder",
                exc.code == -32600 and "\n" not in message and repr(holder) in message,
                f"ACP refused {agent!r} with {exc.code} {message!r}, {holder!r} holding",
            )
            return
        finally:
            self.server.drop_pending()
        check("acp_one_holder", may_run, f"{agent!r} handed the conversation away, yet its ACP turn ran: {answer}")
        check("acp_turn_ends", answer.stop_reason in ("end_turn", "max_turn_requests"), f"ACP stopped: {answer}")
        if not comma:
            asked = [
                r for r in home_files.records(self.folder / f"{name}.jsonl")
                if r["kind"] == "message" and r["payload"].get("content") == text
            ]  # fmt: skip
            check("acp_turn_on_its_tape", len(asked) == 1, f"the ACP prompt {text!r} is on {name} {len(asked)} times")
            check(
                "acp_turn_marked",
                all((r.get("meta") or {}).get("source") == "acp" for r in asked),
                f"the ACP prompt on {name} is not marked as ACP's: {asked}",
            )

    # -- invariants ------------------------------------------------------------------------------------------

    def found_in_files(self, text: str) -> list[str]:
        needle = text.encode()
        return [k for k, v in home_files.snapshot(self.home).items() if needle in v] if self.home.exists() else []

    @invariant()
    def tapes_are_bub_jsonl_and_nothing_is_lost(self) -> None:
        if not self.folder.exists():
            return
        archived = [r for path in home_files.archive_files(self.folder) for r in home_files.records(path)]
        for path in [*home_files.tape_files(self.folder), *home_files.archive_files(self.folder)]:
            problems = home_files.tape_problems(path)
            check("valid_bub_jsonl", not problems, "; ".join(problems))
            now = {r["id"]: r for r in home_files.records(path)}
            earlier = self.seen.get(path.name, {})
            started_over = bool(earlier) and not home_files.same_but_redacted(earlier.get(1), now.get(1))
            for entry_id, old in earlier.items():
                if started_over or entry_id not in now:  # a reset: the lines must be in an archive
                    kept = any(home_files.same_but_redacted(old, r) for r in archived)
                    check("nothing_lost", kept, f"{path.name} #{entry_id} is gone and in no archive")
                else:
                    same = home_files.same_but_redacted(old, now[entry_id])
                    check("nothing_lost", same, f"{path.name} #{entry_id} changed: {old} -> {now[entry_id]}")
            self.seen[path.name] = now

    @invariant()
    def one_holder(self) -> None:
        if not self.folder.exists():
            return
        from_tapes = self.holder_from_tapes()
        team = self.session.team()
        held = team.holder() or "main"
        members = set(home_files.agents_on_disk(self.folder, self.notebook())) | {"main"}
        check("holder_is_a_member", from_tapes in members, f"{from_tapes} holds but has no tape")
        if set(team.names) >= members - {"main"}:  # the extension knows every agent (no restart forgot one)
            check("holder_matches_tapes", held == from_tapes, f"the extension says {held}, the tapes {from_tapes}")

    @invariant()
    def retracted_and_redacted_text_reaches_no_request(self) -> None:
        if not self.folder.exists():
            return
        copies: dict[str, set[tuple[str, int]]] = {m: set() for m in self.markers}
        live: dict[str, set[tuple[str, int]]] = {m: set() for m in self.markers}
        for path in home_files.tape_files(self.folder):
            tape = home_files.records(path)
            out = home_files.retracted_ids(tape)
            for record in tape:
                text = texts_in(record["payload"])
                for marker in self.markers:
                    if marker in text:
                        copies[marker].add((path.name, record["id"]))
                        if record["id"] not in out:
                            live[marker].add((path.name, record["id"]))
        for marker in list(self.retracted):  # brought back: views may hold it again
            if self.retracted[marker] & live[marker]:
                del self.retracted[marker]
        for marker, where in copies.items():
            if where and not live[marker] and marker not in self.retracted:
                self.retracted[marker] = where
        steady = self.retracted_before & set(self.retracted)
        requests = self.server.requests
        fresh, self.requests_checked = requests[self.requests_checked :], len(requests)
        hidden = self.redacted - self.restored_by_accept
        for body in fresh:
            text = texts_in(body)
            searched = texts_in(searched_results(body))
            leaked = sorted(m for m in steady if m in text)
            through_search = [m for m in leaked if m in searched]
            check("retracted_text_via_tape_search", not through_search, f"tape_search gave retracted {through_search}")
            elsewhere = [m for m in leaked if m in texts_in(without_searches(body))]
            check("retracted_text_reaches_no_request", not elsewhere, f"a request holds retracted {elsewhere}")
            shown = sorted(s for s in hidden if s in text)
            check("redacted_text_reaches_no_request", not shown, f"a request holds redacted {shown}")
        self.retracted_before = set(self.retracted)

    @invariant()
    def displays_hold_no_markup_bub_nb_did_not_write(self) -> None:
        outputs = self.kernel.displays.outputs
        fresh, self.outputs_checked = outputs[self.outputs_checked :], len(outputs)
        for output in fresh:
            data = output["data"]
            check("no_markdown_from_outside", "text/markdown" not in data, f"a display published Markdown: {data}")
            problems = hostile_text.markup_problems(str(data.get("text/html", "")))
            check("displays_hold_no_live_markup", not problems, f"a display holds {problems[:3]}")
            plain = set(str(data.get("text/plain", "")))
            raw = sorted(repr(c) for c in plain & hostile_text.CONTROL_CHARACTERS)
            check("plain_text_shows_no_raw_control", not raw, f"a display's plain text holds {raw}")

    @invariant()
    def no_two_notebooks_prompts_in_one_request(self) -> None:
        """A request holds the prompts of one notebook and of its originals before it was duplicated, never those
        of a notebook beside it or of its original after the split."""
        requests = self.server.requests
        fresh, self.identity_checked = requests[self.identity_checked :], len(requests)
        for body in fresh:
            text = texts_in(body)
            found = {prompt: self.prompts[prompt] for prompt in self.prompts if prompt in text}
            owners = {owner for owner, _ in found.values()}
            for prompt, (owner, count) in found.items():
                for other in owners - {owner}:
                    related = self.descends(other, owner) and count <= self.split(other, owner)
                    check(
                        "one_notebook_per_request",
                        related or self.descends(owner, other),
                        f"a request holds {prompt} of {owner} beside prompts of {other}",
                    )

    @invariant()
    def redacted_text_is_in_no_file(self) -> None:
        for secret in sorted(self.redacted - self.restored_by_accept):
            files = self.found_in_files(secret)
            check("redacted_copies_removed", not files, f"redacted {secret} is still in {files}")


def run_machine(*, examples: int, steps: int, **options: Any) -> None:
    run_state_machine_as_test(
        NotebookMachine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            # the same examples on every run, so CI is reproducible; BUB_NB_MACHINE_RANDOM=1 explores new ones
            derandomize=os.environ.get("BUB_NB_MACHINE_RANDOM") != "1",
            suppress_health_check=list(HealthCheck),
            print_blob=True,
            **options,
        ),
    )


def test_every_command_of_the_notebook_keeps_the_tapes_whole_and_the_secrets_out() -> None:
    run_machine(examples=int(os.environ.get("BUB_NB_MACHINE_EXAMPLES", "5")), steps=20)


@pytest.mark.slow
def test_every_command_of_the_notebook_keeps_the_tapes_whole_and_the_secrets_out_long() -> None:
    run_machine(examples=40, steps=40)
