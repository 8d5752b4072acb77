"""The frame tests run once per reader: the native one (DuckDB) and the plain one, which must give the same."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bub_nb.tape.frames.native import reader as using_reader


@pytest.fixture(params=["native", "pure"])
def reader(request: pytest.FixtureRequest) -> Iterator[str]:
    """Frames, Arrow tables and ``read_tapes()`` of tape files read by this reader for the test's length."""
    if request.param == "native":
        pytest.importorskip("duckdb")
    with using_reader(request.param):
        yield request.param
