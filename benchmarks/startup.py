"""Start-up cost: ``import bub_nb`` and ``%load_ext bub_nb``, each in fresh interpreters.

Baselines come from the same run: a bare interpreter for the import, and ``import IPython`` plus
creating a shell for the extension (what any notebook pays before bub_nb is involved).

    python benchmarks/startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from report import Figure, table

_TIMED = """
import time
started = time.perf_counter()
{setup}
middle = time.perf_counter()
{body}
print((time.perf_counter() - middle) * 1000, (middle - started) * 1000)
"""


def _fresh(setup: str, body: str, repeat: int) -> tuple[float, float]:
    """Median ms of ``body`` (after ``setup``) and of ``setup``, each in a fresh interpreter."""
    bodies, setups = [], []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", _TIMED.format(setup=setup, body=body)], capture_output=True, text=True, check=True
        ).stdout.split()
        bodies.append(float(out[0]))
        setups.append(float(out[1]))
    return statistics.median(bodies), statistics.median(setups)


def figures(repeat: int = 7) -> list[Figure]:
    shell = "from IPython.core.interactiveshell import InteractiveShell\nip = InteractiveShell.instance()"
    import_ms, _ = _fresh("pass", "import bub_nb", repeat)
    json_ms, _ = _fresh("pass", "import json, pathlib, dataclasses", repeat)
    load_ms, ipython_ms = _fresh(shell, "ip.run_line_magic('load_ext', 'bub_nb')", repeat)
    return [
        Figure("import bub_nb", "-", import_ms, json_ms, baseline_name="import json+pathlib+dataclasses"),
        Figure("%load_ext bub_nb", "-", load_ms, ipython_ms, baseline_name="import IPython + shell"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    print(table(figures(parser.parse_args().repeat)))


if __name__ == "__main__":
    main()
