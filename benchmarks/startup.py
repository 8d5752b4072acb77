"""Start-up cost: ``import bub_nb`` and ``%load_ext bub_nb``, each timed in fresh interpreters.

Baselines come from the same run: importing a few standard-library modules every program loads,
and importing IPython and creating a shell (what any notebook pays before bub_nb is involved).

    python benchmarks/startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from _common import ms, print_table

_TIMED = """
import time
started = time.perf_counter()
{setup}
middle = time.perf_counter()
{body}
print(time.perf_counter() - middle, middle - started)
"""


def _fresh(setup: str, body: str, repeat: int) -> tuple[float, float]:
    """Median seconds of ``body`` (after ``setup``) and of ``setup``, each in a fresh interpreter."""
    bodies, setups = [], []
    for _ in range(repeat):
        command = [sys.executable, "-c", _TIMED.format(setup=setup, body=body)]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()
        bodies.append(float(out[0]))
        setups.append(float(out[1]))
    return statistics.median(bodies), statistics.median(setups)


def rows(repeat: int = 7) -> list[list[str]]:
    shell = "from IPython.core.interactiveshell import InteractiveShell\nip = InteractiveShell.instance()"
    imported, _ = _fresh("pass", "import bub_nb", repeat)
    stdlib, _ = _fresh("pass", "import json, pathlib, dataclasses, logging, re", repeat)
    loaded, ipython = _fresh(shell, "ip.run_line_magic('load_ext', 'bub_nb')", repeat)
    return [
        ["import bub_nb", ms(imported), f"{ms(stdlib)} (json, pathlib, logging…)", f"{imported / stdlib:.2f}x", ""],
        ["%load_ext bub_nb", ms(loaded), f"{ms(ipython)} (import IPython + shell)", f"{loaded / ipython:.2f}x", ""],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows(parser.parse_args().repeat))


if __name__ == "__main__":
    main()
