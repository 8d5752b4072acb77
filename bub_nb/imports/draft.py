"""A tape drafted from another agent's log: entries in order, each naming the source records it came from."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from bub_nb.imports.records import NOT_JSON, NotJson
from bub_nb.imports.values import entry_date, openai_call, text
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import RUN

UNMAPPED: Final = "import.unmapped"
"""A source record the importer does not understand, kept whole: ``{"record", "type", "reason", "raw"}``."""

SOURCE: Final = "import.source"
"""The first entry of an imported tape: which log it came from (``{"format", "path", "session", ...}``)."""

CARRIED: Final = ("context", "sidechain", "run_id")
"""Meta a call's ``tool_result`` entry takes from the call: hidden with it, in its run."""

_UNDATED: Final = ""
"""The date of an entry made before any record with a date: the first dated record's, once it is known."""

RECORD_EVENT_PREFIX: Final = "import."
"""Records understood but not conversation (a session header, a turn's settings) become ``import.<type>`` events."""


@dataclass
class _OpenCalls:
    """A ``tool_call`` entry of the draft whose results are still arriving."""

    position: int
    ids: list[str]
    carry: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    records: list[int] = field(default_factory=list)
    group: str | None = None
    """The reply the calls belong to, when the log names it: its later calls join this entry."""
    more: bool = False
    """Whether the reply has calls still to come, so complete results do not close the entry yet."""
    after: list[TapeEntry] = field(default_factory=list)
    """Entries the log holds between the calls and their results that the view must not put between them."""


@dataclass
class TapeDraft:
    """Entries built from a log's records before anything is written.

    Every source record is taken with :meth:`take`; what the importer then adds carries that record's
    number (in ``meta.records``) and date. A record nothing was made from is kept whole as an
    ``import.unmapped`` event by :meth:`finish`, so none is ever dropped.

    Tool calls made one after another with nothing between them are one ``tool_call`` entry, as a
    model's parallel calls are; their results become one ``tool_result`` entry in call order once all
    have arrived, or as soon as the conversation moves on (a missing result is then an error result,
    as an interrupted turn records it). Each ``thread`` (a sub-agent's, say) has its own open calls.
    Calls a log names as one reply (``group``) are one entry even with results or other records between them.

    A record with no date of its own takes the date of the record before it, or of the first dated record
    when none came before, or ``fallback_date`` (the log file's own time) when no record has one: never the time
    of the import. ``undated`` counts the records that had no readable date of their own.
    """

    source: str
    fallback_date: str | None = None
    entries: list[TapeEntry] = field(default_factory=list)
    raw: list[tuple[Any, str]] = field(default_factory=list)
    dates: list[str | None] = field(default_factory=list)
    source_dates: dict[int, Any] = field(default_factory=dict)
    kept: Counter[str] = field(default_factory=Counter)
    kept_records: set[int] = field(default_factory=set)
    undated: int = 0
    current: int = 0
    _date: str | None = None
    _open: dict[str, _OpenCalls] = field(default_factory=dict)

    @property
    def record(self) -> int:
        """The number of the record entries are made from now (1 for the first)."""
        return self.current

    def focus(self, number: int) -> None:
        """Make entries from an earlier record again (one whose parts were read in between)."""
        self.current = number

    def take(self, raw: Any, kind: str, date: Any = None) -> int:
        """Start reading the next source record; ``date`` is its time, in any form ``entry_date`` reads."""
        self.raw.append((raw, kind))
        parsed, original = entry_date(date)
        if parsed is not None:
            self._date = parsed
            if original is not None:
                self.source_dates[len(self.raw)] = original
        else:
            self.undated += 1  # no date of its own (none given, or one that cannot be read): it borrows one
        self.dates.append(self._date)
        self.current = len(self.raw)
        return self.current

    def _meta(self, meta: dict[str, Any], records: list[int] | None = None) -> dict[str, Any]:
        numbers = records if records is not None else [self.record]
        made = {"source": self.source, "records": numbers, **meta}
        if numbers and numbers[0] in self.source_dates:
            made["source_date"] = self.source_dates[numbers[0]]  # the log's own time, where the date had to change
        return made

    def _add(self, kind: str, payload: dict[str, Any], meta: dict[str, Any], records: list[int] | None = None) -> None:
        self.entries.append(self._entry(kind, payload, meta, records))

    def _entry(
        self, kind: str, payload: dict[str, Any], meta: dict[str, Any], records: list[int] | None = None
    ) -> TapeEntry:
        return TapeEntry(0, kind, payload, self._meta(meta, records), self._date or _UNDATED)

    # -- the conversation --------------------------------------------------------------------------

    def message(self, message: dict[str, Any], *, thread: str = "", after_calls: bool = False, **meta: Any) -> None:
        """A message; with ``after_calls`` one that comes while calls wait for results goes after those results
        (an instruction the tool injects there), instead of closing the calls without them."""
        open_calls = self._open.get(thread)
        if after_calls and open_calls is not None:
            open_calls.after.append(self._entry("message", dict(message), meta))
            return
        self.settle(thread)
        self._add("message", dict(message), meta)

    def system(self, content: str, *, thread: str = "", **meta: Any) -> None:
        self.settle(thread)
        self._add("system", {"content": content}, meta)

    def call(
        self,
        call_id: str,
        name: str,
        arguments: Any,
        *,
        text: str = "",
        thread: str = "",
        group: str | None = None,
        more: bool = False,
        records: list[int] | None = None,
        **meta: Any,
    ) -> None:
        """A tool call; one right after another call of the same thread, or of the same ``group`` (one reply),
        joins its entry. ``more`` says the reply has calls still to come; ``records`` are earlier records the
        call's entry is also made from (the text of its reply, say)."""
        open_calls = self._open.get(thread)
        adjacent = open_calls is not None and open_calls.position == len(self.entries) - 1 and not open_calls.results
        if open_calls is not None and (adjacent or (group is not None and open_calls.group == group)):
            entry = self.entries[open_calls.position]
            joined = {**entry.payload, "calls": [*entry.payload["calls"], openai_call(call_id, name, arguments)]}
            if text:
                joined["content"] = "\n\n".join(part for part in (joined.get("content"), text) if part)
            numbers = [*entry.meta.get("records", []), *(records or ()), self.record]
            joined_meta = {**entry.meta, "records": numbers}
            self.entries[open_calls.position] = TapeEntry(0, "tool_call", joined, joined_meta, entry.date)
            open_calls.ids.append(call_id)
            open_calls.more = more
            if not more and len(open_calls.results) == len(open_calls.ids):
                self.settle(thread)
            return
        self.settle(thread)
        payload: dict[str, Any] = {"calls": [openai_call(call_id, name, arguments)]}
        if text:
            payload["content"] = text
        self._add("tool_call", payload, meta, [*records, self.record] if records else None)
        carry: dict[str, Any] = {key: meta[key] for key in CARRIED if key in meta}
        self._open[thread] = _OpenCalls(len(self.entries) - 1, [call_id], carry, group=group, more=more)

    def result(self, call_id: str, output: Any, *, error: bool = False, thread: str = "", **meta: Any) -> None:
        """The result of a call; the ``tool_result`` entry is written when every call of its entry has one."""
        value = {"kind": "tool_error", "message": text(output)} if error else output
        open_calls = self._open.get(thread)
        if open_calls is None or call_id not in open_calls.ids or call_id in open_calls.results:
            self.settle(thread)  # a result whose call this log does not hold: kept on its own
            self._add("tool_result", {"results": [value]}, {"call_ids": [call_id], **meta})
            return
        open_calls.results[call_id] = value
        open_calls.records.append(self.record)
        if len(open_calls.results) == len(open_calls.ids) and not open_calls.more:
            self.settle(thread)

    def settle(self, thread: str = "") -> None:
        """Write the open calls' results of ``thread``; a call without one gets an error result."""
        open_calls = self._open.pop(thread, None)
        if open_calls is None:
            return
        results = [
            open_calls.results.get(
                call_id,
                {"kind": "missing_result", "message": f"The log holds no result for call {call_id!r}"},
            )
            for call_id in open_calls.ids
        ]
        records = open_calls.records or [self.record]
        self._add("tool_result", {"results": results}, open_calls.carry, records)
        self.entries.extend(open_calls.after)

    def run(
        self,
        usage: dict[str, Any] | None,
        model: str | None,
        *,
        status: str = "ok",
        records: list[int] | None = None,
        thread: str | None = None,
        **data: Any,
    ) -> None:
        """A ``run`` event as bub_nb closes a turn with: the model's usage and name (``records``: the source
        records it is made from, when not the current one). With ``thread``, a run whose calls still wait for
        results is written after them, so the turn it closes holds them."""
        run_id = data.pop("run_id", None)
        data = {"status": status, "usage": usage, "model": model, "elapsed_ms": None, **data}
        entry = self._entry("event", {"name": RUN, "data": data}, {"run_id": run_id} if run_id else {}, records)
        open_calls = self._open.get(thread) if thread is not None else None
        if open_calls is not None:
            open_calls.after.append(entry)
        else:
            self.entries.append(entry)

    def anchor(self, name: str, state: dict[str, Any] | None = None, *, thread: str = "", **meta: Any) -> None:
        self.settle(thread)
        payload: dict[str, Any] = {"name": name}
        if state is not None:
            payload["state"] = state
        self._add("anchor", payload, meta)

    def entry(self, kind: str, payload: dict[str, Any], **meta: Any) -> None:
        """An entry of any kind, its payload as the log gives it (a log that holds Bub's own entries)."""
        if kind in ("message", "system", "anchor", "tool_call"):
            self.settle(str(meta.pop("thread", "")))
        self._add(kind, dict(payload), meta)

    def event(self, name: str, data: Any = None, **meta: Any) -> None:
        payload: dict[str, Any] = {"name": name}
        if data is not None:
            payload["data"] = data
        self._add("event", payload, meta)

    def keep(self, reason: str) -> None:
        """Keep the current record whole, as an ``import.unmapped`` event: the importer does not understand it."""
        raw, kind = self.raw[self.record - 1]
        self.kept[kind] += 1
        self.kept_records.add(self.record)
        self.event(UNMAPPED, {"record": self.record, "type": kind, "reason": reason, "raw": raw})

    def json_objects(self, records: Iterable[Any]) -> Iterator[dict[str, Any]]:
        """The records that are JSON objects, for the importer to read; any other (a line that is not JSON, an
        array, a number) is taken and kept whole here, as no log's records are anything but objects."""
        for record in records:
            if isinstance(record, NotJson):
                self.take(str(record), NOT_JSON)
                self.keep("the line is not JSON")
            elif not isinstance(record, dict):
                self.take(record, type(record).__name__)
                self.keep("the line is not a JSON object")
            else:
                yield record

    # -- the end -----------------------------------------------------------------------------------

    def finish(self) -> list[TapeEntry]:
        """Settle every open call, keep any record nothing was made from, and hand the entries over."""
        for thread in list(self._open):
            self.settle(thread)
        first = next((date for date in self.dates if date is not None), None) or self.fallback_date
        first = first or datetime.now(UTC).isoformat()  # only for a draft no log stood behind
        self.entries = [e if e.date != _UNDATED else dataclasses.replace(e, date=first) for e in self.entries]
        used = {number for entry in self.entries for number in entry.meta.get("records", ())}
        for number, (raw, kind) in enumerate(self.raw, start=1):
            if number not in used:
                self.kept[kind] += 1
                self.kept_records.add(number)
                data = {"record": number, "type": kind, "reason": "nothing was made of it", "raw": raw}
                date = self.dates[number - 1] or first
                payload = {"name": UNMAPPED, "data": data}
                self.entries.append(TapeEntry(0, "event", payload, self._meta({}, [number]), date))
        return self.entries

    @property
    def mapped(self) -> int:
        """Records that became entries (rather than being kept whole)."""
        return len(self.raw) - len(self.kept_records)
