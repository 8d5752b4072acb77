"""What an import did: the tape it wrote, and how every source record was accounted for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bub_nb.markup import code_span, markdown_html, markdown_text


@dataclass(frozen=True, slots=True)
class ImportReport:
    """One import: ``records`` source records, each either ``mapped`` to entries or ``kept`` whole.

    ``kinds`` counts the entries written by kind; ``kept_types`` counts the kept records by their type
    in the source (each is an ``import.unmapped`` event on the tape, with the record in its data).
    ``undated`` counts records with no readable time of their own (their entries carry the time before them, or
    the log file's time when no record has one).
    """

    tape: str
    location: str
    format: str
    source: str
    records: int
    mapped: int
    kept: int
    entries: int
    kinds: Mapping[str, int] = field(default_factory=dict)
    kept_types: Mapping[str, int] = field(default_factory=dict)
    first_date: str | None = None
    last_date: str | None = None
    undated: int = 0
    session: Mapping[str, Any] = field(default_factory=dict)
    archived: str | None = None
    """Where the tape's earlier import went when this one replaced it (``import_log(replace=True)``)."""

    @property
    def accounted(self) -> bool:
        """Whether every source record was mapped or kept (it always is; a report says so)."""
        return self.mapped + self.kept == self.records

    def describe(self) -> str:
        kept = ", ".join(f"{kind} ×{count}" for kind, count in sorted(self.kept_types.items()))
        return (
            f"Imported {self.records} {self.format} records from {self.source} into tape {self.tape!r}: "
            f"{self.mapped} mapped, {self.kept} kept as events{f' ({kept})' if kept else ''}; "
            f"{self.entries} entries ({', '.join(f'{k} {n}' for k, n in sorted(self.kinds.items()))})"
            + (f"; {cut} values too long to bring in whole were cut" if (cut := self.session.get("cut_values")) else "")
        )

    def __str__(self) -> str:
        return self.describe()

    def to_markdown(self) -> str:
        """The report as a Markdown table. Every value from the log (its path, its record types, its dates) goes
        in as data: a code span fenced past any backtick it holds, or escaped text."""
        rows = [
            ("tape", code_span(self.tape)),
            ("from", f"{markdown_text(self.format)}: {code_span(self.source)}"),
            ("records", f"{self.records}: {self.mapped} mapped, {self.kept} kept as `import.unmapped` events"),
            ("entries", markdown_text(", ".join(f"{kind} {count}" for kind, count in sorted(self.kinds.items())))),
            ("dates", markdown_text(f"{self.first_date} … {self.last_date}")),
        ]
        if self.kept_types:
            rows.append(("kept", ", ".join(f"{code_span(k)} ×{n}" for k, n in sorted(self.kept_types.items()))))
        return "| | |\n|---|---|\n" + "\n".join(f"| {key} | {value} |" for key, value in rows)

    def _repr_html_(self) -> str:
        return markdown_html(self.to_markdown())
