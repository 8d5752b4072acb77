"""What a streamed answer costs the cell that shows it: the display's redraws against re-rendering everything.

    python benchmarks/streaming.py [--chars 100000] [--delta 40]

An answer of ``--chars`` characters arrives in deltas of ``--delta`` characters, one every 10 ms of a simulated
clock. The baseline is what a cell did before: every 80 ms the whole answer so far rendered again. bub_nb's
``AnswerDisplay`` redraws no closer than 80 ms and only once an eighth more text arrived, and shows at most
``SHOWN_LIMIT`` characters, so its redraws add up to a few times the answer's length. Both sides render with the
same sanitising renderer in the same run; the figures are the characters rendered and the time it took.
"""

from __future__ import annotations

import argparse
import time
import types
from typing import Any

from _common import load, ms, print_table

import bub_nb.notebook.display as shown_answer
from bub_nb.markup import markdown_html

STEP = 0.01  # seconds of the simulated clock between two deltas
TARGET_RATIO = 0.1  # bub_nb's rendering against the baseline's


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def deltas(chars: int, delta: int) -> list[str]:
    line = "Some **words** of an answer, with `code` and a [link](https://example.org). "
    text = (line * (chars // len(line) + 1))[:chars]
    return [text[i : i + delta] for i in range(0, len(text), delta)]


def baseline(parts: list[str]) -> tuple[int, float]:
    """Every 80 ms of the clock, the whole answer so far rendered again."""
    rendered, text, last, now = 0, "", -1.0, 0.0
    started = time.perf_counter()
    for part in parts:
        text += part
        now += STEP
        if now - last >= 0.08:
            last = now
            rendered += len(text)
            markdown_html(text)
    return rendered, time.perf_counter() - started


def bub_nb_display(parts: list[str]) -> tuple[int, float]:
    """``AnswerDisplay`` on a rich front end, its redraws counted instead of sent."""
    clock, sent = Clock(), [0]

    def update(shown: Any, **_: Any) -> None:
        sent[0] += len(shown.plain)

    saved = shown_answer.time, shown_answer.update_display, shown_answer.display
    shown_answer.time = types.SimpleNamespace(monotonic=clock.monotonic)  # type: ignore[assignment]
    shown_answer.update_display = update  # type: ignore[assignment]
    shown_answer.display = lambda *a, **k: types.SimpleNamespace(display_id="bench")  # type: ignore[assignment]
    try:
        answer = shown_answer.AnswerDisplay(types.SimpleNamespace(kernel=object()), stream=True)
        started = time.perf_counter()
        for part in parts:
            clock.now += STEP
            answer.add(part)
        return sent[0], time.perf_counter() - started
    finally:
        shown_answer.time, shown_answer.update_display, shown_answer.display = saved


def rows(chars: int, delta: int) -> list[list[str]]:
    parts = deltas(chars, delta)
    base_chars, base_seconds = baseline(parts)
    ours_chars, ours_seconds = bub_nb_display(parts)
    return [
        [
            f"{chars:,} characters in {len(parts):,} deltas: characters rendered",
            f"{ours_chars:,}",
            f"{base_chars:,} (whole answer every 80 ms)",
            f"{ours_chars / base_chars:.4f}x",
            f"< {TARGET_RATIO:g}x {'✓' if ours_chars / base_chars < TARGET_RATIO else '✗'}",
        ],
        [
            "time rendering",
            ms(ours_seconds),
            ms(base_seconds),
            f"{ours_seconds / base_seconds:.4f}x",
            f"< {TARGET_RATIO:g}x {'✓' if ours_seconds / base_seconds < TARGET_RATIO else '✗'}",
        ],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=100_000, help="characters in the answer")
    parser.add_argument("--delta", type=int, default=40, help="characters per streamed delta")
    args = parser.parse_args()
    print(f"before: {load()}")
    table = rows(args.chars, args.delta)
    print(f"after: {load()}")
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], table)


if __name__ == "__main__":
    main()
