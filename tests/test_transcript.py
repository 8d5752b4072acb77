"""The Markdown transcript of a tape: what each run and each memory save said, nothing made up."""

from __future__ import annotations

import shutil
from pathlib import Path

import bub_nb  # noqa: F401  (registers Tape.memory)
from bub_nb.tape import open_tape
from bub_nb.tape.report import transcript_markdown

BUB_TAPE = Path(__file__).parent.parent / "examples/data/bub-home/tapes/494727f0da168296__0898b22730d57afc.jsonl"


def test_a_bub_tape_run_without_a_time_shows_no_none(tmp_path: Path) -> None:
    transcript = transcript_markdown(open_tape(shutil.copy(BUB_TAPE, tmp_path)))
    runs = [line for line in transcript.splitlines() if line.startswith("<sub>run ")]
    assert runs and all("None" not in line and " ms" not in line for line in runs)
    assert "<sub>run ok · gpt-4o-mini, 2560 tokens</sub>" in runs


def test_a_run_with_a_time_shows_it(tmp_path: Path) -> None:
    tape = open_tape("timed", home=tmp_path)
    tape.append_event("run", {"status": "ok", "model": "offline", "elapsed_ms": 12.4, "usage": None})
    assert "<sub>run ok · offline · 12 ms</sub>" in transcript_markdown(tape)


def test_the_transcript_shows_what_memory_saved(tmp_path: Path) -> None:
    tape = open_tape("memory", home=tmp_path)
    tape.memory.save_long_term("Prefers pandas")
    tape.memory.append_daily("met the class", date="2026-02-10")
    transcript = transcript_markdown(tape)
    assert "🧠 *memory.long_term* · #" in transcript and "> Prefers pandas" in transcript
    assert "🧠 *memory.daily* 2026-02-10" in transcript and "> met the class" in transcript
    assert "🧠 *memory/seal* v2" in transcript
