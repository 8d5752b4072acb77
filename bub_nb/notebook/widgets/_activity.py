"""What a timeline counts: entries per phase, entries per stretch of time, and tokens per turn."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from bub_nb.agent.models.refusals import reported_prompt, reported_window
from bub_nb.agent.phase_handoff import AUTO_HANDOFF_ANCHOR
from bub_nb.tape.entries import TapeEntry, is_memory_bound, is_phase_anchor
from bub_nb.tape.events import LOOP_STEP, RUN, SUMMARY, run_data, run_usage
from bub_nb.tape.reports.prices import cost_of

MAX_BUCKETS: Final = 48
MEMORY_ANCHOR: Final = "memory_anchor"  # counted apart from phase anchors, which start phases
# Bucket widths a person reads easily; the smallest that fits the tape's span in MAX_BUCKETS wins.
STEPS: Final[tuple[tuple[timedelta, str], ...]] = (
    (timedelta(minutes=1), "minute"),
    (timedelta(minutes=5), "5 minutes"),
    (timedelta(minutes=15), "15 minutes"),
    (timedelta(hours=1), "hour"),
    (timedelta(hours=6), "6 hours"),
    (timedelta(days=1), "day"),
    (timedelta(days=7), "week"),
    (timedelta(days=30), "30 days"),
    (timedelta(days=365), "365 days"),
)
_EPOCH: Final = datetime(2000, 1, 3, tzinfo=UTC)  # a Monday, so weekly buckets start on Mondays


@dataclass
class Phase:
    """The entries from one phase anchor up to the next (``anchor`` is ``None`` before the first)."""

    anchor: str | None
    anchor_id: int | None
    first_id: int
    last_id: int
    kinds: Counter[str] = field(default_factory=Counter)
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    """What the phase's turns cost at the prices in use; ``None`` once a turn ran on an unpriced model."""

    @property
    def entries(self) -> int:
        return sum(self.kinds.values())


@dataclass
class Bucket:
    start: datetime
    kinds: Counter[str] = field(default_factory=Counter)
    anchors: list[tuple[int, str]] = field(default_factory=list)

    @property
    def entries(self) -> int:
        return sum(self.kinds.values())


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One model run, from its ``run`` event."""

    number: int
    entry_id: int
    date: str
    status: str
    model: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    elapsed_ms: float | None
    phase: str | None
    window: int | None = None
    """For a refused request, the context window the refusal named."""
    calls: int = 1
    """The model calls the run's usage adds up: its steps, and the summaries an overflow asked for."""

    @property
    def refused(self) -> bool:
        """A request the model refused as over its window (an overflow, which an auto handoff followed)."""
        return self.status == REFUSED


REFUSED: Final = "refused"


@dataclass(frozen=True, slots=True)
class Activity:
    entries: int
    phases: tuple[Phase, ...]
    buckets: tuple[Bucket, ...]
    step: str
    turns: tuple[RunSummary, ...]
    anchors: tuple[tuple[int, str], ...]
    memory_anchors: int
    refusals: tuple[RunSummary, ...] = ()
    """Requests refused as over the window, each with the tokens and window the refusal named."""


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _when(entry: TapeEntry) -> datetime | None:
    try:
        moment = entry.when
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _turn(entry: TapeEntry, number: int, phase: str | None, summaries: int = 0) -> RunSummary:
    data: dict[str, Any] = run_data(entry) or {}
    usage: dict[str, Any] = run_usage(entry) or {}
    elapsed = data.get("elapsed_ms")
    model = data.get("model")
    return RunSummary(
        number=number,
        entry_id=entry.id,
        date=entry.date,
        status=str(data.get("status", "?")),
        model=model if isinstance(model, str) else None,
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        elapsed_ms=elapsed if isinstance(elapsed, int | float) and not isinstance(elapsed, bool) else None,
        phase=phase,
        calls=max(1, _int(data.get("steps")) or 1) + summaries,
    )


def measure(entries: Iterable[TapeEntry], prices: Mapping[str, Mapping[str, float]] | None = None) -> Activity:
    """Count a tape's entries by phase, by time and by turn, in one pass; ``prices`` give each phase its cost."""
    phases: list[Phase] = []
    turns: list[RunSummary] = []
    refusals: list[RunSummary] = []
    summaries = 0  # summary calls since the last run event: its usage counts them
    anchors: list[tuple[int, str]] = []
    memory_anchors = 0
    stamped: list[tuple[datetime, TapeEntry]] = []
    count = 0
    for entry in entries:
        count += 1
        name = entry.name
        if entry.kind == "anchor" and is_phase_anchor(name):
            phases.append(Phase(name, entry.id, entry.id, entry.id))
            anchors.append((entry.id, name or ""))
        elif is_memory_bound(entry):
            memory_anchors += 1
        if not phases:
            phases.append(Phase(None, None, entry.id, entry.id))
        phase = phases[-1]
        kind = MEMORY_ANCHOR if is_memory_bound(entry) else entry.kind
        phase.kinds[kind] += 1
        phase.last_id = entry.id
        if entry.kind == "event" and name == RUN:
            turn = _turn(entry, len(turns) + 1, phase.anchor, summaries)
            summaries = 0
            turns.append(turn)
            phase.turns += 1
            phase.prompt_tokens += turn.prompt_tokens or 0
            phase.completion_tokens += turn.completion_tokens or 0
            cost = cost_of(turn.model, turn.prompt_tokens, turn.completion_tokens, prices or {})
            phase.cost = None if cost is None or phase.cost is None else phase.cost + cost
        elif entry.kind == "event" and name == SUMMARY:
            summaries += _summary_calls(entry)
        elif entry.kind == "event" and name == LOOP_STEP:
            refusal = _refusal(entry, phase.anchor)
            if refusal is not None:
                refusals.append(refusal)
        moment = _when(entry)
        if moment is not None:
            stamped.append((moment, entry))
    buckets, step = _bucket(stamped)
    return Activity(count, tuple(phases), buckets, step, tuple(turns), tuple(anchors), memory_anchors, tuple(refusals))


def _summary_calls(entry: TapeEntry) -> int:
    """How many model calls the summarizing of an overflow made inside a turn (its requests); 0 for other summaries,
    which a handoff asked for outside any turn."""
    data = entry.payload.get("data")
    if not isinstance(data, dict) or data.get("anchor") != AUTO_HANDOFF_ANCHOR:
        return 0
    requests = data.get("requests")
    return len(requests) if isinstance(requests, list) and requests else 1


def _refusal(entry: TapeEntry, phase: str | None) -> RunSummary | None:
    """The refused request a ``loop.step`` event of an auto handoff records, with what the refusal counted."""
    data = entry.payload.get("data")
    if not isinstance(data, dict) or data.get("status") != "auto_handoff":
        return None
    error = str(data.get("error", ""))
    return RunSummary(
        number=0,
        entry_id=entry.id,
        date=entry.date,
        status=REFUSED,
        model=None,
        prompt_tokens=reported_prompt(error),
        completion_tokens=None,
        elapsed_ms=None,
        phase=phase,
        window=reported_window(error),
    )


def _bucket(stamped: list[tuple[datetime, TapeEntry]]) -> tuple[tuple[Bucket, ...], str]:
    if not stamped:
        return (), STEPS[0][1]
    first, last = min(m for m, _ in stamped), max(m for m, _ in stamped)
    width, label = next(((w, n) for w, n in STEPS if _slots(first, last, w) <= MAX_BUCKETS), STEPS[-1])
    origin = _floor(first, width)
    buckets = [Bucket(origin + i * width) for i in range(min(_slots(first, last, width), MAX_BUCKETS))]
    for moment, entry in stamped:
        bucket = buckets[min(int((moment - origin) / width), len(buckets) - 1)]
        if entry.kind == "anchor" and is_phase_anchor(entry.name):
            bucket.kinds[entry.kind] += 1
            bucket.anchors.append((entry.id, entry.name or ""))
        else:
            bucket.kinds[MEMORY_ANCHOR if is_memory_bound(entry) else entry.kind] += 1
    return tuple(buckets), label


def _slots(first: datetime, last: datetime, width: timedelta) -> int:
    return (_floor(last, width) - _floor(first, width)) // width + 1


def _floor(moment: datetime, width: timedelta) -> datetime:
    return _EPOCH + ((moment - _EPOCH) // width) * width
