"""One turn's record: what it wrote to the tape, in the order DESIGN.md fixes, and what it returns."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bub_nb.agent.models.base import Completion, ToolCall, Usage
from bub_nb.tape import TapeEntry

if TYPE_CHECKING:
    from bub_nb.context import View
    from bub_nb.tape import Tape


@dataclass(frozen=True, slots=True)
class Turn:
    """The outcome of one prompt: the answer, every entry written and the model's usage."""

    text: str
    entries: tuple[TapeEntry, ...]
    usage: Usage | None
    status: str
    model: str
    run_id: str
    elapsed_ms: float
    steps: int = 0
    error: str | None = None
    view: View | None = None

    @property
    def entry_ids(self) -> list[int]:
        return [entry.id for entry in self.entries]

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "command")

    def __str__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return self.text


def _add_usage(total: Usage | None, more: Usage | None) -> Usage | None:
    if more is None:
        return total
    if total is None:
        return more
    return Usage.of(total.prompt_tokens + more.prompt_tokens, total.completion_tokens + more.completion_tokens)


@dataclass
class TurnRecorder:
    """Writes a turn to its tape as it happens, so an error or an interrupt never loses the prompt.

    Order on the tape: ``system``, the user message, ``tool_call``/``tool_result`` pairs,
    ``error`` (if any), the assistant message (``meta.partial`` when cut short), a ``run`` event.
    """

    tape: Tape
    model: str
    meta: dict[str, Any] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    started: float = field(default_factory=time.perf_counter)
    entries: list[TapeEntry] = field(default_factory=list)
    usage: Usage | None = None
    partial: str = ""
    steps: int = 0
    finished: Turn | None = None
    last_view: View | None = None

    @property
    def entry_meta(self) -> dict[str, Any]:
        return {"run_id": self.run_id, **self.meta}

    def _write(self, entry: TapeEntry) -> TapeEntry:
        if self.finished is not None:
            # A stream abandoned by an interrupt may still deliver; the turn is already closed.
            return entry
        stored = self.tape.append(TapeEntry(0, entry.kind, entry.payload, {**self.entry_meta, **entry.meta}))
        self.entries.append(stored)
        return stored

    def start(self, system_prompt: str, prompt: str) -> None:
        self._write(TapeEntry.system(system_prompt))
        self._write(TapeEntry.message({"role": "user", "content": prompt}))

    def resend_prompt(self, prompt: str) -> None:
        """After an auto-handoff the new phase needs the prompt again, after its anchor."""
        self._write(TapeEntry.message({"role": "user", "content": prompt}, retry=True))

    def add_usage(self, usage: Usage | None) -> None:
        self.usage = _add_usage(self.usage, usage)

    def tool_step(self, completion: Completion, results: list[Any]) -> None:
        calls = [call.to_openai() for call in completion.tool_calls]
        self._write(TapeEntry.tool_call(calls, completion.text or None))
        self._write(TapeEntry.tool_result(results))

    def auto_handoff(self, error: Exception, step: int) -> None:
        state = {"reason": "context_length_exceeded", "error": str(error)}
        self.entries.extend(self.tape.handoff("auto_handoff/context_overflow", state, **self.entry_meta))
        self._write(TapeEntry.event("loop.step", {"step": step, "status": "auto_handoff", "error": str(error)}))

    def error(self, kind: str, message: str, details: Any = None) -> None:
        self._write(TapeEntry.error(kind, message, details))

    def tool_errors(self, calls: tuple[ToolCall, ...], results: list[Any]) -> None:
        for call, result in zip(calls, results, strict=True):
            if isinstance(result, dict) and "kind" in result and "message" in result:
                self.error(f"tool.{result['kind']}", result["message"], {"tool": call.name, "call_id": call.id})

    def finish(self, status: str, text: str, *, error: str | None = None, partial: bool = False) -> Turn:
        if self.finished is not None:
            return self.finished
        if text:
            meta = {"partial": True} if partial else {}
            self._write(TapeEntry.message({"role": "assistant", "content": text}, **meta))
        elapsed_ms = round((time.perf_counter() - self.started) * 1000, 1)
        data = {
            "status": status,
            "usage": self.usage.as_dict() if self.usage else None,
            "model": self.model,
            "elapsed_ms": elapsed_ms,
            "steps": self.steps,
        }
        self._write(TapeEntry.event("run", data))
        self.finished = Turn(
            text,
            tuple(self.entries),
            self.usage,
            status,
            self.model,
            self.run_id,
            elapsed_ms,
            self.steps,
            error,
            self.last_view,
        )
        return self.finished

    def interrupt(self) -> Turn:
        """Record a turn the user stopped: the partial answer is kept, marked partial."""
        if self.finished is not None:
            return self.finished
        self.error("interrupted", "The turn was interrupted; the partial answer is kept")
        return self.finish("interrupted", self.partial, error="interrupted", partial=bool(self.partial))
