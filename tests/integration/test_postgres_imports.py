"""Other agents' logs imported into a PostgreSQL store: the same entries as in files, with the source's own dates."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.logs import DATA
from harness.tapes import postgres_store

from bub_nb import import_log, open_tape


@pytest.mark.parametrize(
    "sample", ["claude-code/sidechain_integrated.jsonl", "atif/rfc-0001-example.json", "llm/logs-0.29.db"]
)
def test_an_import_writes_the_same_entries_and_dates_to_a_database_as_to_files(sample: str, tmp_path: Path) -> None:
    store = postgres_store()

    in_database = import_log(DATA / sample, name="imported", store=store)
    in_files = import_log(DATA / sample, name="imported", home=tmp_path)

    assert (in_database.records, in_database.mapped, in_database.kept) == (
        in_files.records, in_files.mapped, in_files.kept,
    )  # fmt: skip
    stored = open_tape("imported", store=store).read()
    filed = open_tape("imported", home=tmp_path).read()
    assert [(e.id, e.kind, e.payload, e.date) for e in stored] == [(e.id, e.kind, e.payload, e.date) for e in filed]
    assert stored[1].date == in_files.first_date  # the first mapped record's own time, not the time of the import
