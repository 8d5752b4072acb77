"""What looking at the notebook costs: ``notebook.inspect`` on a DataFrame against pandas' own summaries.

    python benchmarks/kernel_tools.py --rows 1000000

The baseline is what a person would type to see the same things: ``df.dtypes``, ``df.isna().sum()``,
``df.head()`` and ``df.describe()``. bub_nb adds a worker thread per step (so a slow ``__repr__``
cannot hold the turn) and the text; the target bounds that overhead.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from _common import best_of_pairs, print_table

from bub_nb.agent.kernel_tools import describe_value, variables_text

TARGET_RATIO = 1.5  # inspect / pandas' summaries
TARGET_VARS_MS = 500.0  # notebook.vars over 1,000 variables


def _frame(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    columns = {f"x{i}": rng.normal(size=rows) for i in range(8)}
    return pd.DataFrame(columns | {"label": rng.choice(["a", "b", "c"], rows)})


def _summaries(frame: pd.DataFrame) -> None:
    frame.dtypes.to_string()
    frame.isna().sum().to_string()
    frame.head(5).to_string()
    frame.describe().to_string()


def rows(size: int = 1_000_000) -> list[list[str]]:
    frame = _frame(size)
    inspect, baseline = best_of_pairs(lambda: describe_value(frame, "df"), lambda: _summaries(frame), runs=5)
    ratio = inspect / baseline
    namespace = {f"v{i}": list(range(i % 50)) for i in range(1000)}
    listing, _ = best_of_pairs(lambda: variables_text(namespace), lambda: None, runs=5)
    return [
        [
            f"notebook.inspect, DataFrame {size:,}×9",
            f"{inspect * 1000:.0f} ms",
            f"{baseline * 1000:.0f} ms (dtypes, nulls, head, describe)",
            f"{ratio:.2f}x",
            f"≤ {TARGET_RATIO:g}x {'✓' if ratio <= TARGET_RATIO else '✗'}",
        ],
        [
            "notebook.vars, 1,000 variables",
            f"{listing * 1000:.0f} ms",
            "",
            "",
            f"≤ {TARGET_VARS_MS:g} ms {'✓' if listing * 1000 <= TARGET_VARS_MS else '✗'}",
        ],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows(parser.parse_args().rows))


if __name__ == "__main__":
    main()
