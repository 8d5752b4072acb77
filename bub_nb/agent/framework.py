"""The turn pipeline: one inbound envelope through the pluggy stages (docs/plugins.md#hooks) to its outbounds."""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pluggy import HookImpl

from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.hooks.runtime import HookRuntime, hook_of, invoke, invoke_sync
from bub_nb.agent.hooks.session import (
    ModelOptions,
    NotAdmitted,
    TurnSnapshot,
    admission_of,
    close_environment,
    enter_lifespan,
    merge_model_options,
)
from bub_nb.agent.hooks.specs import (
    Envelope,
    Outbound,
    Prompt,
    State,
    StreamEvent,
    content_of,
    default_session_id,
    field_of,
    with_session,
)
from bub_nb.agent.hooks.tape_store import as_tape_store
from bub_nb.errors import ModelError, PipelineError

if TYPE_CHECKING:
    from bub_nb.context import View
    from bub_nb.tape import Tape, TapeStore

logger = logging.getLogger(__name__)

BUB_PLUGINS_VARIABLE = "BUB_NB_BUB_PLUGINS"
"""Set to ``0`` (``false``, ``no``, ``off``) to leave the plugins of Bub's entry-point group ``bub`` unloaded."""
OFF = ("0", "false", "no", "off")

EventSink = Callable[[StreamEvent], Awaitable[None] | None]


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What one turn produced."""

    session_id: str
    prompt: Prompt
    model_output: str
    outbounds: tuple[Outbound, ...]
    state: State


class TurnPipeline:
    """Runs turns through the hooks of the registered plugins.

    The builtin plugin is registered first, then the plugins of the ``bub_nb`` entry-point group and of Bub's
    ``bub`` group (``BUB_NB_BUB_PLUGINS=0`` leaves Bub's out), then whatever :meth:`register_plugin` adds; the
    plugin registered last runs first. Entry points should name a module or an instance, which pluggy registers
    as it is.

    ``builtin`` is a plugin, or a class the pipeline makes its builtin plugin from by passing
    itself (``TurnPipeline(BuiltinPlugin)``), so the agents that plugin makes run on this pipeline.
    """

    def __init__(self, builtin: object | None = None, *, entry_points: bool = True) -> None:
        self.hooks = HookRuntime()
        self._lifespans: contextlib.AsyncExitStack | None = None  # set while started: the plugins' lifespans
        self._environments: dict[str, Any] = {}  # provide_environment's answer per session, until close()
        if builtin is not None:
            self.hooks.register(builtin(self) if isinstance(builtin, type) else builtin, name="builtin")
        if entry_points:
            self.hooks.load_entry_points(bub=os.environ.get(BUB_PLUGINS_VARIABLE, "").strip().lower() not in OFF)

    def register_plugin(self, plugin: object, name: str | None = None) -> str:
        """Register a plugin above every plugin registered before it; returns its name.

        A name registered again replaces the earlier plugin, so re-running a notebook cell is safe.
        """
        if name is not None and name == "builtin":
            raise PipelineError("The name 'builtin' belongs to bub_nb's own plugin; choose another")
        if name is not None and self.hooks.has_plugin(name):
            self.hooks.unregister(name)
        registered = self.hooks.register(plugin, name)
        if self._lifespans is not None:  # started: a plugin registered since owns its resources from now on
            run_sync(self._enter_lifespans(self._lifespans, only=registered))
        return registered

    def unregister_plugin(self, name: str) -> None:
        """Remove the plugin registered as ``name``."""
        if name == "builtin" or not self.hooks.has_plugin(name):
            known = ", ".join(n for n in self.plugin_names if n != "builtin") or "(none)"
            raise PipelineError(f"No plugin {name!r} to remove; registered plugins: {known}")
        self.hooks.unregister(name)

    def get_plugin(self, name: str) -> object | None:
        """The plugin registered as ``name``; ``None`` when there is none."""
        return self.hooks.get_plugin(name)

    @property
    def plugin_names(self) -> list[str]:
        """Registered plugin names, the one that runs first first."""
        return self.hooks.plugin_names

    # -- the process: lifespans and environments ----------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether :meth:`start` entered the plugins' lifespans and :meth:`close` has not left them yet."""
        return self._lifespans is not None

    async def astart(self) -> None:
        """Enter every plugin's ``provide_lifespan`` (lowest priority first, as Bub enters them); again is a no-op.

        A lifespan that fails to enter leaves those entered before it, and the error goes on."""
        if self._lifespans is not None:
            return
        stack = contextlib.AsyncExitStack()
        try:
            await self._enter_lifespans(stack)
        except BaseException:
            await stack.aclose()
            raise
        self._lifespans = stack

    def start(self) -> None:
        """:meth:`astart` from synchronous code (loading the notebook extension starts the shared pipeline)."""
        run_sync(self.astart())

    async def aclose(self) -> None:
        """Close every session's environment, then leave the lifespans, last entered first; closing twice is a no-op."""
        environments, self._environments = list(self._environments.values()), {}
        for environment in environments:
            await close_environment(environment)
        stack, self._lifespans = self._lifespans, None
        if stack is not None:
            await stack.aclose()

    def close(self) -> None:
        """:meth:`aclose` from synchronous code (unloading the extension, the kernel's exit)."""
        run_sync(self.aclose())

    async def _enter_lifespans(self, stack: contextlib.AsyncExitStack, only: str | None = None) -> None:
        for impl in reversed(self.hooks.implementations("provide_lifespan")):
            if only is None or impl.plugin_name == only:
                await enter_lifespan(invoke_sync(impl, {}), stack, impl.plugin_name)

    async def environment(self, session_id: str, workspace: str | Path | None = None) -> Any:
        """The session's environment from ``provide_environment``, asked once and kept until :meth:`close`;
        ``None`` when no plugin provides one. ``workspace`` is the folder the session works in (the current one)."""
        if session_id in self._environments:
            return self._environments[session_id]
        if not self.hooks.implementations("provide_environment"):
            return None  # nothing to ask, and no folder to look up (the current one may be gone)
        folder = Path(workspace if workspace is not None else Path.cwd()).expanduser().resolve()
        found = await self.hooks.call("provide_environment", session_id=session_id, workspace=folder)
        return self._environments.setdefault(session_id, found)

    def model_options(self, session_id: str, workspace: str | Path | None = None) -> ModelOptions:
        """The session's model choices: every ``provide_model_options`` answer merged (choices in hook order, the
        first current model), as Bub merges them for a channel to present."""
        if not self.hooks.implementations("provide_model_options"):
            return merge_model_options([])
        folder = Path(workspace if workspace is not None else Path.cwd()).expanduser().resolve()
        return merge_model_options(
            self.hooks.call_sync("provide_model_options", session_id=session_id, workspace=folder)
        )

    async def _admit(self, message: Outbound, session_id: str) -> None:
        """Ask ``admit_message``; a ``drop`` raises :class:`NotAdmitted` before anything is loaded or written."""
        for impl in self.hooks.implementations("admit_message"):
            agent = (field_of(message, "meta") or {}).get("agent")
            running = int(getattr(agent, "_running", None) is not None)
            snapshot = TurnSnapshot(session_id, is_running=bool(running), running_count=running)
            decision = await invoke(impl, {"session_id": session_id, "message": message, "turn": snapshot})
            if decision is None:
                continue
            action, reason = admission_of(decision, impl.plugin_name)
            if action == "drop":
                why = f": {reason}" if reason else ""
                raise NotAdmitted(f"Plugin {impl.plugin_name!r} did not admit the message; nothing was written{why}")
            return

    # -- the turn --------------------------------------------------------------------------------

    async def process_inbound(self, message: Outbound, *, on_event: EventSink | None = None) -> TurnResult:
        """Run one turn. Passing ``on_event`` makes it a streaming turn: every event reaches it."""
        result: TurnResult | None = None
        async with contextlib.aclosing(self.inbound_events(message, stream=on_event is not None)) as items:
            async for item in items:
                if isinstance(item, TurnResult):
                    result = item
                else:
                    await _emit(on_event, item)
        assert result is not None, "a turn that ends without raising ends with its result"
        return result

    def process_inbound_sync(self, message: Outbound, *, on_event: EventSink | None = None) -> TurnResult:
        """:meth:`process_inbound` from synchronous code, also inside a running event loop."""
        return run_sync(self.process_inbound(message, on_event=on_event))

    async def inbound_events(
        self, message: Outbound, *, stream: bool = True
    ) -> AsyncGenerator[StreamEvent | TurnResult, None]:
        """Run one turn, yielding its stream events as they arrive (none unless ``stream``), then its result.

        Every turn comes through here: :meth:`process_inbound`, and :class:`~bub_nb.agent.Agent`'s ``run`` and
        ``stream``, which send an envelope of their own. Closing the generator early ends the turn, its
        ``save_state`` still called.
        """
        try:
            resolved = await self.hooks.call("resolve_session", message=message)
            session_id = str(resolved) if resolved else default_session_id(message)
            message = with_session(message, session_id)
            await self._admit(message, session_id)
            state: State = {}
            for contribution in reversed(await self.hooks.call("load_state", message=message, session_id=session_id)):
                state.update(contribution)
            prompt = await self.hooks.call("build_prompt", message=message, session_id=session_id, state=state)
            if not prompt:
                prompt = content_of(message)
            parts: list[str] = []
            fallback: list[str] = []
            model = self._run_model(message, prompt, session_id, state, stream, parts, fallback)
            try:
                async with contextlib.aclosing(model) as events:
                    async for event in events:
                        yield event
            finally:
                await self.hooks.call(
                    "save_state", session_id=session_id, state=state, message=message, model_output="".join(parts)
                )
            output = "".join(fallback or parts)
            outbounds = await self._render(message, session_id, state, output)
            for outbound in outbounds:
                await self.hooks.call("dispatch_outbound", message=outbound)
            yield TurnResult(session_id, prompt, output, tuple(outbounds), state)
        except NotAdmitted:
            raise  # a refusal, not a failure
        except Exception as exc:
            # One line by default; the traceback only for those who asked for debug logging.
            logger.error("Turn failed: %s: %s", type(exc).__name__, exc)
            logger.debug("Turn failed for inbound %r", message, exc_info=True)
            await self.notify_error("turn", exc, message)
            raise

    async def _run_model(
        self,
        message: Outbound,
        prompt: Prompt,
        session_id: str,
        state: State,
        streaming: bool,
        parts: list[str],
        fallback: list[str],
    ) -> AsyncGenerator[StreamEvent, None]:
        """The model stage: its events as they arrive, and its text in ``parts`` (the one place it is kept).

        ``parts`` belongs to the caller so ``save_state`` still sees the text that arrived before a failure;
        ``fallback`` gets the turn's output when no plugin answered (``save_state`` then sees none).
        """
        hook = "run_model_stream" if streaming else "run_model"
        arguments = {"prompt": prompt, "session_id": session_id, "state": state}

        async def answer() -> Any:
            """The first answer of either model hook, as the hook the caller asked for returns it."""
            for impl in self._model_impls(streaming=streaming):
                value = await invoke(impl, arguments)
                if value is None:
                    continue
                if hook_of(impl) == hook:
                    return str(value) if hook == "run_model" else value
                if streaming:
                    return _one_chunk(str(value))
                async with contextlib.aclosing(self._checked(_events(value), message)) as events:
                    async for event in events:
                        parts.append(_text_of(event))
                return "".join(parts)
            return None

        # The wrappers of the hook the caller asked for run around the model stage and may replace its answer.
        value = await self.hooks.around(hook, arguments, answer)
        if value is None:
            names = ", ".join(self.plugin_names) or "(none)"
            error = ModelError(f"No plugin returned model output for session {session_id!r}; plugins: {names}")
            await self.notify_error("run_model", error, message)
            fallback.append(prompt if isinstance(prompt, str) else content_of(message))
            return
        if not streaming:
            parts[:] = [str(value)]
            return
        # Closed however the loop ends (the caller closing us on a KeyboardInterrupt included), so the model's
        # turn ends now, outermost generator first, rather than whenever the event loop gets round to it.
        async with contextlib.aclosing(self._checked(_events(value), message)) as events:
            async for event in events:
                parts.append(_text_of(event))
                yield event

    async def _checked(
        self, events: AsyncGenerator[StreamEvent, None], message: Outbound
    ) -> AsyncGenerator[StreamEvent, None]:
        """``events``, each ``error`` event told to the ``on_error`` observers on its way."""
        async with contextlib.aclosing(events):
            async for event in events:
                if event.kind == "error":
                    kind, text = event.data.get("kind", "error"), event.data.get("message", "")
                    await self.notify_error("run_model", ModelError(f"{kind}: {text}"), message)
                yield event

    def _model_impls(self, *, streaming: bool) -> list[HookImpl]:
        """Implementations of both model hooks in one precedence order (later plugins first).

        A plugin that implements both is asked first through the hook matching the caller's mode.
        """
        order = {name: index for index, name in enumerate(reversed(self.plugin_names))}
        preferred = "run_model_stream" if streaming else "run_model"

        def rank(impl: HookImpl) -> tuple[int, int, int]:
            tier = 2 if impl.tryfirst else 0 if impl.trylast else 1
            return tier, order.get(impl.plugin_name, -1), int(hook_of(impl) == preferred)

        impls = self.hooks.implementations("run_model_stream") + self.hooks.implementations("run_model")
        return sorted(impls, key=rank, reverse=True)

    async def _render(self, message: Outbound, session_id: str, state: State, output: str) -> list[Outbound]:
        batches = await self.hooks.call(
            "render_outbound", message=message, session_id=session_id, state=state, model_output=output
        )
        outbounds: list[Outbound] = []
        for batch in batches:
            if isinstance(batch, Envelope | Mapping):
                outbounds.append(batch)
            else:
                outbounds.extend(batch)
        if outbounds:
            return outbounds
        channel = str(field_of(message, "channel") or "default")
        chat_id = str(field_of(message, "chat_id") or "default")
        return [Envelope(channel, chat_id, output, session_id=session_id)]

    # -- hooks the agent asks while it runs ------------------------------------------------------

    def system_prompt(self, prompt: Prompt, state: State) -> str:
        """Every plugin's part of the system prompt, lowest priority first, joined by blank lines."""
        parts = reversed(self.hooks.call_sync("system_prompt", prompt=prompt, state=state))
        return "\n\n".join(str(part).strip() for part in parts if part and str(part).strip())

    def tape_store(self) -> TapeStore | None:
        """The store the highest-priority plugin provides (a Bub store adapted), or ``None`` when none does."""
        return as_tape_store(self.hooks.call_sync("provide_tape_store"))

    def build_tape_context(self, tape: Tape, mode: Any) -> View:
        """The view for ``tape``: built by a plugin, by a plugin's strategy, or for ``mode`` by default."""
        from bub_nb.context import View, build_view

        answer = self.hooks.call_sync("build_tape_context", tape=tape, mode=mode)
        if isinstance(answer, View):
            return answer
        return build_view(tape, mode if answer is None else answer)

    async def notify_error(self, stage: str, error: Exception, message: Outbound | None) -> None:
        """Tell every ``on_error`` observer; an observer that raises is logged and skipped."""
        await self.hooks.notify("on_error", stage=stage, error=error, message=message)


async def _one_chunk(text: str) -> AsyncIterator[StreamEvent]:
    """A ``run_model`` answer as the stream a streaming caller asked for."""
    yield StreamEvent.text(text)


async def _emit(on_event: EventSink | None, event: StreamEvent) -> None:
    if on_event is not None:
        delivered = on_event(event)
        if inspect.isawaitable(delivered):
            await delivered


def _text_of(event: StreamEvent) -> str:
    return str(event.data.get("delta", "")) if event.kind == "text" else ""


async def _events(stream: Any) -> AsyncGenerator[StreamEvent, None]:
    """A model stage's stream (async or not, of events or of mappings) as stream events."""
    if hasattr(stream, "__aiter__"):
        try:
            async for event in stream:
                yield _as_event(event)
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
    elif isinstance(stream, Iterable):
        for event in stream:
            yield _as_event(event)
    else:
        raise TypeError(f"run_model_stream returned {type(stream).__name__}, not an iterator of stream events")


def _as_event(raw: Any) -> StreamEvent:
    if isinstance(raw, StreamEvent):
        return raw
    kind = field_of(raw, "kind") or field_of(raw, "type")
    data = field_of(raw, "data")
    if not isinstance(kind, str):
        raise TypeError(f"Stream event {raw!r} has no kind")
    return StreamEvent(kind, data if isinstance(data, Mapping) else {})
