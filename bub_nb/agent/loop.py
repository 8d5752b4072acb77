"""The agent loop: context from the tape on every step, the model, tools until it answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from bub_nb.agent.models import Completion, Model, TextDelta, resolve_model
from bub_nb.agent.tools import Tool, ToolCallError, ToolContext, ToolRegistry
from bub_nb.agent.turn import Turn, TurnRecorder
from bub_nb.errors import BubNbError, ContextLengthError, ModelError
from bub_nb.tape import LAST_ANCHOR

if TYPE_CHECKING:
    from bub_nb.agent.pipeline import TurnPipeline
    from bub_nb.context import View
    from bub_nb.tape import Tape

DEFAULT_MAX_STEPS = 8
MAX_AUTO_HANDOFF_RETRIES = 1


class Agent:
    """Runs turns against one tape: ``run`` (a :class:`Turn`), ``stream`` (text deltas) and ``arun``.

    Each step rebuilds the context from the tape through the ``build_tape_context`` hook, so what
    the model sees is always derived from the facts, never kept on the side.
    """

    def __init__(
        self,
        tape: Tape,
        model: str | Model | None = None,
        tools: Iterable[Tool | Callable[..., Any]] | ToolRegistry | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        *,
        context: Any = LAST_ANCHOR,
        instructions: str | None = None,
        builtin_tools: bool | Iterable[str] = True,
        pipeline: TurnPipeline | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        from bub_nb.agent.builtin import default_pipeline
        from bub_nb.agent.builtin_tools import builtin_registry

        if max_steps < 1:
            raise BubNbError(f"max_steps must be at least 1, got {max_steps!r}")
        self.tape = tape
        self.model = resolve_model(model)
        self.max_steps = max_steps
        self.context = context
        self.instructions = instructions
        self.pipeline = pipeline or default_pipeline()
        self.meta = dict(meta or {})
        registry = ToolRegistry()
        if builtin_tools:
            builtins = builtin_registry()
            chosen = builtins if builtin_tools is True else builtins.select(builtin_tools)  # type: ignore[arg-type]
            for item in chosen:
                registry.register(item)
        for item in tools or ():
            registry.register(item)
        self.tools = registry
        self.last_turn: Turn | None = None
        self._active: TurnRecorder | None = None

    def __repr__(self) -> str:
        return f"Agent(tape={self.tape.name!r}, model={self.model.name!r}, tools={len(self.tools)})"

    # -- public entry points ----------------------------------------------------------------------

    async def arun(self, prompt: str, *, stream: bool = False, on_delta: Callable[[str], Any] | None = None) -> Turn:
        """Run one turn; ``on_delta`` receives streamed text as it arrives."""
        async for delta in self._turn(prompt, stream=stream or on_delta is not None):
            if on_delta is not None:
                on_delta(delta)
        assert self.last_turn is not None
        return self.last_turn

    def run(self, prompt: str, *, stream: bool = False, on_delta: Callable[[str], Any] | None = None) -> Turn:
        """Run one turn from synchronous code (also inside Jupyter's running event loop)."""
        try:
            return _run_sync(self.arun(prompt, stream=stream, on_delta=on_delta))
        except KeyboardInterrupt:
            self.abort()
            raise

    async def astream(self, prompt: str) -> AsyncIterator[str]:
        """Yield text deltas as they arrive; the finished turn is then ``self.last_turn``."""
        async for delta in self._turn(prompt, stream=True):
            yield delta

    def stream(self, prompt: str) -> Iterator[str]:
        """Yield text deltas from synchronous code; the finished turn is then ``self.last_turn``."""
        try:
            yield from _iterate_sync(self._turn(prompt, stream=True))
        except KeyboardInterrupt:
            self.abort()
            raise

    def abort(self) -> Turn | None:
        """Record the running turn as interrupted (its partial answer kept); ``None`` if none runs."""
        recorder, self._active = self._active, None
        if recorder is not None:
            self.last_turn = recorder.interrupt()
        return self.last_turn if recorder is not None else None

    def view(self) -> View:
        """The view the next step would send (without the system prompt)."""
        return self.pipeline.build_tape_context(self.tape, self.context)

    def system_prompt(self, prompt: str = "") -> str:
        state = {"tape": self.tape, "agent": self, "instructions": self.instructions, "tools": self.tools}
        return self.pipeline.system_prompt(prompt, state)

    # -- the loop ---------------------------------------------------------------------------------

    async def _turn(self, prompt: str, *, stream: bool) -> AsyncIterator[str]:
        from bub_nb.agent.commands import is_command, run_command

        if not isinstance(prompt, str) or not prompt.strip():
            raise BubNbError(f"Prompt {prompt!r} is empty; write something for the model to answer")
        self.tape.ensure_bootstrap_anchor()
        if is_command(prompt):
            self.last_turn = run_command_turn(self.tape, prompt, run_command, self.meta)
            yield self.last_turn.text
            return
        self.tape.memory.ensure()
        recorder = self._active = TurnRecorder(self.tape, self.model.name, self.meta)
        recorder.start(self.system_prompt(prompt), prompt)
        try:
            async for delta in self._steps(recorder, prompt, stream):
                if recorder.finished is not None and recorder.finished.status == "interrupted":
                    return  # aborted from outside while the stream was still arriving
                yield delta
        except (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit):
            self.last_turn = recorder.interrupt()
            raise
        except BubNbError as exc:
            if recorder.finished is None:
                recorder.error(_error_kind(exc), str(exc))
                partial = bool(recorder.partial)
                self.last_turn = recorder.finish("error", recorder.partial, error=str(exc), partial=partial)
            exc.turn = self.last_turn  # type: ignore[attr-defined]
            raise
        finally:
            if self._active is recorder:
                self._active = None

    async def _steps(self, recorder: TurnRecorder, prompt: str, stream: bool) -> AsyncIterator[str]:
        retries = MAX_AUTO_HANDOFF_RETRIES
        tools = self.tools.schemas() or None
        step = 0
        while step < self.max_steps:
            view = self.pipeline.build_tape_context(self.tape, self.context)
            recorder.last_view = view
            messages = [{"role": "system", "content": recorder.entries[0].payload["content"]}, *view.messages]
            recorder.partial = ""
            try:
                completion = None
                async for item in self._call_model(messages, tools, stream):
                    if isinstance(item, TextDelta):
                        recorder.partial += item.text
                        yield item.text
                    else:
                        completion = item
            except ContextLengthError as exc:
                if retries <= 0 or recorder.partial:
                    raise
                retries -= 1
                recorder.error("context_length_exceeded", str(exc))
                recorder.auto_handoff(exc, step)
                recorder.resend_prompt(prompt)
                continue
            assert completion is not None
            step += 1
            recorder.steps = step
            recorder.add_usage(completion.usage)
            if not completion.tool_calls:
                self.last_turn = recorder.finish("ok", completion.text)
                return
            results = await self._run_tools(completion)
            recorder.tool_step(completion, results)
            recorder.tool_errors(completion.tool_calls, results)
            if completion.text and stream:
                yield "\n\n"
        message = f"Stopped after {self.max_steps} steps without a final answer (max_steps={self.max_steps})"
        recorder.error("max_steps", message)
        self.last_turn = recorder.finish("max_steps", message)
        yield message

    async def _call_model(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, stream: bool
    ) -> AsyncIterator[TextDelta | Completion]:
        if stream:
            async for item in self.model.stream(messages, tools):
                yield item
        else:
            yield await self.model.complete(messages, tools)

    async def _run_tools(self, completion: Completion) -> list[Any]:
        context = ToolContext(tape=self.tape, state={"agent": self})
        results: list[Any] = []
        for call in completion.tool_calls:
            try:
                result = await self.tools.call(call.name, call.arguments, context)
            except ToolCallError as exc:
                result = exc.as_result()
            results.append(result if isinstance(result, str | dict | list | int | float | bool) else str(result))
        return results


def run_command_turn(tape: Tape, prompt: str, run: Callable[..., Any], meta: dict[str, Any]) -> Turn:
    """A comma command as a turn: it never reaches the model."""
    result = run(tape, prompt)
    entries = tuple(getattr(result, "entries", ()) or ())
    return Turn(result.output, entries, None, "command", "command", "", 0.0)


def _error_kind(exc: BaseException) -> str:
    if isinstance(exc, ContextLengthError):
        return "context_length_exceeded"
    if isinstance(exc, ModelError):
        return "model_error"
    return type(exc).__name__


def _run_sync(coroutine: Any) -> Any:
    from bub_nb.agent.pipeline import run_sync

    return run_sync(coroutine)


def _iterate_sync(agen: AsyncIterator[str]) -> Iterator[str]:
    """Step an async generator from synchronous code, inside a running loop or not."""
    try:
        loop = asyncio.get_running_loop()
        owned = False
    except RuntimeError:
        loop = asyncio.new_event_loop()
        owned = True
    else:
        import nest_asyncio

        nest_asyncio.apply(loop)
    try:
        while True:
            try:
                yield loop.run_until_complete(agen.__anext__())  # type: ignore[attr-defined]
            except StopAsyncIteration:
                return
    finally:
        if owned:
            loop.run_until_complete(agen.aclose())  # type: ignore[attr-defined]
            loop.close()
