"""One row per figure, and the table every benchmark prints: a value against a baseline from the same run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Figure:
    """A measured value beside the baseline it is judged against (both in the same unit)."""

    name: str
    size: str
    value: float
    baseline: float
    unit: str = "ms"
    baseline_name: str = ""
    target: str = ""
    met: bool | None = None

    @property
    def ratio(self) -> float:
        return self.value / self.baseline if self.baseline else float("nan")

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "ratio": self.ratio}


def median_ms(action: Callable[[], object], repeat: int = 21, warmup: int = 2) -> float:
    """The median wall time of ``action`` in milliseconds."""
    for _ in range(warmup):
        action()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def table(figures: Sequence[Figure]) -> str:
    """A fixed-width table: figure, size, value, baseline, ratio, target and whether it is met."""
    header = ("figure", "size", "value", "baseline", "ratio", "target", "")
    rows = [
        (
            f.name,
            f.size,
            f"{f.value:,.2f} {f.unit}",
            f"{f.baseline:,.2f} {f.unit} ({f.baseline_name})" if f.baseline_name else f"{f.baseline:,.2f} {f.unit}",
            f"{f.ratio:,.2f}x",
            f.target,
            "" if f.met is None else ("ok" if f.met else "MISSED"),
        )
        for f in figures
    ]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)) for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)
