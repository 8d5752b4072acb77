"""The turn pipeline's hook contract: the envelope, stream events and one pluggy spec per stage.

Plugins implement any subset of these hooks with ``@hookimpl``. An implementation may be a plain
function or a coroutine function; the pipeline awaits what it gets. Implementations may accept any
subset of a spec's arguments, as pluggy allows, and ``@hookimpl(wrapper=True)`` generators run
around the others (``bub_nb.agent.hooks.runtime`` calls them all as pluggy documents).

Order: the builtin plugin is registered first and every later plugin runs *before* it (pluggy
calls the most recently registered implementation first), so a later plugin wins a firstresult
hook and its state wins a merge.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from bub_nb.tape import Tape, TapeStore

PROJECT = "bub_nb"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

State = dict[str, Any]
Prompt = str | list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Envelope:
    """One message in or out of the pipeline; plain dicts with the same keys are accepted too."""

    channel: str
    chat_id: str
    content: str
    session_id: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One event of a model stream.

    Kinds the pipeline reads: ``text`` ``{"delta": str}`` and ``error`` ``{"kind", "message"}``.
    Others (``tool_call``, ``tool_result``, ``usage``, ...) pass through to the caller unchanged.
    """

    kind: str
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def text(cls, delta: str) -> StreamEvent:
        return cls("text", {"delta": delta})

    @classmethod
    def error(cls, kind: str, message: str) -> StreamEvent:
        return cls("error", {"kind": kind, "message": message})


StreamEvents = AsyncIterator[StreamEvent]
Outbound = Envelope | Mapping[str, Any]


def field_of(message: Any, name: str, default: Any = None) -> Any:
    """A field of an envelope, whether it is a mapping or an object."""
    if isinstance(message, Mapping):
        return message.get(name, default)
    return getattr(message, name, default)


def content_of(message: Any) -> str:
    """An envelope's plain text content (``""`` when it has none)."""
    content = field_of(message, "content")
    return "" if content is None else str(content)


def default_session_id(message: Any) -> str:
    """The envelope's own session id, else ``"<channel>:<chat_id>"`` with ``"default"`` for each gap."""
    session_id = field_of(message, "session_id")
    if session_id:
        return str(session_id)
    return f"{field_of(message, 'channel') or 'default'}:{field_of(message, 'chat_id') or 'default'}"


def with_session(message: Outbound, session_id: str) -> Outbound:
    """The envelope carrying ``session_id``: a mutable mapping is updated in place, a dataclass replaced."""
    if isinstance(message, MutableMapping):
        message["session_id"] = session_id
        return message
    if dataclasses.is_dataclass(message) and not isinstance(message, type) and hasattr(message, "session_id"):
        return dataclasses.replace(message, session_id=session_id)
    return message


class TurnSpecs:
    """One hook per stage of a turn, plus the hooks the agent asks while running the model."""

    @hookspec(firstresult=True)
    def resolve_session(self, message: Outbound) -> str | None:
        """The session id for an inbound envelope.

        The first non-``None`` answer wins. With none, the pipeline uses the envelope's own
        ``session_id``, else ``f"{channel}:{chat_id}"`` (each defaulting to ``"default"``).
        """

    @hookspec
    def load_state(self, message: Outbound, session_id: str) -> State | None:
        """A state dict for this turn.

        Every implementation contributes. The pipeline merges the dicts lowest priority first, so
        on a key collision the plugin registered last wins. ``None`` contributes nothing.
        """

    @hookspec(firstresult=True)
    def build_prompt(self, message: Outbound, session_id: str, state: State) -> Prompt | None:
        """The prompt for the model: a string or a list of OpenAI content parts.

        The first non-``None`` answer is taken even when it is falsy; a falsy answer (or none at all)
        makes the pipeline use the envelope's plain content.
        """

    @hookspec(firstresult=True)
    def run_model(self, prompt: Prompt, session_id: str, state: State) -> str | None:
        """Run the model for one turn and return its final text.

        Implement this *or* ``run_model_stream``. A streaming caller gets the text as one chunk.
        """

    @hookspec(firstresult=True)
    def run_model_stream(self, prompt: Prompt, session_id: str, state: State) -> StreamEvents | None:
        """Run the model for one turn and return an async iterator of :class:`StreamEvent`.

        Implement this *or* ``run_model``. A non-streaming caller gets the text deltas joined; every
        ``error`` event reaches ``on_error(stage="run_model")``.
        """

    @hookspec
    def save_state(self, session_id: str, state: State, message: Outbound, model_output: str) -> None:
        """Persist what the turn changed.

        Always called, even when the model raised or was interrupted; ``model_output`` is then
        whatever text had arrived, possibly ``""``. ``sys.exc_info()`` tells whether the turn failed.
        """

    @hookspec
    def render_outbound(
        self, message: Outbound, session_id: str, state: State, model_output: str
    ) -> list[Outbound] | None:
        """Outbound envelopes for the model output.

        All batches are concatenated. When every batch is empty, the pipeline sends one envelope with
        the output on the inbound's channel and chat.
        """

    @hookspec
    def dispatch_outbound(self, message: Outbound) -> bool | None:
        """Deliver one outbound envelope; return ``True`` once delivered. Called once per envelope."""

    @hookspec
    def on_error(self, stage: str, error: Exception, message: Outbound | None) -> None:
        """Observe a failure at ``stage`` (``"run_model"`` or ``"turn"``).

        Observers cannot break each other: an exception raised here is logged and the remaining
        observers still run.
        """

    @hookspec
    def system_prompt(self, prompt: Prompt, state: State) -> str | None:
        """A part of the system prompt.

        Broadcast, not firstresult: the builtin contributes the default instructions and the
        ``<memory>`` block, a workspace plugin adds AGENTS.md, a course plugin adds its rules. The
        pipeline joins the non-empty parts with blank lines, lowest priority first, so a plugin adds
        to the default prompt without having to repeat it.
        """

    @hookspec(firstresult=True)
    def provide_tape_store(self) -> TapeStore | None:
        """The store tapes are kept in; the builtin provides the file store under the tapes home."""

    @hookspec(firstresult=True)
    def build_tape_context(self, tape: Tape, mode: Any) -> Any:
        """How the model's view of ``tape`` is built this turn, given the requested context ``mode``.

        Return a ``bub_nb.context.View`` ready to send, or a ``ContextStrategy`` (or any mode that
        ``bub_nb.context.build_view`` accepts) for the pipeline to build the view with, or ``None``
        to leave it to the next plugin. With no answer the view is ``build_view(tape, mode)``. This is
        where a window, summary or retrieval strategy plugs in.
        """

    # -- Bub's session and process hooks, called where Bub calls them (bub_nb.agent.hooks.session) -------------

    @hookspec(firstresult=True)
    def admit_message(self, session_id: str, message: Outbound, turn: Any) -> Any:
        """Whether an inbound message runs as a turn, asked after ``resolve_session`` and before anything else.

        ``turn`` is a :class:`~bub_nb.agent.hooks.session.TurnSnapshot`. Answer ``None`` or an ``AdmitDecision``
        (Bub's or bub_nb's): ``drop`` refuses the message, the turn saying so in one line and writing nothing;
        ``process``, ``follow_up`` and ``steer`` run it (a kernel runs one cell at a time: there is no running
        turn to queue behind or steer).
        """

    @hookspec(firstresult=True)
    def continue_prompt(self, prompt: Prompt | None, tape: Tape, state: State) -> str | None:
        """A user message to add when the agent loop continues after a step's tool calls, before its next model call.

        The first non-``None`` answer is written on the tape as the turn's next user message; with none the next
        call sees the conversation as it stands. The loop's ``max_steps`` bounds the steps as always.
        """

    @hookspec
    def provide_model_options(self, session_id: str, workspace: Any) -> Any:
        """The models a session may choose from: a ``ModelOptions`` (``models``, ``current_model``), Bub's or
        bub_nb's. Every answer contributes, merged as Bub merges them (``TurnPipeline.model_options``)."""

    @hookspec(firstresult=True)
    def provide_environment(self, session_id: str, workspace: Any) -> Any:
        """The environment the session's tools run processes and touch files in (Bub's ``Environment``).

        Asked once per session, kept until the pipeline closes, which calls its ``close()``. Tools find it in
        their context's state under ``"environment"`` (and Bub's ``"_runtime_environment"``).
        """

    @hookspec
    def provide_lifespan(self) -> Any:
        """Own resources while the kernel runs: a generator that yields once, or a context manager (either may be
        async). Entered when the pipeline starts (loading the extension starts the shared one), or on registering
        when it has started; left when it closes (unloading the extension, or the kernel's exit)."""

    # -- Bub's interception hooks, called where Bub calls them (bub_nb.agent.hooks.interception) ----------------

    @hookspec
    def before_llm_call(self, request: Any, state: State) -> Any:
        """Observe, change or answer one model call of the agent loop, before it is made.

        ``request`` is an :class:`~bub_nb.agent.hooks.interception.LlmCallRequest` (``run_id``, ``model``,
        ``messages``, ``tool_names``, ``max_tokens``). Implementations are chained, the plugin registered last
        first: each sees the request as the one before left it and may return a changed copy
        (``dataclasses.replace``), ``None``, or ``LlmCallDecision.finish(text)`` (Bub's or bub_nb's), which skips
        the call and makes ``text`` the step's answer. One that raises is logged and skipped, as in Bub.
        """

    @hookspec
    def after_llm_call(self, request: Any, result: Any, state: State) -> None:
        """Observe the outcome of one model call: an ``LlmCallResult`` with the text, tool calls, usage, or the
        error. Called once per call that ended, successfully or with an ``Exception``; one that raises is logged."""

    @hookspec
    def before_tool_call(self, call: Any, state: State) -> Any:
        """Decide whether and how one tool call runs: ``None`` or ``ToolCallDecision.proceed(arguments)``
        continues (the next implementation sees the changed arguments), ``replace(result)`` skips the tool and uses
        ``result``, ``deny(message)`` skips it with a tool error; the last two end the chain."""

    @hookspec
    def after_tool_call(self, call: Any, result: Any, state: State) -> None:
        """See the outcome of one tool call (success, failure, denial, replacement) as a mutable
        ``ToolCallResult``: assigning ``result.result`` changes what the model reads."""


BUB_PROJECT = "bub"
"""Bub's pluggy project: ``@bub.hookimpl`` marks with it, and its entry-point group has its name."""

BUB_ONLY_HOOKS: dict[str, str] = {
    "provide_channels": "a notebook has no channels; its cells are the one way in",
    "register_cli_commands": "bub_nb has no Typer app; the `bub-nb` command is its own",
    "onboard_config": "a notebook has no onboarding; settings are environment variables and %config",
    "provide_steering_inbox": "a cell runs one turn at a time and nothing steers a running turn",
    "provide_tape_sidecar": "bub_nb mounts no sidecar on a notebook's tape; Bub's sidecar tapes list under their owner",
}
"""Bub 0.5.1's hooks that bub_nb does not call, each with the reason, named when a plugin implements one."""
