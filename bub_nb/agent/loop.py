"""The agent loop: context from the tape on every step, the model, tools until it answers, and a context overflow
beyond seed 000's one auto-handoff (bound the ``phases`` chain, never hand off again for nothing, and name the mode
when it is the cause)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from bub_nb.agent.commands import is_command, run_command
from bub_nb.agent.eventloop import Closing, closed, next_item, once, run_sync
from bub_nb.agent.hooks.interception import (
    LlmCallRequest,
    LlmCallResult,
    ToolCallResult,
    before_llm_call,
    before_tool_call,
    observe,
)
from bub_nb.agent.hooks.interception import ToolCall as HookToolCall
from bub_nb.agent.hooks.session import ENVIRONMENT_STATE_KEY
from bub_nb.agent.hooks.specs import Envelope, StreamEvent, default_session_id
from bub_nb.agent.mcp.servers import mcp_servers_of, offer_mcp_tools
from bub_nb.agent.models import Completion, Model, TextDelta, resolve_model
from bub_nb.agent.models.base import context_window_of
from bub_nb.agent.models.embeddings import embedding_ranker, embedding_setting, ranked_by
from bub_nb.agent.phase_handoff import (
    AUTO_HANDOFF_ANCHOR,
    HandoffPreview,
    overflow_room,
    overflow_summary,
    preview_handoff,
    write_handoff,
)
from bub_nb.agent.preflight import check_recorded_prompt_fits, check_turn, request_preview
from bub_nb.agent.registry import default_pipeline
from bub_nb.agent.results import DEFAULT_RESULT_TOKENS, check_result_budget, fit_result
from bub_nb.agent.state import TurnState
from bub_nb.agent.tools import Tool, ToolCallError, ToolContext, ToolRegistry, agent_registry
from bub_nb.agent.turn import RunningTurn, Turn, TurnRecorder
from bub_nb.context.messages import result_text
from bub_nb.context.phases import EARLIER_PHASE, Phases
from bub_nb.context.tokens import count_message_tokens, count_messages_tokens
from bub_nb.context.view import as_strategy
from bub_nb.errors import BubNbError, ContextLengthError, ModelError, PipelineError
from bub_nb.memory.cache import memory_of
from bub_nb.tape import LAST_ANCHOR, Tape
from bub_nb.tape.names import agent_tape_name

if TYPE_CHECKING:
    from bub_nb.agent.framework import TurnPipeline
    from bub_nb.context import View
    from bub_nb.memory import MemorySnapshot
    from bub_nb.tape import AnchorSummary, TapeEntry

DEFAULT_MAX_STEPS = 8
MAX_AUTO_HANDOFF_RETRIES = 1


HANDOFF_AT_ANCHOR = "auto_handoff/handoff_at"
"""The anchor written before a turn whose request would pass ``handoff_at`` of the window."""


class Agent:
    """Runs turns against one tape: ``run`` (a :class:`Turn`), ``stream`` (text deltas) and ``arun``.

    Each step rebuilds the context from the tape through the ``build_tape_context`` hook, so what
    the model sees is always derived from the facts, never kept on the side. An agent runs one turn
    at a time: starting another aborts the one still running. With a ``budget`` a turn whose first
    request is estimated over that many tokens is refused before anything is written. Every tool
    result is redacted and cut to ``result_budget`` tokens (``None``: not cut), saying so when cut. With a
    ``name`` it is that agent of the notebook whose tape is ``tape``, and works on its own tape, ``<tape>~<name>``;
    ``mcp`` (an :class:`~bub_nb.agent.mcp.McpServers`, an ``mcpServers`` mapping or a ``.mcp.json``) adds MCP tools.
    ``embedding_model`` (a name, else ``$BUB_NB_EMBEDDING_MODEL``; or a ranker) ranks a recall mode's entries by
    embeddings from the model's endpoint instead of BM25; ``""`` keeps BM25.
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
        budget: int | None = None,
        result_budget: int | None = DEFAULT_RESULT_TOKENS,
        name: str | None = None,
        mcp: Any = None,
        handoff_at: float | None = None,
        embedding_model: Any = None,
    ) -> None:
        if type(max_steps) is not int or max_steps < 1:
            raise BubNbError(f"max_steps must be a whole number of at least 1, got {max_steps!r}")
        if budget is not None and (type(budget) is not int or budget < 1):
            raise BubNbError(f"budget must be a whole number of tokens, at least 1, got {budget!r}")
        self.tape = tape if name is None else Tape(agent_tape_name(tape.name, name), tape.base_store)
        self.model = resolve_model(model)
        self.max_steps = max_steps
        self.embedding_model = embedding_setting() if embedding_model is None else embedding_model
        self.context = ranked_by(context, embedding_ranker(self.embedding_model, self.model))
        self.instructions = instructions
        self.pipeline = pipeline if pipeline is not None else default_pipeline()
        self.meta = dict(meta or {})
        self.budget = budget
        self.result_budget = check_result_budget(result_budget)
        if handoff_at is not None and (isinstance(handoff_at, bool) or not 0 < handoff_at <= 1):
            raise BubNbError(f"handoff_at must be a share of the model's window, above 0 and at most 1: {handoff_at!r}")
        self.handoff_at = handoff_at
        self.tools = agent_registry(tools, builtin_tools)
        self.mcp = mcp_servers_of(mcp)  # MCP servers whose tools join on the first turn, started then
        self.name = name
        self.team: Any = None  # the Team it belongs to, set by the team: hands the conversation to others
        self.chat_id: str | None = None  # the chat its envelopes name (the notebook's, in one); else its tape's name
        self.last_turn: Turn | None = None
        self._running: RunningTurn | None = None
        self._handing_off: tuple[str, asyncio.Task[Any] | None] | None = None  # a prompt waiting on its handoff

    def __repr__(self) -> str:
        return f"Agent({f'name={self.name!r}, ' * bool(self.name)}tape={self.tape.name!r}, model={self.model.name!r})"

    # -- public entry points ----------------------------------------------------------------------

    async def arun(
        self,
        prompt: str,
        *,
        stream: bool = False,
        on_delta: Callable[[str], Any] | None = None,
        commands: bool = True,
    ) -> Turn:
        """Run one turn through the pipeline's stages; ``on_delta`` receives streamed text as it arrives.

        A prompt starting with ``,`` runs as a command unless ``commands=False``: text a program made (a value
        filled into a cell) is a prompt to the model, whatever it starts with.

        If ``on_delta`` raises (a ``KeyboardInterrupt`` from a display, say) the turn is recorded as
        interrupted, its partial answer kept, and the exception goes on. After :meth:`abort` the
        interrupted turn is returned.
        """
        streaming = stream or on_delta is not None
        async with contextlib.aclosing(self._inbound(prompt, stream=streaming, commands=commands)) as deltas:
            async for delta in deltas:
                if on_delta is not None:
                    on_delta(delta)
        assert self.last_turn is not None
        return self.last_turn

    def run(
        self,
        prompt: str,
        *,
        stream: bool = False,
        on_delta: Callable[[str], Any] | None = None,
        commands: bool = True,
    ) -> Turn:
        """Run one turn from synchronous code (also inside Jupyter's running event loop)."""
        try:
            return run_sync(self.arun(prompt, stream=stream, on_delta=on_delta, commands=commands))
        except KeyboardInterrupt:
            self.abort()
            raise

    def astream(self, prompt: str, *, commands: bool = True) -> AsyncGenerator[str, None]:
        """Yield text deltas as they arrive; the finished turn is then ``self.last_turn``."""
        return self._inbound(prompt, stream=True, commands=commands)

    def stream(self, prompt: str) -> Iterator[str]:
        """Yield text deltas from synchronous code; the finished turn is then ``self.last_turn``."""
        deltas = self._inbound(prompt, stream=True)
        try:
            while True:
                try:
                    delta = run_sync(next_item(deltas))
                except StopAsyncIteration:
                    return
                yield delta
        except KeyboardInterrupt:
            self.abort()
            raise
        finally:
            if getattr(deltas, "ag_frame", None) is not None:  # unless closed already: by a loop shut at exit
                run_sync(closed(deltas))

    def envelope(self, prompt: str, *, commands: bool = True) -> Envelope:
        """The inbound envelope a turn of this agent sends through its pipeline: channel ``meta["source"]``
        (``python`` when none), chat ``chat_id`` (its tape's name when unset), and this agent in its ``meta``;
        ``commands=False`` when a program made the prompt, so that a leading ``,`` stays text."""
        channel = str(self.meta.get("source") or "python")
        meta = {"tape": self.tape, "agent": self, "instructions": self.instructions, "commands": commands}
        return Envelope(channel, self.chat_id or self.tape.name, prompt, meta=meta)

    async def _inbound(self, prompt: str, *, stream: bool, commands: bool = True) -> AsyncGenerator[str, None]:
        """A turn as the pipeline runs it (the builtin plugin's model stage is :meth:`model_stage`): its text."""
        ran = False
        envelope = self.envelope(prompt, commands=commands)
        async with contextlib.aclosing(self.pipeline.inbound_events(envelope, stream=stream)) as events:
            async for event in events:
                if isinstance(event, StreamEvent):
                    if event.kind == "text":
                        yield str(event.data.get("delta", ""))
                else:
                    ran = "turn" in event.state
        if not ran:
            names = ", ".join(self.pipeline.plugin_names)
            raise PipelineError(f"A plugin answered the turn on tape {self.tape.name!r} instead of the agent ({names})")

    def abort(self) -> Turn | None:
        """Stop the running turn now, recorded as interrupted with its partial answer kept; nothing more is written
        for it and its task is cancelled (an arun then returns that Turn). A turn whose handoff before it is being
        summarized stops too, its prompt kept. ``None`` when no turn runs."""
        running, self._running = self._running, None
        if running is None:
            return self._abort_handoff_before()
        self.last_turn = running.abort()
        return self.last_turn

    def _abort_handoff_before(self) -> Turn | None:
        """Stop a turn whose handoff before it is being summarized: recorded now as any interrupted turn is, its
        prompt kept and no answer, saying that nothing of the handoff was written (it is one append, after its
        summary). ``None`` when no turn waits on such a handoff."""
        handing_off, self._handing_off = self._handing_off, None
        if handing_off is None:
            return None
        prompt, task = handing_off
        memory = memory_of(self.tape, ensure=True)
        recorder = TurnRecorder(self.tape, self.model.name, self.meta, memory_version=memory.version or None)
        recorder.start(self.system_prompt(prompt, memory), prompt)
        said = (
            f"The summarizing handoff ({HANDOFF_AT_ANCHOR}) before this turn was interrupted: nothing of it was "
            "written and the prompt was not sent; the next turn tries the handoff again"
        )
        recorder.error("handoff.interrupted", said)
        recorder.notice(said)
        self.last_turn = RunningTurn(recorder, task).abort()
        return self.last_turn

    async def ahandoff(self, name: str, /, *, summarize: bool = False, **state: Any) -> list[TapeEntry]:
        """Write the anchor ``name`` carrying ``state``; with ``summarize`` the model first summarizes the phase. The
        summary cites the phase's entries (``[#12]``) and goes in the state with ``next_steps``, ``sources``,
        ``range``, ``summarized_by``, ``uncited`` and ``removed_citations``; ``state`` wins over those keys. A
        summary that fails writes nothing. Returns the entries written."""
        return await write_handoff(self.tape, self.model, name, state, summarize=summarize, meta=self.meta)

    def handoff(self, name: str, /, *, summarize: bool = False, **state: Any) -> list[TapeEntry]:
        return run_sync(self.ahandoff(name, summarize=summarize, **state))  # ahandoff from synchronous code

    def preview_handoff(self, name: str, /, *, summarize: bool = True, **state: Any) -> HandoffPreview:
        """What :meth:`handoff` would write (summarized unless ``summarize=False``); nothing until ``accept()``."""
        meta, view = self.meta, self.view
        return run_sync(preview_handoff(self.tape, self.model, name, state, summarize=summarize, meta=meta, view=view))

    def check(self, prompt: str, *, commands: bool = True) -> None:
        """Refuse a turn that could not be recorded truthfully, before anything is written (a ``BubNbError``)."""
        if self.team is not None:  # an agent that handed the conversation away waits until it is handed back
            self.team.check_may_run(self.name or "main")
        check_turn(self, prompt, commands=commands)

    def view(self, prompt: str | None = None) -> View:
        """What the next step sends, less the system prompt; with ``prompt``, what a turn with that prompt would
        send (the prompt last, and in a recall mode the earlier entries recalled for it), writing nothing."""
        if prompt is None:
            return self.pipeline.build_tape_context(self.tape, self.context)
        with self.tape.fork(merge_back=False):  # the prompt goes on as the turn would write it, then is dropped
            self.tape.ensure_bootstrap_anchor()
            self.tape.append_message({"role": "user", "content": prompt})
            return self.pipeline.build_tape_context(self.tape, self.context)

    def system_prompt(self, prompt: str = "", memory: MemorySnapshot | None = None) -> str:
        """The system prompt the next turn would send (writing nothing); ``memory`` saves reading the zone."""
        state: TurnState = {"tape": self.tape, "agent": self, "instructions": self.instructions, "tools": self.tools}
        state["memory"] = memory if memory is not None else memory_of(self.tape, ensure=False)
        return self.pipeline.system_prompt(prompt, dict(state))

    # -- the loop ---------------------------------------------------------------------------------

    async def model_stage(self, prompt: str, *, stream: bool, commands: bool = True) -> AsyncGenerator[str, None]:
        """The agent loop, as the builtin plugin's model stage runs it: its text as it arrives, the finished turn
        then ``self.last_turn``. Run a turn with :meth:`run` or :meth:`stream`, which pass every stage."""
        self.check(prompt, commands=commands)
        self.abort()
        self.tape.ensure_bootstrap_anchor()
        if commands and is_command(prompt):
            started = time.perf_counter()
            result = run_command(self.tape, prompt, meta=self.meta, state={"agent": self})
            elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
            self.last_turn = Turn.command(result.output, result.entries, elapsed_ms)
            yield self.last_turn.text
            return
        early = await self._handoff_before(prompt)
        if early is None:
            return  # abort() stopped the turn during its handoff, and recorded it
        memory = memory_of(self.tape, ensure=True)
        recorder = TurnRecorder(self.tape, self.model.name, self.meta, memory_version=memory.version or None)
        recorder.notices += early
        recorder.notices += offer_mcp_tools(self.mcp, self.tools)  # a server that cannot start: one line, no tools
        running = self._running = RunningTurn(recorder, asyncio.current_task())
        try:
            recorder.start(self.system_prompt(prompt, memory), prompt)
            async with contextlib.aclosing(self._steps(recorder, prompt, stream)) as deltas:
                async for delta in deltas:
                    yield delta
                    running.resumed(asyncio.current_task())
                    if recorder.closed:
                        return  # aborted while the caller held the delta
        except asyncio.CancelledError:
            recorder.interrupt()
            task = asyncio.current_task()
            # abort() cancelled us to stop waiting on the model: that ends the turn, not the caller's task.
            if not (running.aborted and task is not None and task.uncancel() == 0):
                raise
        except (KeyboardInterrupt, GeneratorExit):
            recorder.interrupt()
            raise
        except Exception as exc:
            recorder.fail(exc)
            if isinstance(exc, BubNbError):
                exc.turn = recorder.finished
            raise
        finally:
            running.end()
            self.last_turn = recorder.finished or self.last_turn
            if self._running is running:
                self._running = None

    async def _handoff_before(self, prompt: str) -> list[str] | None:
        """With ``handoff_at``: a summarizing handoff written before a turn whose request would take more than that
        share of the model's window, and the line that says so (the overflow retry stays the last resort); ``None``
        when abort() stopped the turn meanwhile."""
        window = context_window_of(self.model)
        if self.handoff_at is None or window is None:
            return []
        if not any(True for _ in self.tape.from_last_anchor(kinds=("message",))):
            return []  # nothing since the last handoff: another one would not make the request smaller
        used = request_preview(self, prompt).window_tokens
        if used <= self.handoff_at * window:
            return []
        # An interrupt lands in the kernel between the loop's steps, before this task hears of it: abort() then
        # records the turn at once, from what is kept here, so nothing of it is written later in another cell.
        self._handing_off = (prompt, asyncio.current_task())
        try:
            await self.ahandoff(HANDOFF_AT_ANCHOR, summarize=True)
        except (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit) as stop:
            aborted = self._handing_off is None
            self._abort_handoff_before()  # the interrupt reached this task first: recorded here, once
            task = asyncio.current_task()
            # abort() cancelled us to stop waiting on the summary: that ends the turn, not the caller's task.
            if isinstance(stop, asyncio.CancelledError) and aborted and task is not None and task.uncancel() == 0:
                return None
            raise
        finally:
            self._handing_off = None
        return [
            f"A summarizing handoff ({HANDOFF_AT_ANCHOR}) was written before this turn: its request would have taken "
            f"{used:,} of the window's {window:,} tokens, over handoff_at={self.handoff_at:g}"
        ]

    async def _steps(self, recorder: TurnRecorder, prompt: str, stream: bool) -> AsyncGenerator[str, None]:
        tools = self.tools.schemas() or None
        overflows = MAX_AUTO_HANDOFF_RETRIES
        streamed = False
        context = self.context
        step_prompt: str | None = prompt  # the prompt the step just run was given, as Bub's continue_prompt sees it
        while recorder.steps < self.max_steps:
            view = self.pipeline.build_tape_context(self.tape, context)
            messages = recorder.begin_step(view)
            if bound := narrowed_phases(context, self.model, recorder, view, messages):  # known not to fit
                context = bound
                continue
            completion: Completion | None = None
            try:
                async with Closing(self._ask_hooked(recorder, messages, tools, stream)) as answer:
                    async for item in answer:
                        if recorder.closed:
                            return
                        if isinstance(item, TextDelta):
                            if streamed and not recorder.partial:
                                yield "\n\n"  # text from an earlier step came before this step's text
                            recorder.add_text(item.text)
                            streamed = True
                            yield item.text
                        else:
                            completion = item
            except ContextLengthError as exc:
                if recorder.partial:
                    raise
                check_recorded_prompt_fits(self, prompt, recorder.prompt_id)  # no new phase helps a prompt too long
                if bound := narrowed_phases(context, self.model, recorder, view):  # bounding it writes nothing
                    context = bound
                    continue
                overflows = hopeless_overflow(exc, context, view, self.tape, overflows)  # or one retry fewer
                room = overflow_room(self.model, recorder.system_prompt, prompt, exc, count_messages_tokens(messages))
                summary = await overflow_summary(self.model, self.tape, room)
                recorder.auto_handoff(exc, recorder.steps + 1, prompt, left_view=len(view.entry_ids), summary=summary)
                continue
            if recorder.closed:
                return
            if completion is None:
                raise ModelError(f"Model {self.model.name!r} ended its answer without a completion")
            recorder.end_step(completion)
            if not completion.tool_calls:
                recorder.finish("ok", completion.text)
                return
            await self._run_tools(recorder, completion)
            if recorder.closed:
                return
            step_prompt = await self._continue_prompt(recorder, step_prompt)
        message = f"Stopped after {self.max_steps} model calls without a final answer (max_steps={self.max_steps}); "
        message += "the tool calls so far are on the tape"
        recorder.error("max_steps", message, {"max_steps": self.max_steps})
        recorder.finish("max_steps", message, error=message, answer=False)
        yield ("\n\n" if streamed else "") + message

    async def _continue_prompt(self, recorder: TurnRecorder, prompt: str | None) -> str | None:
        """Bub's ``continue_prompt``, asked as the loop goes on after a step's tool calls with the prompt that step
        was given (``None`` after a step given none): the first answer is the turn's next user message, on the tape
        before the next model call, and the prompt the next step is given; an answer that is not text is refused."""
        if not self.pipeline.hooks.implementations("continue_prompt"):
            return None
        state = {"agent": self, "tape": self.tape, "run_id": recorder.run_id}
        follow_up = await self.pipeline.hooks.call("continue_prompt", prompt=prompt, tape=self.tape, state=state)
        if follow_up is None:
            return None
        if not isinstance(follow_up, str):
            raise PipelineError(f"continue_prompt answered {type(follow_up).__name__}; it answers a str or None")
        if follow_up.strip():
            recorder.add_message({"role": "user", "content": follow_up})
        return follow_up

    def _ask(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, stream: bool
    ) -> AsyncIterator[TextDelta | Completion]:
        if stream:
            return self.model.stream(messages, tools)
        return once(self.model.complete(messages, tools))

    async def _ask_hooked(
        self, recorder: TurnRecorder, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, stream: bool
    ) -> AsyncGenerator[TextDelta | Completion, None]:
        """:meth:`_ask` between Bub's ``before_llm_call`` (which may change the messages, or answer instead of the
        model) and ``after_llm_call``, as Bub's agent loop calls them."""
        hooks = self.pipeline.hooks
        names = tuple(str(tool["function"]["name"]) for tool in tools or ())
        asked = LlmCallRequest(run_id=recorder.run_id, model=self.model.name, messages=messages, tool_names=names)
        state = {"agent": self, "tape": self.tape, "run_id": recorder.run_id}
        request, finished = await before_llm_call(hooks, asked, state)
        if finished is not None:
            yield Completion(finished, model=self.model.name)
            return
        started = time.perf_counter()
        completion: Completion | None = None
        try:
            async with Closing(self._ask(request.messages, tools, stream)) as answer:
                async for item in answer:
                    completion = item if isinstance(item, Completion) else completion
                    yield item
        except Exception as exc:
            failed = LlmCallResult(request.run_id, error=exc, duration_ms=_since(started))
            await observe(hooks, "after_llm_call", request=request, result=failed, state=state)
            raise
        if completion is not None:
            result = LlmCallResult(
                request.run_id,
                text=completion.text,
                tool_calls=[call.to_openai() for call in completion.tool_calls],
                usage=dataclasses.asdict(completion.usage) if completion.usage is not None else None,
                duration_ms=_since(started),
            )
            await observe(hooks, "after_llm_call", request=request, result=result, state=state)

    async def _run_tools(self, recorder: TurnRecorder, completion: Completion) -> None:
        """Run every call; unknown tools, bad arguments and exceptions become error results for the model."""
        state: dict[str, Any] = {"agent": self, "run_id": recorder.run_id}
        environment = await self.pipeline.environment(default_session_id(self.envelope("")))
        if environment is not None:  # Bub's tools look for it under its key, a notebook's under "environment"
            state["environment"] = state[ENVIRONMENT_STATE_KEY] = environment
        context = ToolContext(tape=self.tape, state=state)
        before = self.tape.last_id
        recorder.tools_started(completion, self.tools.origins(call.name for call in completion.tool_calls))
        for call in completion.tool_calls:
            try:
                output = await self._call_tool_hooked(recorder, call, context)
            except ToolCallError as exc:
                recorder.tool_returned({**exc.as_result(), "message": fit_result(exc.message, self.result_budget)}, exc)
            else:
                recorder.tool_returned(fit_result(result_text(output), self.result_budget))
            if recorder.closed:
                return
        recorder.tools_wrote(before)  # a handoff, a memory zone; after a reset the turn goes on on the new tape
        recorder.tools_finished()

    async def _call_tool_hooked(self, recorder: TurnRecorder, call: Any, context: ToolContext) -> Any:
        """One tool call between Bub's ``before_tool_call`` (proceed with other arguments, replace or deny) and
        ``after_tool_call`` (which sees every outcome and may replace the result), as Bub's agent loop calls them."""
        hooks = self.pipeline.hooks
        state = {"agent": self, "tape": self.tape, "run_id": recorder.run_id}
        arguments = _arguments_of(call.arguments)
        asked, decision = await before_tool_call(
            hooks, HookToolCall(recorder.run_id, call.name, arguments, context), state
        )
        outcome = ToolCallResult(recorder.run_id, call.name, asked.arguments)
        started = time.perf_counter()
        try:
            if decision is not None and decision.action == "deny":
                raise ToolCallError(call.name, "denied", str(decision.message or "denied by a plugin"))
            if decision is not None:
                outcome.result = decision.result
            else:
                changed = asked.arguments != arguments  # unchanged, the model's own text is checked as it was sent
                outcome.result = await self.tools.call(
                    call.name, asked.arguments if changed else call.arguments, context
                )
        except Exception as exc:
            outcome.error, outcome.duration_ms = exc, _since(started)
            await observe(hooks, "after_tool_call", call=asked, result=outcome, state=state)
            raise
        outcome.duration_ms = _since(started)
        await observe(hooks, "after_tool_call", call=asked, result=outcome, state=state)
        return outcome.result


def _since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def _arguments_of(raw: str) -> dict[str, Any]:
    """A call's arguments as the hooks see them: the JSON object the model sent, else an empty one."""
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def phases_mode(context: Any) -> Phases | None:
    """The ``phases`` strategy ``context`` stands for, else ``None``."""
    try:
        strategy = as_strategy(context)
    except BubNbError:
        return None
    return strategy if isinstance(strategy, Phases) else None


def chain_tokens(view: View) -> tuple[int, int]:
    """How many earlier phases the view sends before the current one, and their tokens."""
    tokens = [
        count
        for message, count in zip(view.messages, view.tokens, strict=True)
        if message.get("role") == "assistant" and str(message.get("content") or "").startswith(EARLIER_PHASE)
    ]
    return len(tokens), sum(tokens)


def bounded_phases(context: Any, model: Model, system_prompt: str, view: View) -> Phases | None:
    """The ``phases`` mode with its chain of earlier phases bounded so the request fits, or ``None``.

    ``None`` when the mode is not ``phases``, already bounded, or sends no earlier phase. The bound is what the
    window leaves after the system prompt, the current phase and a quarter for the answer; without a known
    window, half the chain's tokens.
    """
    mode = phases_mode(context)
    count, tokens = chain_tokens(view)
    if mode is None or mode.max_tokens is not None or count == 0:
        return None
    window = context_window_of(model)
    if window is None:
        return Phases(max_tokens=tokens // 2)
    system = count_message_tokens({"role": "system", "content": system_prompt})
    current = view.total_tokens - tokens
    room = max(0, window - max(window // 4, 16) - system - current)
    return Phases(max_tokens=room) if room < tokens else None  # a chain that fits is not the cause


def overflowing_phases(
    context: Any, model: Model, system_prompt: str, view: View, messages: list[dict[str, Any]]
) -> Phases | None:
    """:func:`bounded_phases` when the model's window is known and the request is estimated over it, else ``None``."""
    window = context_window_of(model)
    if window is None or phases_mode(context) is None or count_messages_tokens(messages) <= window:
        return None
    return bounded_phases(context, model, system_prompt, view)


def bounded_notice(view: View, bound: Phases) -> str:
    count, tokens = chain_tokens(view)
    return (
        f"The request did not fit the model's context in 'phases' mode: its {count} earlier phases (≈ {tokens} "
        f"tokens) were bounded to ≈ {bound.max_tokens} tokens, the oldest left out of the view (they stay on "
        "the tape); no handoff was written"
    )


def repeated_overflow(tape: Tape) -> AnchorSummary | None:
    """The auto-handoff anchor the current phase starts at when nothing was answered since (a retry that failed):
    another one would only add a phase, so none is written."""
    anchor = tape.last_anchor()
    if anchor is None or anchor.name != AUTO_HANDOFF_ANCHOR:
        return None
    answered = any(entry.payload.get("role") == "assistant" for entry in tape.read(anchor.id, kinds=("message",)))
    return None if answered else anchor


def overflow_error(exc: ContextLengthError, context: Any, view: View, anchor: AnchorSummary | None = None) -> Exception:
    """The overflow a turn ends with, naming what caused it: the mode's chain, or an auto-handoff already tried."""
    reasons = []
    count, tokens = chain_tokens(view)
    if phases_mode(context) is not None and count:
        reasons.append(
            f"in 'phases' mode the view sends {count} earlier phases (≈ {tokens} tokens) before the current "
            "one: use --context last, hand off less often, or use a model with a larger window"
        )
    if anchor is not None:
        reasons.append(f"the phase already starts at anchor {anchor.name} #{anchor.id}, so no new handoff was written")
    if not reasons:
        return exc
    return ContextLengthError(f"{exc}; {'; '.join(reasons)}")


def narrowed_phases(
    context: Any, model: Model, recorder: TurnRecorder, view: View, messages: list[dict[str, Any]] | None = None
) -> Phases | None:
    """The bounded ``phases`` mode to retry with, its notice given to ``recorder``; ``None`` when bounding cannot
    help. With ``messages`` (the request about to be sent) only when the window is known and they are over it."""
    if messages is None:
        bound = bounded_phases(context, model, recorder.system_prompt, view)
    else:
        bound = overflowing_phases(context, model, recorder.system_prompt, view, messages)
    if bound is not None:
        recorder.notice(bounded_notice(view, bound))
    return bound


def hopeless_overflow(exc: ContextLengthError, context: Any, view: View, tape: Tape, retries: int) -> int:
    """The retries left after this one; raises the overflow, its cause named, when none is left or the phase
    already starts at an auto-handoff nothing answered since (another would only add a phase)."""
    again = repeated_overflow(tape) if retries else None
    if retries == 0 or again is not None:
        raise overflow_error(exc, context, view, again) from exc
    return retries - 1
