"""Replay a session on another model: every recorded prompt of a range sent again, on a fork, answers side by side.

The source tape is only read. The fork starts with the source's entries before the range (and its
memory zone, as :meth:`~bub_nb.Tape.fork_session` keeps it); between turns it receives what the
source holds there (a handoff, a command, a note), so each replayed turn's view is rebuilt by the
same rules from the same kind of tape. Tools run on the fork.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bub_nb.agent.loop import DEFAULT_MAX_STEPS, Agent
from bub_nb.agent.models import Model, resolve_model
from bub_nb.agent.tools import Tool, ToolRegistry
from bub_nb.context.view import Mode, as_strategy, parse_mode
from bub_nb.errors import BubNbError, ReplayError
from bub_nb.tape import LAST_ANCHOR
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import RETRACT, UNRETRACT, retracted_ids, run_data, run_usage
from bub_nb.tape.forks import check_fork, forked_entries, memory_before
from bub_nb.tape.names import MAX_NAME_BYTES, entry_address
from bub_nb.tape.redact import redact_text
from bub_nb.tape.stores.archive import archive_stem
from bub_nb.tape.stores.lineage import keep_lineage

if TYPE_CHECKING:
    import pandas as pd

    from bub_nb.agent.turn import Turn
    from bub_nb.tape import Tape

REPLAY_COLUMNS = (
    "prompt",
    "original_answer",
    "replay_answer",
    "same",
    "first_difference",
    "original_model",
    "replay_model",
    "original_tokens_in",
    "original_tokens_out",
    "replay_tokens_in",
    "replay_tokens_out",
    "original_ms",
    "replay_ms",
    "replay_status",
    "replay_error",
    "original_id",
    "replay_id",
)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class RecordedTurn:
    """A model turn on a tape: its span of entries (first entry to its ``run`` event), prompt and answer."""

    run_id: str
    first_id: int
    last_id: int
    prompt_id: int
    prompt: str
    answer: str | None
    run: dict[str, Any]
    usage: dict[str, Any]

    @property
    def mode(self) -> Any:
        """The view mode the turn recorded, when its ``run`` event records one."""
        view = self.run.get("view")
        mode = view.get("mode") if isinstance(view, dict) else None
        if not isinstance(mode, str):
            return None
        try:
            return parse_mode(mode)
        except BubNbError:
            return None


def recorded_turns(entries: Iterable[TapeEntry]) -> list[RecordedTurn]:
    """Every model turn on the tape, in order: the entries sharing a ``run_id`` up to that run's ``run`` event.

    Entries a turn's tools wrote (an anchor, a memory zone) fall inside its span. A ``,command`` is not a turn.
    """
    open_turns: dict[str, list[TapeEntry]] = {}
    turns: list[RecordedTurn] = []
    for entry in entries:
        run_id = entry.meta.get("run_id")
        if not isinstance(run_id, str) or not run_id:
            for span in open_turns.values():
                span.append(entry)
            continue
        span = open_turns.setdefault(run_id, [])
        span.append(entry)
        data = run_data(entry)
        if data is None:
            continue
        del open_turns[run_id]
        own = [e for e in span if e.meta.get("run_id") == run_id]
        prompt = next((e for e in own if _role(e) == "user" and not e.meta.get("retry")), None)
        if prompt is None or not isinstance(prompt.payload.get("content"), str):
            continue
        answer = next((e for e in reversed(own) if _role(e) == "assistant"), None)
        turns.append(
            RecordedTurn(
                run_id,
                span[0].id,
                entry.id,
                prompt.id,
                str(prompt.payload["content"]),
                str(answer.payload.get("content") or "") if answer is not None else None,
                data,
                run_usage(entry) or {},
            )
        )
    return turns


def _role(entry: TapeEntry) -> str | None:
    return entry.payload.get("role") if entry.kind == "message" else None


def replay_tape_name(source: Tape, model: Model) -> str:
    """``<source>__replay__<model>`` made a plain, free tape name: unsafe characters become ``-``, a taken
    name gets ``-2``, ``-3``…"""
    suffix = "__replay__" + (_UNSAFE.sub("-", model.name).strip("-") or "model")
    room = MAX_NAME_BYTES - len(suffix.encode()) - 8  # room for "-<n>"
    source_name = archive_stem(source.name) or source.name  # an archive's own name is reserved for archives
    base = source_name.encode("utf-8")[:room].decode("utf-8", "ignore").lstrip(".") + suffix
    store = source.base_store
    name, number = base, 1
    while store.exists(name):
        number += 1
        name = f"{base}-{number}"
    return name


def replay(
    tape: Tape,
    *,
    model: str | Model,
    from_anchor: str | None = None,
    into: str | None = None,
    context: Mode = LAST_ANCHOR,
    tools: Iterable[Tool | Callable[..., Any]] | ToolRegistry | None = None,
    builtin_tools: bool | Iterable[str] = True,
    instructions: str | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> pd.DataFrame:
    """Send every recorded prompt of ``tape`` (from ``from_anchor`` on) to ``model`` again, on the fork ``into``.

    Returns one row per prompt (:data:`REPLAY_COLUMNS`): the prompt, both answers, tokens in and out
    and time on each side, whether the answers are the same, and ``first_difference`` on the first
    row whose answers differ. ``frame.attrs`` names the ``source``, the ``fork`` and the ``model``.

    Each turn's view is built by the mode its ``run`` event records, else by ``context`` (``last``
    by default, as ``%%bub``). Everything is checked before the fork is written: the model, the
    anchor, the name, that the range holds a prompt and that each prompt fits the model. A turn the
    endpoint fails is a row with ``replay_status`` ``error`` and its message, and the replay stops
    there (``attrs["stopped"]``). An interrupt keeps the fork as far as it got, the interrupted
    turn marked as such, and goes on as ``KeyboardInterrupt``. The source tape is never written.
    """
    chosen = resolve_model(model)
    strategy = as_strategy(context)
    start = tape.find_anchor(from_anchor).id if from_anchor is not None else 1
    every = tape.read()
    retracted = retracted_ids(every)  # a turn taken back is neither sent nor copied
    entries = [entry for entry in every if entry.id not in retracted]
    recorded = [turn for turn in recorded_turns(every) if turn.first_id >= start]
    turns = [turn for turn in recorded if turn.prompt_id not in retracted]
    if not turns:
        where = f"after anchor {from_anchor!r}" if from_anchor is not None else "on it"
        left = " but retracted ones" if recorded else ""
        raise ReplayError(f"Tape {tape.name!r} has no recorded prompt{left} {where}; there is nothing to replay")
    name = replay_tape_name(tape, chosen) if into is None else into
    check_fork(tape.base_store, name, None)
    probe = Agent(tape, chosen, builtin_tools=False, context=strategy)
    for turn in turns:
        probe.context = turn.mode or strategy  # a recorded mode naming an anchor must name one the tape holds
        probe.check(turn.prompt)

    fork = type(tape)(name, tape.base_store)  # not written yet: the agent checks its tools and max_steps first
    agent = Agent(
        fork, chosen, tools, max_steps, context=strategy, instructions=instructions, builtin_tools=builtin_tools
    )

    # The memory zone saved before the range comes first, as fork_session keeps it.
    first = [*memory_before(tape, start), *_between(entries, start, turns[0])]
    fork.extend(forked_entries(tape.name, first, None))
    keep_lineage(
        tape.base_store,
        {"parent": tape.name, "child": name, "from_anchor": from_anchor, "from_id": start, "replay": chosen.name},
    )
    rows: list[dict[str, Any]] = []
    stopped: str | None = None
    for number, turn in enumerate(turns):
        if number:
            gap = _between(entries, turns[number - 1].last_id + 1, turn)
            if gap:
                fork.extend(forked_entries(tape.name, gap, None))
        agent.context = turn.mode or strategy
        agent.meta = {"replay_of": entry_address(tape.name, turn.prompt_id)}
        try:
            done: Turn | None = agent.run(turn.prompt)
            error = None
        except BubNbError as exc:
            text = str(exc).strip()  # an endpoint may echo a key: the row is shown and saved, so it is scrubbed
            done, error = exc.turn, redact_text(text.splitlines()[0] if text else type(exc).__name__)
        rows.append(_row(turn, done, chosen, error))
        if error is not None:
            stopped = f"The replay stopped at prompt #{turn.prompt_id}: {error}"
            break
    skipped = tuple(turn.prompt_id for turn in recorded if turn.prompt_id in retracted)
    attrs = {"source": tape.name, "fork": name, "model": chosen.name, "stopped": stopped, "retracted": skipped}
    return _frame(rows, attrs)


RETRACTIONS = (RETRACT, UNRETRACT)


def _between(entries: Sequence[TapeEntry], start: int, turn: RecordedTurn) -> list[TapeEntry]:
    """The source's entries from id ``start`` up to where ``turn`` begins (what happened between turns).

    Retractions are left out: they name the source's ids, which on the fork are other entries."""
    return [e for e in entries if start <= e.id < turn.first_id and e.name not in RETRACTIONS]


def _row(turn: RecordedTurn, done: Turn | None, model: Model, error: str | None) -> dict[str, Any]:
    usage = done.usage if done is not None else None
    answer = done.text if done is not None and done.status == "ok" else None
    prompt_entry = next(
        (e for e in (done.entries if done is not None else ()) if _role(e) == "user" and not e.meta.get("retry")),
        None,
    )
    return {
        "prompt": turn.prompt,
        "original_answer": turn.answer,
        "replay_answer": answer,
        "original_model": turn.run.get("model"),
        "replay_model": model.name,
        "original_tokens_in": _int(turn.usage.get("prompt_tokens")),
        "original_tokens_out": _int(turn.usage.get("completion_tokens")),
        "replay_tokens_in": usage.prompt_tokens if usage is not None else None,
        "replay_tokens_out": usage.completion_tokens if usage is not None else None,
        "original_ms": _number(turn.run.get("elapsed_ms")),
        "replay_ms": done.elapsed_ms if done is not None else None,
        "replay_status": done.status if done is not None else "error",
        "replay_error": error,
        "original_id": turn.prompt_id,
        "replay_id": prompt_entry.id if prompt_entry is not None else None,
    }


def _int(value: object) -> int | None:
    return value if type(value) is int else None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _frame(rows: list[dict[str, Any]], attrs: dict[str, Any]) -> pd.DataFrame:
    import pandas as pd

    for row in rows:
        row["same"] = (
            row["replay_answer"] is not None and row["replay_answer"].strip() == (row["original_answer"] or "").strip()
        )
    first = next((at for at, row in enumerate(rows) if not row["same"]), None)
    for at, row in enumerate(rows):
        row["first_difference"] = at == first
    frame = pd.DataFrame(rows, columns=list(REPLAY_COLUMNS))
    for column in ("original_tokens_in", "original_tokens_out", "replay_tokens_in", "replay_tokens_out"):
        frame[column] = frame[column].astype("Int64")
    for column in ("original_id", "replay_id"):
        frame[column] = frame[column].astype("Int64")
    frame.attrs.update(attrs)
    return frame
