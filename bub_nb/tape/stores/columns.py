"""Tape lines decoded straight into columns (ids, kinds, payloads, metas, dates), the shape a DataFrame wants."""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bub_nb.tape._lines import (
    ENTRY,
    NOT_TYPED,
    Record,
    decode_record,
    deep_lines,
    replacing_bad_bytes,
    typed_fields,
)
from bub_nb.tape.entries import KINDS, ROLES
from bub_nb.tape.events import USAGE_EVENTS, payload_event_usage
from bub_nb.tape.text import payload_call_names, payload_text, tool_call_text

if TYPE_CHECKING:
    pass

TAPE_NAME = "tape_name"  # the column naming each row's tape
FORKED_FROM = "forked_from"  # the meta key, and column, of an entry a fork copied: the address it came from
_FIELDS = operator.itemgetter("id", "kind", "payload", "meta", "date")


_LOWEST_ID, _BEYOND_ID = -(2**63), 2**63  # ids outside 64 bits are not entries
_CACHED_LINES = 1024  # lines decoded and moved into columns at a time, while their values are in the cache


def decode_columns(lines: Sequence[bytes], start: int = 1, into: Columns | None = None) -> Columns:
    """Decode complete lines into columns of the entries with ``id >= start``, as ``records`` reads them; lines
    that are not entries are left out. The rows are added to ``into`` when given, else to new columns.

    The common case (every line exactly the five fields, of the right types) is decoded by msgspec into a
    typed value per line, which checks every type as it goes and builds no dict per line; msgspec reads
    integers beyond 64 bits exactly, as the plain decode does. Anything else (a line that is not JSON, not
    UTF-8, with a missing or extra field, a float msgspec cannot hold) sends its run of lines one by one
    through ``decode_record``.

    The lines are decoded a thousand or so at a time: the typed values of such a run are still in the CPU's
    cache when they are moved into columns, where those of a whole read block are not.
    """
    out = Columns() if into is None else into
    for first in range(0, len(lines), _CACHED_LINES):
        _decode_run(lines[first : first + _CACHED_LINES], start, out)
    return out


def _decode_run(lines: Sequence[bytes], start: int, out: Columns) -> None:
    if deep_lines(lines):  # a line nested past the bound is no entry: the slow path leaves it out
        _line_by_line(lines, start, out)
        return
    try:
        entries = list(map(ENTRY, lines))
    except NOT_TYPED:
        _line_by_line(lines, start, out)
        return
    ids = [entry.id for entry in entries]
    if ids and not (max(start, _LOWEST_ID) <= min(ids) and max(ids) < _BEYOND_ID):
        _line_by_line(lines, start, out)
        return
    out.add(
        ids,
        [entry.kind for entry in entries],
        [entry.payload for entry in entries],
        [entry.meta for entry in entries],
        [entry.date for entry in entries],
    )


def _line_by_line(lines: Sequence[bytes], start: int, out: Columns) -> None:
    """A run of lines that the typed decode did not take whole: each line that is an entry of one of the
    typed shapes (the five fields, or an older writer's ``timestamp`` for the ``date``) still decoded by
    msgspec, and only the lines of no typed shape through ``decode_record``, in file order."""
    lowest = max(start, _LOWEST_ID)
    typed: list[tuple[int, str, dict[str, Any], dict[str, Any], str]] = []
    plain: list[bytes] = []
    for line in lines:
        fields = typed_fields(line)
        if fields is None:
            if typed:
                out.add(*zip(*typed, strict=True))
                typed = []
            plain.append(line)
            continue
        if plain:
            _one_by_one(plain, start, out)
            plain = []
        if lowest <= fields[0] < _BEYOND_ID:  # beyond 64 bits or before ``start``: left out, as a record would be
            typed.append(fields)
    if typed:
        out.add(*zip(*typed, strict=True))
    if plain:
        _one_by_one(plain, start, out)


def _one_by_one(lines: Sequence[bytes], start: int, out: Columns) -> None:
    """Each line decoded alone; a line that is an entry but for a byte that is not UTF-8 is kept, the byte read
    as U+FFFD, and its row marked in ``bad_rows``."""
    records: list[Record] = []
    bad: list[int] = []
    for line in lines:
        record = decode_record(line)
        if record is None:
            record = replacing_bad_bytes(line)
            if record is not None and record["id"] >= start:
                bad.append(len(records))
        if record is not None and record["id"] >= start:
            records.append(record)
    first = len(out)
    out.add_records(records)
    out.bad_rows += [first + row for row in bad]


@dataclass
class TextColumns:
    """The columns a person reads, worked out from each entry's kind and payload."""

    roles: list[str | None] = field(default_factory=list)
    own_names: list[str | None] = field(default_factory=list)  # an anchor's, event's or message's own name
    names: list[str | None] = field(default_factory=list)  # the own name, else the tool of a single call
    contents: list[str] = field(default_factory=list)
    tools: list[list[str]] = field(default_factory=list)
    # row -> the token counts a ``run`` or ``summary`` event reports, read while the row is in the cache
    prompt_tokens: dict[int, int] = field(default_factory=dict)
    completion_tokens: dict[int, int] = field(default_factory=dict)

    def extend(self, other: TextColumns) -> None:
        """Append ``other``, the columns of the rows that follow (its token counts numbered as they are here)."""
        self.roles += other.roles
        self.own_names += other.own_names
        self.names += other.names
        self.contents += other.contents
        self.tools += other.tools
        self.prompt_tokens.update(other.prompt_tokens)
        self.completion_tokens.update(other.completion_tokens)


TEXT_OR_NONE = {str, type(None)}  # the types of a text column's values
_FIXED_ROLES = {"system": "system", "tool_call": "assistant", "anchor": "assistant", "tool_result": "tool"}
# One string object per known kind and role. Decoding makes a new string for every row; a column whose rows
# share a few objects is read from the cache by every later pass (categories, comparisons, pandas' checks),
# where a million scattered strings cost a cache miss each.
_KINDS = {kind: kind for kind in KINDS}
_ROLES = {role: role for role in ROLES}


@dataclass
class Columns:
    """Decoded entries, one list per field, in file order, with the readable columns and run ids derived
    from them as rows are added: for the lines of a decoded run, while their values are still in the cache."""

    ids: array[int] = field(default_factory=lambda: array("q"))  # 64-bit integers, not a million int objects
    kinds: list[str] = field(default_factory=list)
    payloads: list[dict[str, Any]] = field(default_factory=list)
    metas: list[dict[str, Any]] = field(default_factory=list)
    dates: list[str] = field(default_factory=list)
    text: TextColumns = field(default_factory=TextColumns)
    run_ids: list[Any] = field(default_factory=list)
    run_ids_are_text: bool = True  # every run id a string or None, as a run's recorder writes them
    forked_from: dict[int, Any] = field(default_factory=dict)  # row -> the entry a fork copied it from
    # rows (start, stop) that came from the plain decode: their values may hold what the typed decode never
    # makes (NaN, lone surrogates, deep nesting), which re-encoding them as JSON must keep
    plain_rows: list[tuple[int, int]] = field(default_factory=list)
    # rows whose line held bytes that are not UTF-8, read as U+FFFD (the line in the file is left as it is)
    bad_rows: list[int] = field(default_factory=list)

    @classmethod
    def from_records(cls, records: Iterable[Record]) -> Columns:
        out = cls()
        out.add_records(records)
        return out

    def __len__(self) -> int:
        return len(self.ids)

    def add(
        self,
        ids: Sequence[int],
        kinds: Sequence[str],
        payloads: Sequence[dict[str, Any]],
        metas: Sequence[dict[str, Any]],
        dates: Sequence[str],
    ) -> None:
        """Append rows, deriving their readable columns and run ids at once, while their values are cached."""
        kinds = list(map(_KINDS.get, kinds, kinds))
        self.text.extend(text_columns(kinds, payloads, first_row=len(self)))
        if any(metas):  # a scan in C: rows that carry no meta at all (many tapes) need no pass of their own
            seen: dict[str, str] = {}
            share = seen.setdefault  # one object per run id in these rows, as for names
            run_ids = [share(run, run) if type(run := meta.get("run_id")) is str else run for meta in metas]
            self.run_ids_are_text = self.run_ids_are_text and set(map(type, run_ids)) <= TEXT_OR_NONE
            first = len(self)
            self.forked_from.update(
                (first + row, meta[FORKED_FROM]) for row, meta in enumerate(metas) if FORKED_FROM in meta
            )
        else:
            run_ids = [None] * len(metas)
        self.run_ids += run_ids
        self.ids += array("q", ids)  # the integers are let go here, while cached, rather than all at the end
        self.kinds += kinds
        self.payloads += payloads
        self.metas += metas
        self.dates += dates

    def add_records(self, records: Iterable[Record]) -> None:
        records = list(records)
        if records:
            self.plain_rows.append((len(self), len(self) + len(records)))
            self.add(*zip(*map(_FIELDS, records), strict=True))


def text_columns(kinds: Sequence[str], payloads: Sequence[dict[str, Any]], first_row: int = 0) -> TextColumns:
    """Role, name, readable text and tool names per entry, by the rules of ``bub_nb.tape.text``; token counts
    are keyed by row, numbered from ``first_row``.

    One loop, with the common shapes (a chat message or system prompt with string content, a named
    event or anchor, a string tool result) read inline and everything else through the text module.
    """
    count = len(kinds)
    roles: list[str | None] = [None] * count
    own_names: list[str | None] = [None] * count
    contents: list[str] = [""] * count
    tools: list[list[str]] = [[] for _ in range(count)] if count else []
    names: list[str | None] = [None] * count
    prompts: dict[int, int] = {}
    completions: dict[int, int] = {}
    seen: dict[str, str] = {}
    share = seen.setdefault  # one object per distinct name in these rows (see ``_KINDS``)
    for row, kind, payload in zip(range(count), kinds, payloads, strict=False):
        if kind == "message":
            role, name, content = payload.get("role"), payload.get("name"), payload.get("content")
            roles[row] = _ROLES.get(role, role) if type(role) is str else None
            own = share(name, name) if type(name) is str else None
            own_names[row] = names[row] = own
            if type(content) is str and "tool_calls" not in payload:
                contents[row] = content
                continue
            contents[row] = payload_text(kind, payload)
            calls = tools[row] = payload_call_names(kind, payload)
            if own is None and len(calls) == 1:
                names[row] = share(calls[0], calls[0])
        elif kind == "system":
            roles[row] = "system"
            content = payload.get("content")
            contents[row] = content if type(content) is str else payload_text(kind, payload)
        elif kind == "event" or kind == "anchor":
            roles[row] = _FIXED_ROLES.get(kind)
            name = payload.get("name")
            own_names[row] = names[row] = share(name, name) if type(name) is str else None
            contents[row] = payload_text(kind, payload)
            usage = payload_event_usage(kind, payload) if name in USAGE_EVENTS else None
            if usage is not None:
                prompt = token_count(usage.get("prompt_tokens"))
                completion = token_count(usage.get("completion_tokens"))
                if prompt is not None:
                    prompts[first_row + row] = prompt
                if completion is not None:
                    completions[first_row + row] = completion
        elif kind == "tool_result":
            roles[row] = "tool"
            results = payload.get("results")
            if type(results) is list and all(type(result) is str for result in results):
                contents[row] = "\n".join(results)
            else:
                contents[row] = payload_text(kind, payload)
        elif kind == "tool_call":
            roles[row] = "assistant"
            contents[row], calls = tool_call_text(payload)
            tools[row] = calls
            if len(calls) == 1:
                names[row] = share(calls[0], calls[0])
        else:
            roles[row] = _FIXED_ROLES.get(kind)
            contents[row] = payload_text(kind, payload)
    return TextColumns(roles, own_names, names, contents, tools, prompts, completions)


def token_count(value: Any) -> int | None:
    """A token count as a usage reports it (an integral float counts), else ``None``: anything else is not one."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if type(value) is int and -(2**63) <= value < 2**63 else None
