"""Turn overhead: the time bub_nb spends on one turn, with the model's own time taken out.

Each turn runs against a local OpenAI-compatible endpoint whose empty script answers at once. In the
same run the very request the turn sent is replayed through the same ``openai`` client; the turn's
wall time minus that call's time is what bub_nb costs: rebuilding the view from the tape, the system
prompt and memory zone, writing the turn's entries, the loop itself.

    python benchmarks/turn.py                 # a 1k-entry and a 1M-entry tape
    python benchmarks/turn.py --sizes 1000,100000 --turns 30

The tapes are working copies of ``corpus.py``'s tapes (turns, tool calls, memory zones and an anchor
about every 50 entries), kept under the temp folder (``--cache`` to move them). Each run appends its
turns after a fresh ``bench/run`` anchor, so runs never see each other's turns.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import corpus

import bub_nb  # noqa: F401  (gives tapes their view and memory zone)
from bub_nb.agent import Agent, OpenAIModel
from bub_nb.tape import FileTapeStore, Tape
from bub_nb.testing import OpenAICompatibleServer

TARGET_MS = 20.0


# -- the tapes ---------------------------------------------------------------------------------------------------


def build_tape(directory: Path, entries: int) -> Tape:
    """A working copy of the corpus tape of ``entries`` entries (turns get appended to it), made once."""
    name = f"bench-{entries}"
    path = directory / f"{name}.jsonl"
    if not path.exists():
        shutil.copyfile(corpus.cached_tape(entries), path)
    return Tape(name, FileTapeStore(directory))


# -- measuring ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One tape size in one mode: medians over the measured turns, in milliseconds."""

    entries: int
    mode: str
    turns: int
    first_turn_ms: float
    client_ms: float
    turn_ms: float
    overhead_ms: float
    overhead_p90_ms: float

    @property
    def ratio(self) -> float:
        return self.turn_ms / self.client_ms if self.client_ms else float("inf")


async def _client_call(client: Any, body: dict[str, Any], stream: bool) -> None:
    """The same request the turn sent, through the same client, consumed the same way."""
    request = {key: body[key] for key in ("model", "messages", "tools") if key in body}
    if not stream:
        await client.chat.completions.create(**request)
        return
    answer = await client.chat.completions.create(**request, stream=True, stream_options={"include_usage": True})
    async with answer:
        async for _ in answer:
            pass


async def measure(tape: Tape, server: OpenAICompatibleServer, size: int, turns: int, *, stream: bool) -> Row:
    """Run ``turns`` turns, each paired with the same request sent straight through the client.

    As in a notebook, every turn gets a new :class:`Agent` on the same tape. The pair's order
    alternates, so a drift in the machine's speed does not lean on either side.
    """
    model = OpenAIModel("bench", base_url=server.base_url, api_key="bench-key", max_retries=0)
    client = await model.client()
    tape.handoff("bench/run", {"summary": "benchmark run", "mode": "stream" if stream else "complete"})
    started = time.perf_counter()
    await Agent(tape, model).arun("Warm-up on a freshly opened tape", stream=stream)
    first_turn = time.perf_counter() - started
    for number in range(3):
        await Agent(tape, model).arun(f"Warm-up {number}", stream=stream)
    walls: list[float] = []
    bases: list[float] = []
    for number in range(turns):
        if number % 8 == 7:  # keep the rhythm of the tape: a handoff every few turns
            tape.handoff(f"bench/phase-{number}", {"summary": f"{number} turns measured"})
        prompt = f"Question {number}: what does the tape say about step {number}?"
        if number % 2:  # the same request as the last turn, sent first this time
            started = time.perf_counter()
            await _client_call(client, server.last_request, stream)
            bases.append(time.perf_counter() - started)
        started = time.perf_counter()
        await Agent(tape, model).arun(prompt, stream=stream)
        walls.append(time.perf_counter() - started)
        if not number % 2:
            started = time.perf_counter()
            await _client_call(client, server.last_request, stream)
            bases.append(time.perf_counter() - started)
    overheads = sorted((wall - base) * 1000 for wall, base in zip(walls, bases, strict=True))
    return Row(
        entries=size,
        mode="stream" if stream else "complete",
        turns=turns,
        first_turn_ms=first_turn * 1000,
        client_ms=statistics.median(bases) * 1000,
        turn_ms=statistics.median(walls) * 1000,
        overhead_ms=statistics.median(overheads),
        overhead_p90_ms=overheads[int(0.9 * (len(overheads) - 1))],
    )


def table(rows: list[Row]) -> str:
    lines = [
        f"{'tape entries':>12}  {'mode':<8}  {'turns':>5}  {'1st turn ms':>11}  {'client ms':>9}  {'turn ms':>8}  "
        f"{'bub_nb ms':>9}  {'p90 ms':>7}  {'turn/client':>11}"
    ]
    for row in rows:
        lines.append(
            f"{row.entries:>12,}  {row.mode:<8}  {row.turns:>5}  {row.first_turn_ms:>11.1f}  {row.client_ms:>9.2f}  "
            f"{row.turn_ms:>8.2f}  {row.overhead_ms:>9.2f}  {row.overhead_p90_ms:>7.2f}  {row.ratio:>10.2f}x"
        )
    return "\n".join(lines)


def figure_rows(rows: list[Row]) -> list[list[str]]:
    """The common benchmark table's rows: bub_nb's time per turn against the bare client call."""
    return [
        [
            f"{row.entries:,}: turn overhead ({row.mode})",
            f"{row.overhead_ms:.2f} ms",
            f"{row.client_ms:.2f} ms (client call)",
            f"{row.ratio:.2f}x turn/client",
            f"< {TARGET_MS:g} ms" if row.entries >= 1_000_000 else "",
        ]
        for row in rows
    ]


def measure_sizes(sizes: list[int], turns: int, cache: Path) -> list[Row]:
    cache.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    with OpenAICompatibleServer(model="bench") as server:
        for size in sizes:
            build_tape(cache, size).stats()  # index the tape once, as a kernel does when it opens it
            for stream in (False, True):
                fresh = build_tape(cache, size)  # a new Tape object: nothing read through it yet
                rows.append(asyncio.run(measure(fresh, server, size, turns, stream=stream)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,1000000", help="tape sizes in entries, comma-separated")
    parser.add_argument("--turns", type=int, default=60, help="measured turns per size and mode")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "bub_nb-bench")
    parser.add_argument("--profile", action="store_true", help="print where bub_nb spends a turn's time")
    args = parser.parse_args(argv)
    sizes = [int(text) for text in args.sizes.split(",")]
    if args.profile:
        with OpenAICompatibleServer(model="bench") as server:
            for size in sizes:
                for stream in (False, True):
                    _profile(build_tape(args.cache, size), server, args.turns, stream)
    rows = measure_sizes(sizes, args.turns, args.cache)
    print(table(rows))
    biggest = max(rows, key=lambda row: row.entries)
    worst = max(row.overhead_ms for row in rows if row.entries == biggest.entries)
    verdict = "within" if worst < TARGET_MS else "OVER"
    print(f"\nbub_nb per turn at {biggest.entries:,} entries: {worst:.2f} ms ({verdict} the {TARGET_MS:g} ms target)")
    return 0 if worst < TARGET_MS else 1


def _profile(tape: Tape, server: OpenAICompatibleServer, turns: int, stream: bool) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(asyncio.run, measure(tape, server, len(tape), turns, stream=stream))
    stats = pstats.Stats(profiler, stream=sys.stderr)
    stats.sort_stats("cumulative").print_stats(r"bub_nb/(agent|context|memory|tape)", 30)


if __name__ == "__main__":
    raise SystemExit(main())
