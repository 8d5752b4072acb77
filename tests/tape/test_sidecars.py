"""Bub's sidecar tapes belong to their owner: written here line for line as Bub 0.5.1's spill sidecar writes them
(``bub.builtin.spill.SpillStore.spill_tool_result``: a chunk anchor, then a ``tool_result`` per 16 KiB chunk, then the
manifest anchor and a ``spill.manifest`` event, each line ``json.dumps(..., ensure_ascii=False)``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from bub_nb import read_tapes
from bub_nb.tape import FileTapeStore
from bub_nb.tape.sidecars import owners_and_sidecars, resolve_spill, sidecar_of, spilled_text

OWNER = "494727f0da168296__0898b22730d57afc"
CHUNK = 16_384


def _line(ident: int, kind: str, payload: dict, **meta: object) -> str:
    record = {"id": ident, "kind": kind, "payload": payload, "meta": meta, "date": "2026-02-21T12:00:00.000000+00:00"}
    return json.dumps(record, ensure_ascii=False) + "\n"


def bub_spills(tapes: Path, text: str, *, drop_chunk: int | None = None) -> str:
    """What Bub writes for one oversized tool result: the sidecar's lines, and the pointer the owner's result holds."""
    handle = uuid.uuid4().hex
    encoded = text.encode()
    chunks, start = [], 0
    while start < len(encoded):  # Bub's _utf8_chunks: a chunk never ends inside a character
        end = min(start + CHUNK, len(encoded))
        while end < len(encoded) and encoded[end] & 0xC0 == 0x80:
            end -= 1
        chunks.append(encoded[start:end].decode())
        start = end
    lines, ident = [], 0
    for index, chunk in enumerate(chunks):
        lines.append(_line(ident := ident + 1, "anchor", {"name": f"spill/{handle}/chunk/{index}"}))
        if index != drop_chunk:
            lines.append(
                _line(ident := ident + 1, "tool_result", {"results": [chunk]}, spill_handle=handle, spill_chunk=index)
            )
    lines.append(_line(ident := ident + 1, "anchor", {"name": f"spill/{handle}/manifest"}))
    data = {
        "handle": handle,
        "chunks": len(chunks),
        "bytes": len(encoded),
        "chars": len(text),
        "lines": 1,
        "tool": "bash",
    }
    lines.append(_line(ident + 1, "event", {"name": "spill.manifest", "data": data}, spill_handle=handle, run_id="r1"))
    (tapes / f"{OWNER}__sidecar__spill.jsonl").write_text("".join(lines), encoding="utf-8")
    return (
        f"[tool output spilled: {len(encoded):,} bytes in {len(chunks):,} chunks; handle: {handle}]\n"
        f"[read with: spill_read(handle={handle!r}, cursor=0, count=1, from_end=False)]\n"
        f"{text[:300]}\n...[omitted]...\n{text[-300:]}"
    )


@pytest.fixture
def tapes(tmp_path: Path) -> Path:
    folder = tmp_path / "home" / "tapes"
    folder.mkdir(parents=True)
    return folder


def owner_tape(tapes: Path, pointer: str) -> None:
    lines = [
        _line(1, "anchor", {"name": "session/start", "state": {"owner": "human"}}),
        _line(2, "message", {"role": "user", "content": "list everything"}),
        _line(
            3,
            "tool_call",
            {"calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        ),
        _line(4, "tool_result", {"results": [pointer]}),
    ]
    (tapes / f"{OWNER}.jsonl").write_text("".join(lines), encoding="utf-8")


def test_a_sidecar_tape_name_tells_its_owner() -> None:
    found = sidecar_of(f"{OWNER}__sidecar__spill")
    assert found is not None and (found.owner, found.name) == (OWNER, "spill")
    assert sidecar_of(OWNER) is None and sidecar_of("__sidecar__spill") is None
    listing = owners_and_sidecars([OWNER, f"{OWNER}__sidecar__spill", "other__sidecar__notes"])
    assert listing == {OWNER: ["spill"], "other": ["notes"]}


def test_a_spill_pointer_resolves_to_the_whole_result_bub_kept_in_the_sidecar(tapes: Path) -> None:
    text = "".join(f"row {i}: naïve ✓\n" for i in range(5000))  # several chunks, cut inside no character
    pointer = bub_spills(tapes, text)
    store = FileTapeStore(tapes)
    assert resolve_spill(pointer, store, OWNER) == text
    assert resolve_spill("a short result", store, OWNER) == "a short result"
    assert resolve_spill(pointer, store, "someone_else") == pointer  # no sidecar of that owner: the pointer stays


def test_a_spill_missing_a_chunk_does_not_resolve(tapes: Path) -> None:
    pointer = bub_spills(tapes, "x" * (3 * CHUNK), drop_chunk=1)
    handle = pointer.split("handle: ")[1].split("]")[0]
    assert spilled_text(FileTapeStore(tapes), OWNER, handle) is None
    assert resolve_spill(pointer, FileTapeStore(tapes), OWNER) == pointer


def test_read_tapes_lists_a_sidecars_rows_under_its_owner(tapes: Path) -> None:
    owner_tape(tapes, bub_spills(tapes, "y" * (2 * CHUNK)))
    frame = read_tapes(tapes.parent)
    assert set(frame["tape_name"]) == {OWNER}
    assert frame.groupby("sidecar").size().to_dict() == {"": 4, "spill": 6}
    assert set(frame.loc[frame["sidecar"] == "spill", "kind"]) == {"anchor", "tool_result", "event"}


def test_a_frame_gives_the_whole_text_a_spill_pointer_leads_to_and_keeps_the_pointer_as_written(tapes: Path) -> None:
    text = "".join(f"line {i} ✓\n" for i in range(4000))
    pointer = bub_spills(tapes, text)
    owner_tape(tapes, pointer)
    frame = read_tapes(tapes.parent)
    (row,) = frame[(frame["sidecar"] == "") & (frame["kind"] == "tool_result")].itertuples()
    assert row.spilled == text and row.payload == {"results": [pointer]}
    assert frame.loc[frame["kind"] != "tool_result", "spilled"].isna().all()


def test_bub_nb_tapes_list_shows_a_sidecar_under_its_owner(tapes: Path) -> None:
    owner_tape(tapes, bub_spills(tapes, "z" * CHUNK))
    env = {**os.environ, "BUB_HOME": str(tapes.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "bub_nb.cli", "tapes", "list"], capture_output=True, text=True, env=env, timeout=240
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(OWNER) and lines[0].endswith("sidecars: spill")
    assert "4 entries" in lines[0]


def test_the_class_overview_widget_shows_a_sidecar_as_part_of_its_owners_row(tapes: Path) -> None:
    from bub_nb.notebook.widgets import ClassOverview

    owner_tape(tapes, bub_spills(tapes, "w" * CHUNK))
    overview = ClassOverview(FileTapeStore(tapes))
    assert overview.frame["tape_name"].tolist() == [OWNER]
    assert "__sidecar__" not in overview.to_text() and "__sidecar__" not in overview.to_html()
