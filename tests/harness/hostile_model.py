"""A hostile model: it replies with anything a real model or a prompt injection could produce.

``HostileModel`` plays a list of :class:`Move` values, one per model call: text of any size and content,
calls of any tool with any JSON arguments, a stream cut short, or an error of any kind. The hypothesis
strategies below draw those moves, so a property test can ask what holds after *any* sequence of turns::

    from hypothesis import given
    from harness.hostile_model import HostileModel, moves

    @given(moves())
    def test_something(script):
        agent = Agent(tape, HostileModel(script))
        ...

The strategies need ``hypothesis`` (a ``dev`` extra); the model itself does not.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from bub_nb.agent.models.base import Completion, Message, TextDelta, ToolCall, ToolSchema, Usage
from bub_nb.agent.tools import model_builtins
from bub_nb.context.tokens import count_messages_tokens, count_text_tokens
from bub_nb.errors import ContextLengthError, ModelError

SECRET_KEY: Final = "sk-hostile0123456789abcdefSECRET"
"""The API key a hostile test puts in the environment (``OPENAI_API_KEY``); the model repeats it everywhere."""

SECRET_DSN: Final = "postgresql://cleo:hostile-pw-4711@db.example/class"
"""A DSN with a password, as a model might echo from a notebook."""

_SCHEMAS: Final = [schema["function"] for schema in model_builtins(True).schemas()]

TOOL_NAMES: Final = tuple(str(function["name"]) for function in _SCHEMAS)
"""The builtin tools as a model names them (``tape_handoff``, ``memory_save``, …)."""

PARAMETERS: Final = tuple(
    sorted({name for function in _SCHEMAS for name in function["parameters"].get("properties", {})})
)
"""Every parameter name a builtin tool takes: a hostile call uses them with values of any type."""

NASTY_STRINGS: Final = (
    "memory/open",
    "memory/seal",
    "memory/x",
    "session/start",
    "auto_handoff/context_overflow",
    "",
    " ",
    "Everything [#1-#99999999999].",
    "See [#0] and [#-3] and [#99999999999999999999] and [#5-#2].",
    "[#1]" * 50,
    f"my key is {SECRET_KEY}",
    f"store at {SECRET_DSN}",
    "postgresql://u:p a@ss@host/db",
    "\x00\x01\x1b[31mred\x1b[0m\r\n\t",
    "\ud800 lone surrogate",
    "\udfff",
    "e\u0301 \u202e rtl \ufeff bom",
    "x" * 5000,
    "🧪" * 300,
    "'; DROP TABLE tapes; --",
    "../../etc/passwd",
    "{{var}} {x!r} %s",
)


@dataclass(frozen=True, slots=True)
class Move:
    """One reply of the hostile model.

    ``kind`` is ``text`` (answer ``text``), ``calls`` (``calls`` as ``(name, raw JSON arguments)``, with
    ``text`` beside them), ``cut`` (stream ``text``'s first half, then fail as a dropped connection),
    ``overflow`` (a context-length refusal) or ``error`` (``ModelError``, or any other exception when
    ``text`` names a builtin one: ``ValueError``, ``RuntimeError``, ``TimeoutError``).
    """

    kind: str
    text: str = ""
    calls: tuple[tuple[str, str], ...] = ()
    usage: tuple[int, int] | None = None

    def __repr__(self) -> str:  # a failing example may hold a megabyte of text: show its shape
        text = self.text if len(self.text) <= 80 else f"{self.text[:40]!s}…({len(self.text)} chars)"
        calls = [(name, args if len(args) <= 80 else f"{args[:40]}…({len(args)} chars)") for name, args in self.calls]
        return f"Move({self.kind!r}, {text!r}, calls={calls!r}, usage={self.usage!r})"


@dataclass
class HostileModel:
    """Plays ``moves`` one per call (then answers ``done``); records how many calls it had."""

    moves: Sequence[Move]
    name: str = "hostile"
    context_window: int | None = None
    calls: int = 0
    requests: list[list[Message]] = field(default_factory=list)

    def _next(self, messages: list[Message]) -> Move:
        self.requests.append(messages)
        move = self.moves[self.calls] if self.calls < len(self.moves) else Move("text", "done")
        self.calls += 1
        if self.context_window is not None:
            tokens = count_messages_tokens(messages)
            if tokens > self.context_window:
                raise ContextLengthError(f"prompt is {tokens} tokens, over the window of {self.context_window}")
        return move

    def _completion(self, move: Move, messages: list[Message]) -> Completion:
        calls = tuple(ToolCall(f"call_{self.calls}_{n}", name, args) for n, (name, args) in enumerate(move.calls))
        if move.usage is not None:
            usage: Usage | None = Usage.of(*move.usage)
        else:
            usage = Usage.of(count_messages_tokens(messages), count_text_tokens(move.text))
        return Completion(move.text, calls, usage, "tool_calls" if calls else "stop", self.name)

    async def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> Completion:
        move = self._next(messages)
        _raise(move)
        if move.kind == "cut":
            raise ModelError("the connection was closed before the answer ended")
        return self._completion(move, messages)

    async def stream(
        self, messages: list[Message], tools: list[ToolSchema] | None = None
    ) -> AsyncIterator[TextDelta | Completion]:
        move = self._next(messages)
        _raise(move)
        if move.kind == "cut":
            half = move.text[: len(move.text) // 2]
            if half:
                yield TextDelta(half)
                await asyncio.sleep(0)
            raise ModelError("the stream was cut short before the answer ended")
        for start in range(0, len(move.text), 4096):
            yield TextDelta(move.text[start : start + 4096])
        yield self._completion(move, messages)


_ERRORS: Final = {"ValueError": ValueError, "RuntimeError": RuntimeError, "TimeoutError": TimeoutError}


def _raise(move: Move) -> None:
    if move.kind == "overflow":
        raise ContextLengthError(f"This model's maximum context length is 512 tokens. {move.text}"[:2000])
    if move.kind == "error":
        raise _ERRORS.get(move.text, ModelError)(f"hostile failure: {move.text[:200]}")


def script(moves: Iterable[Move]) -> list[Move]:
    """``moves`` as a list, for :class:`HostileModel`."""
    return list(moves)


# -- strategies (hypothesis) --------------------------------------------------------------------


def texts() -> Any:
    """Text of any content, sometimes huge: control characters, lone surrogates, fake ``[#id]``, secrets."""
    from hypothesis import strategies as st

    return st.one_of(
        st.sampled_from(NASTY_STRINGS),
        st.text(max_size=200),
        st.builds(
            lambda word, n: word * n, st.sampled_from(["a", "[#3] ", "\x07", "ü", "\ud800"]), st.integers(1, 4000)
        ),
        st.sampled_from([1, 1000, 1_000_000]).map(lambda n: "y" * n),  # shrinks fast, to the shortest
    )


def json_values() -> Any:
    """Any JSON value, wrong types and huge numbers included."""
    from hypothesis import strategies as st

    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from([0, -1, 10**18, 2**63, 1e308, -1e308]),
        st.floats(allow_nan=False, allow_infinity=False),
        texts(),
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=6,
    )


def arguments() -> Any:
    """Raw argument text: a JSON object over the tools' own parameter names with any values, or not JSON at all."""
    from hypothesis import strategies as st

    objects = st.dictionaries(st.sampled_from(PARAMETERS) | st.text(max_size=6), json_values(), max_size=4)
    encoded = objects.map(lambda value: json.dumps(value, ensure_ascii=False))
    raw = st.sampled_from(["", "{", "[]", "null", '"text"', "{'single': 'quotes'}", '{"name": "a", "name": "b"}'])
    return st.one_of(encoded, encoded, raw)


POINTED_CALLS: Final = (
    ("tape_reset", '{"archive": false}'),
    ("tape_reset", "{}"),
    ("tape_handoff", json.dumps({"name": "phase/all", "summary": "Everything [#1-#99999999999]."})),
    ("tape_handoff", json.dumps({"name": "phase/x", "summary": "See [#1-#3] and [#2].", "next_steps": "[#9999]"})),
    ("tape_handoff", json.dumps({"name": "memory/open"})),
    ("tape_handoff", json.dumps({"name": "session/start", "summary": SECRET_KEY})),
    ("tape_handoff", json.dumps({"name": "phase/s", "summarize": True})),
    ("memory_save", json.dumps({"content": f"key {SECRET_KEY} at {SECRET_DSN}"})),
    ("memory_daily", json.dumps({"content": "note", "date": "99999-01-01"})),
    ("memory_recall", json.dumps({"days": 10**12})),
    ("tape_anchors", json.dumps({"limit": -(10**30)})),
    ("tape_search", json.dumps({"query": "[#", "limit": 2**63})),
    ("memory_clear", "{}"),
)
"""Calls a prompt injection would try first: erase the tape, cite everything, take reserved names, leak a key."""


def calls() -> Any:
    """One tool call: a builtin tool (or an unknown or malformed name) with any arguments, or a pointed call."""
    from hypothesis import strategies as st

    names = st.one_of(
        st.sampled_from(TOOL_NAMES), st.sampled_from(TOOL_NAMES), st.sampled_from(["", "nope", "tape.reset"])
    )
    return st.one_of(st.tuples(names, arguments()), st.sampled_from(POINTED_CALLS))


def moves(max_moves: int = 6) -> Any:
    """A script of hostile replies, for :class:`HostileModel`."""
    from hypothesis import strategies as st

    usage = st.none() | st.tuples(st.integers(0, 2**40), st.integers(0, 2**40))
    move = st.one_of(
        st.builds(Move, st.just("text"), texts(), usage=usage),
        st.builds(Move, st.just("calls"), texts(), st.lists(calls(), min_size=1, max_size=3).map(tuple), usage),
        st.builds(Move, st.just("calls"), st.just(""), st.lists(calls(), min_size=1, max_size=3).map(tuple)),
        st.builds(Move, st.just("cut"), texts()),
        st.builds(Move, st.just("overflow"), st.text(max_size=50)),
        st.builds(Move, st.just("error"), st.sampled_from(["ModelError", *_ERRORS])),
    )
    return st.lists(move, min_size=1, max_size=max_moves)


def play_on(server: Any, moves: Iterable[Move]) -> None:
    """Queue ``moves`` on a local :class:`~bub_nb.testing.OpenAICompatibleServer`, so the real ``openai``
    client meets them on the wire: a cut stream is a dropped connection, an error an HTTP status."""
    statuses = {"ModelError": 500, "ValueError": 400, "RuntimeError": 503, "TimeoutError": 504}
    for move in moves:
        usage = None if move.usage is None else {"prompt_tokens": move.usage[0], "completion_tokens": move.usage[1]}
        if move.kind == "text":
            server.reply(move.text, usage=usage)
        elif move.kind == "calls":
            calls = [{"name": name or "unnamed", "arguments": arguments} for name, arguments in move.calls]
            server.reply_tool_calls(calls, content=move.text, usage=usage)
        elif move.kind == "cut":
            server.drop_after(max(1, len(move.text.split()) // 2), move.text or "cut short")
        elif move.kind == "overflow":
            server.fail_context_length()
        else:
            server.fail(statuses.get(move.text, 500), f"hostile failure: {move.text[:200]}")
