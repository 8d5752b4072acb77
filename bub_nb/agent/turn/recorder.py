"""Recording a turn on its tape as it happens, in the order docs/concepts.md#turn gives, and the running turn an
abort stops from anywhere (another thread, a Ctrl-C)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from textwrap import shorten
from typing import TYPE_CHECKING, Any

from bub_nb.agent.models.base import Completion, Usage
from bub_nb.agent.phase_handoff import AUTO_HANDOFF_ANCHOR, overflow_state, overflow_summary_state
from bub_nb.agent.tools import ToolCallError
from bub_nb.agent.turn.outcome import Turn, error_kind
from bub_nb.context.tokens import count_message_tokens
from bub_nb.tape import TapeEntry
from bub_nb.tape.events import LOOP_STEP, RUN, SUMMARY, RecordedView, handoff_entries

if TYPE_CHECKING:
    from bub_nb.agent.summaries.summarize import Summary
    from bub_nb.context import View
    from bub_nb.tape import Tape


@dataclass
class TurnRecorder:
    """Writes a turn to its tape as it happens, so an error or an interrupt never loses the prompt.

    Order on the tape: ``system``, the user message, ``tool_call``/``tool_result`` pairs (each
    followed by an ``error`` per failed call), ``error`` (if the turn failed), the assistant message
    (``meta.partial`` when cut short), a ``run`` event. Once the run event is written the turn is
    closed: whatever a late stream or an abandoned task still delivers is not written.

    The loop tells it what happens (:meth:`start`, :meth:`begin_step`, :meth:`add_text`,
    :meth:`end_step`, :meth:`tools_started`, :meth:`tool_returned`, :meth:`tools_finished`,
    :meth:`finish`...); the fields after ``memory_version`` are its own, for reading only.
    """

    tape: Tape
    model: str
    meta: dict[str, Any] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    memory_version: int | None = None
    started: float = field(default_factory=time.perf_counter, init=False)
    entries: list[TapeEntry] = field(default_factory=list, init=False)
    usage: Usage | None = field(default=None, init=False)
    partial: str = field(default="", init=False)
    """The text of the current step so far."""
    steps: int = field(default=0, init=False)
    """Model calls answered so far."""
    finished: Turn | None = field(default=None, init=False)
    last_view: View | None = field(default=None, init=False)
    system_prompt: str = field(default="", init=False)
    notices: list[str] = field(default_factory=list, init=False)
    running_tools: tuple[Completion, list[Any], list[ToolCallError | None]] | None = field(default=None, init=False)
    tool_origins: list[Mapping[str, Any] | None] = field(default_factory=list, init=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def closed(self) -> bool:
        return self.finished is not None

    @property
    def entry_meta(self) -> dict[str, Any]:
        return {"run_id": self.run_id, **self.meta}

    def _write(self, *entries: TapeEntry) -> None:
        # The lock makes "still open?" and the append one step, so an abort from another thread
        # can never slip its run event in before a late entry of the turn it closed.
        with self._lock:
            if self.finished is None:
                meta = self.entry_meta
                self.entries.extend(
                    self.tape.extend([TapeEntry(0, e.kind, e.payload, {**meta, **e.meta}) for e in entries])
                )

    def start(self, system_prompt: str, prompt: str) -> None:
        """Write the system prompt and the user's prompt, the turn's first entries."""
        self.system_prompt = system_prompt
        self._write(TapeEntry.system(system_prompt), TapeEntry.message({"role": "user", "content": prompt}))

    def add_message(self, message: dict[str, Any]) -> None:
        """Write a message the turn adds between its steps (a plugin's ``continue_prompt``)."""
        self._write(TapeEntry.message(message))

    def begin_step(self, view: View) -> list[dict[str, Any]]:
        """A model call starts, sent ``view``: returns its messages, the system prompt first."""
        self.last_view = view
        self.partial = ""
        return [{"role": "system", "content": self.system_prompt}, *view.messages]

    def add_text(self, text: str) -> None:
        """Text of the current step arrived (kept as the partial answer should the turn stop now)."""
        self.partial += text

    def end_step(self, completion: Completion) -> None:
        """The model answered the current step."""
        self.steps += 1
        self.add_usage(completion.usage)

    def recorded_view(self, view: View) -> RecordedView:
        """What the run event keeps of the view the turn's last model call was sent, to rebuild that request."""
        return RecordedView(
            mode=view.mode,
            anchor=view.anchor.id if view.anchor is not None else None,
            entry_ids=tuple(view.entry_ids),
            memory_version=self.memory_version,
            system_tokens=count_message_tokens({"role": "system", "content": self.system_prompt}),
        )

    def add_usage(self, usage: Usage | None) -> None:
        self.usage = Usage.add(self.usage, usage)

    def written_by_tools(self, entries: Iterable[TapeEntry]) -> None:
        """Entries the turn's tools appended themselves (an anchor, a memory zone): part of the turn."""
        with self._lock:
            if self.finished is None:
                self.entries.extend(entries)

    # -- a reset under the running turn: a tool (asked by the model) started the tape over ------------

    def tools_wrote(self, before: int) -> None:
        """What the tools appended since the tape's last id was ``before`` joins the turn; when a tool started
        the tape over, the turn so far moves onto the new tape (:meth:`carry_over_reset`)."""
        if self.reset_under_it():
            self.carry_over_reset(self.tape.read(1))
        elif self.tape.last_id != before:
            self.written_by_tools(self.tape.read(before + 1))

    def reset_under_it(self) -> bool:
        """Whether the tape was started over since the turn began: its first entry is no longer where it was."""
        first = next((e for e in self.entries if e.meta.get("run_id") == self.run_id), None)
        if first is None:
            return False
        found = self.tape.read(first.id, first.id + 1)
        return not found or found[0].meta.get("run_id") != self.run_id or found[0].kind != first.kind

    def carry_over_reset(self, written: Iterable[TapeEntry]) -> None:
        """After a reset (archived, so nothing is lost) the turn goes on on the new tape.

        ``written`` is what the reset and the tools wrote there; the turn's own entries so far (its
        system prompt, the prompt, earlier tool steps) are copied after them, ``meta.carried`` naming
        each one's id in the archive, so the prompt is still in the view, the turn can be rebuilt, and
        every id the turn reports is on the tape it now writes.
        """
        with self._lock:
            if self.finished is not None:
                return
            own = [e for e in self.entries if e.meta.get("run_id") == self.run_id and e.kind != "anchor"]
            self.entries = list(written)
            self._write(*(TapeEntry(0, e.kind, e.payload, {**e.meta, "carried": e.id}) for e in own))

    @property
    def prompt_id(self) -> int | None:
        """The id of the turn's prompt on the tape (the first user message it wrote), once written."""
        return next((e.id for e in self.entries if e.kind == "message" and e.payload.get("role") == "user"), None)

    def tools_started(self, completion: Completion, origins: list[Mapping[str, Any] | None] | None = None) -> None:
        """The tools ``completion`` calls are running; :meth:`tool_returned` tells each call's result, in order.

        Should the turn be interrupted before they all return, :meth:`interrupt` records the calls
        that did not as interrupted.
        """
        self.running_tools = (completion, [], [])
        self.tool_origins = origins or []

    def tool_returned(self, result: Any, failure: ToolCallError | None = None) -> None:
        """The next running call returned ``result``; ``failure`` when it failed (``result`` then tells the model)."""
        if self.running_tools is not None:
            _, results, failures = self.running_tools
            results.append(result)
            failures.append(failure)

    def tools_finished(self) -> None:
        """Every running call returned: write the calls and their results."""
        if self.running_tools is not None:
            self._tool_step(*self.running_tools)

    def _tool_step(self, completion: Completion, results: list[Any], failures: list[ToolCallError | None]) -> None:
        """The calls and their results, then an ``error`` entry for each call that failed."""
        with self._lock:
            self.running_tools = None
            calls = [call.to_openai() for call in completion.tool_calls]
            errors = [
                TapeEntry.error(f"tool.{failure.kind}", failure.message, {"tool": call.name, "call_id": call.id})
                for call, failure in zip(completion.tool_calls, failures, strict=True)
                if failure is not None
            ]
            call = TapeEntry.tool_call(calls, completion.text or None, **_origins(completion, self.tool_origins))
            self._write(call, TapeEntry.tool_result(results), *errors)

    def _abandon_tools(self) -> None:
        """Record running tools as interrupted: each call gets an error result (so every view stays valid)
        and an ``error`` entry; a result that arrives later is never written."""
        if self.running_tools is None:
            return
        completion, results, failures = self.running_tools
        done = len(results)
        results, failures = list(results), list(failures)
        for index, call in enumerate(completion.tool_calls[done:]):
            if index == 0:
                message = f"Tool {call.name!r} was interrupted before it returned; its result is abandoned"
            else:
                message = f"Tool {call.name!r} was not run: the turn was interrupted before it"
            failure = ToolCallError(call.name, "interrupted", message)
            results.append(failure.as_result())
            failures.append(failure)
        self._tool_step(completion, results, failures)

    def auto_handoff(
        self, error: Exception, step: int, prompt: str, *, left_view: int = 0, summary: Summary | None = None
    ) -> None:
        """Recover from a context overflow as Bub does: an anchor, a ``loop.step`` event, the prompt again.

        With ``summary`` (of the phase that overflowed) a ``summary`` event comes first and the anchor
        carries it, so the retry knows what came before. The new phase starts at the anchor, so the
        retry needs the user's prompt after it. A notice says so in one line: an overflow is never silent.
        """
        state = overflow_state(error)
        head: list[TapeEntry] = []
        if summary is not None:
            head.append(TapeEntry.event(SUMMARY, summary.event_data(AUTO_HANDOFF_ANCHOR)))
            if summary.summary:  # a summary cut to nothing leaves its bookkeeping out too: the retry must fit
                state = {**overflow_summary_state(summary), **state}
        head.extend(handoff_entries(AUTO_HANDOFF_ANCHOR, state))
        self._write(
            *head,
            TapeEntry.event(LOOP_STEP, {"step": step, "status": "auto_handoff", "error": str(error)}),
            TapeEntry.message({"role": "user", "content": prompt}, retry=True),
        )
        anchor = next((e for e in reversed(self.entries) if e.kind == "anchor" and e.name == AUTO_HANDOFF_ANCHOR), None)
        where = f" #{anchor.id}" if anchor is not None else ""
        carried = ""
        if summary is not None:
            first, last = summary.range
            parts = f" in {summary.parts} parts" if summary.parts > 1 else ""
            carried = f" with a summary of #{first}-#{last} by {summary.summarized_by}{parts}"
            if summary.error:
                carried += f" because the model's summary failed ({shorten(summary.error, 120, placeholder=' …')})"
            if not summary.summary:
                carried = f" (the summary of #{first}-#{last} did not fit the window)"
        self.notices.append(
            f"The prompt did not fit the model's context: handoff {AUTO_HANDOFF_ANCHOR}{where} written{carried}, "
            f"{left_view} entries left the view (they stay on the tape)"
        )
        if summary is not None:
            self.add_usage(summary.usage)  # summarizing is part of what the turn cost

    def notice(self, text: str) -> None:
        """One line the user should see about something the turn did on its own (it writes nothing)."""
        self.notices.append(text)

    def error(self, kind: str, message: str, details: Any = None) -> None:
        self._write(TapeEntry.error(kind, message, details))

    def finish(
        self,
        status: str,
        text: str,
        *,
        error: str | None = None,
        partial: bool = False,
        answer: bool = True,
        after_answer: TapeEntry | None = None,
    ) -> Turn:
        """Write the answer (unless ``answer`` is false or there is none), ``after_answer`` and the ``run`` event."""
        with self._lock:
            if self.finished is not None:
                return self.finished
            elapsed_ms = round((time.perf_counter() - self.started) * 1000, 1)
            data = {
                "status": status,
                "usage": self.usage.as_dict() if self.usage else None,
                "model": self.model,
                "elapsed_ms": elapsed_ms,
                "steps": self.steps,
            }
            if self.last_view is not None:
                data["view"] = self.recorded_view(self.last_view).as_data()
            closing = [TapeEntry.event(RUN, data)]
            if after_answer is not None:
                closing.insert(0, after_answer)
            if text and answer:
                meta = {"partial": True} if partial else {}
                closing.insert(0, TapeEntry.message({"role": "assistant", "content": text}, **meta))
            self._write(*closing)
            self.finished = Turn(
                text=text,
                entries=tuple(self.entries),
                usage=self.usage,
                status=status,
                model=self.model,
                run_id=self.run_id,
                elapsed_ms=elapsed_ms,
                steps=self.steps,
                error=error,
                view=self.last_view,
                notices=tuple(self.notices),
            )
            return self.finished

    def fail(self, exc: BaseException) -> Turn:
        """Close the turn on a failure: the ``error``, the partial answer if any, ``run`` with status error."""
        with self._lock:
            if self.finished is not None:
                return self.finished
            message = str(exc) or type(exc).__name__
            self.error(error_kind(exc), message, {"exception": type(exc).__name__, "step": self.steps + 1})
            return self.finish("error", self.partial, error=message, partial=bool(self.partial))

    def interrupt(self) -> Turn:
        """Close a turn the user stopped: the partial answer is kept, marked partial, then the ``error``
        ``interrupted`` and the ``run`` event."""
        with self._lock:
            if self.finished is not None:
                return self.finished
            self._abandon_tools()
            stopped = TapeEntry.error("interrupted", "The turn was interrupted; the partial answer is kept")
            return self.finish(
                "interrupted", self.partial, error="interrupted", partial=bool(self.partial), after_answer=stopped
            )


def _origins(completion: Completion, origins: list[Mapping[str, Any] | None]) -> dict[str, Any]:
    """``meta`` for a call entry naming where its tools came from, by call id: ``{"mcp": {call_id: {...}}}``."""
    meta: dict[str, dict[str, Any]] = {}
    for call, origin in zip(completion.tool_calls, origins, strict=False):
        for key, value in (origin or {}).items():
            meta.setdefault(key, {})[call.id] = dict(value)
    return meta


@dataclass
class RunningTurn:
    """A turn in progress: its recorder and the task driving it, so an abort can stop it from anywhere."""

    recorder: TurnRecorder
    task: asyncio.Task[Any] | None
    aborted: bool = field(default=False, init=False)
    done: bool = field(default=False, init=False)

    def resumed(self, task: asyncio.Task[Any] | None) -> None:
        """The turn goes on in ``task`` (a synchronous stream resumes each delta in a new task)."""
        self.task = task

    def end(self) -> None:
        """The task driving the turn is done with it: an abort no longer cancels that task."""
        self.done = True

    def abort(self) -> Turn:
        """Close the turn as interrupted now, and cancel its task unless the caller is that task."""
        self.aborted = True
        turn = self.recorder.interrupt()
        task = self.task
        if task is None or task.done():
            return turn

        def cancel() -> None:
            if not self.done and task is not asyncio.current_task():
                task.cancel()

        loop = task.get_loop()
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            cancel()
        else:
            with contextlib.suppress(RuntimeError):  # that loop is already closed
                loop.call_soon_threadsafe(cancel)
        return turn
