"""How many bub_nb modules one ``%%bub`` turn and one ``%handoff NAME --summarize`` run through.

Each is run once in a real ``InteractiveShell`` with the offline model to warm it up (imports, caches), then
again under ``sys.setprofile``. For every call into a bub_nb function the trace notes its module and the nearest
bub_nb module up the stack (the caller, skipping pluggy, asyncio and the standard library):

- *modules entered*: the bub_nb modules whose code ran;
- *moves*: the distinct steps from a function of one bub_nb module into a function of another, which is what a
  reader follows (a step taken once per streamed delta counts once);
- *back again*: those moves into a module already entered before;
- *calls across*: every call whose caller is another bub_nb module, however often it repeats.

Fewer of each means a turn that reads top to bottom. No timing is taken.

``--pairs`` lists the module pairs that carry the most moves, each with the functions behind its moves.

    python benchmarks/trace.py [--edges] [--pairs]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any


@dataclass
class Trace:
    """What ``sys.setprofile`` saw while it was on."""

    entered: list[str] = field(default_factory=list)
    moves: Counter[tuple[str, str]] = field(default_factory=Counter)
    steps: dict[tuple[str, str, str, str], bool] = field(default_factory=dict)

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = _bub_module(frame)
        if module is None:
            return
        seen = module in self.entered
        if not seen:
            self.entered.append(module)
        caller = frame.f_back
        while caller is not None and _bub_module(caller) is None:
            caller = caller.f_back
        source = _bub_module(caller) if caller is not None else None
        if source is not None and caller is not None and source != module:
            step = (source, caller.f_code.co_qualname, module, frame.f_code.co_qualname)
            self.steps.setdefault(step, seen)
            self.moves[(source, module)] += 1

    def line(self, label: str) -> str:
        moves, back = len(self.steps), sum(self.steps.values())
        calls = sum(self.moves.values())
        entered = len(self.entered)
        return f"{label:<24} {entered:>3} modules entered {moves:>4} moves ({back} back again) {calls:>5} calls across"

    def pairs(self) -> list[tuple[tuple[str, str], list[tuple[str, str]]]]:
        """The module pairs, those carrying the most moves first, each with its moves' caller and callee."""
        by_pair: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for source, caller, module, callee in self.steps:
            by_pair.setdefault((source, module), []).append((caller, callee))
        return sorted(by_pair.items(), key=lambda item: -len(item[1]))


def _bub_module(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__", "")
    return name if isinstance(name, str) and (name == "bub_nb" or name.startswith("bub_nb.")) else None


def traced(call: Callable[[], Any]) -> Trace:
    trace = Trace()
    sys.setprofile(trace.profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edges", action="store_true", help="also list every move between two modules, most first")
    parser.add_argument("--pairs", action="store_true", help="also list the module pairs carrying the most moves")
    args = parser.parse_args()
    started_in = os.getcwd()
    with tempfile.TemporaryDirectory() as home:
        os.environ["BUB_HOME"] = home
        os.environ["BUB_MODEL"] = "offline"
        os.chdir(home)
        from IPython.core.displaypub import CapturingDisplayPublisher
        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance()
        shell.display_pub = CapturingDisplayPublisher()

        def cell(source: str) -> None:
            with contextlib.redirect_stdout(io.StringIO()):  # the answers stream to stdout; only the counts print
                shell.run_cell(source, store_history=True).raise_error()

        cell("%load_ext bub_nb")
        cell("%%bub\nWarm up: what is a tape?")
        cell("%handoff warm-up --summarize")
        turn = traced(lambda: cell("%%bub\nWhat does an anchor keep?"))
        handoff = traced(lambda: cell("%handoff phase/2 --summarize"))
        cell("%unload_ext bub_nb")
        os.chdir(started_in)
    print(turn.line("one %%bub turn"))
    print(handoff.line("one --summarize handoff"))
    if args.edges:
        for label, trace in (("%%bub", turn), ("--summarize", handoff)):
            print(f"\n{label}: modules entered, in order")
            print("  " + "\n  ".join(trace.entered))
            print(f"\n{label}: moves")
            for (source, target), count in trace.moves.most_common():
                print(f"  {count:>5}  {source} -> {target}")
    if args.pairs:
        for label, trace in (("%%bub", turn), ("--summarize", handoff)):
            print(f"\n{label}: moves per module pair, most first")
            for (source, target), steps in trace.pairs():
                print(f"  {len(steps):>3}  {_short(source)} -> {_short(target)}")
                for caller, callee in steps:
                    print(f"         {caller} -> {callee}")


def _short(module: str) -> str:
    return module.removeprefix("bub_nb.")


if __name__ == "__main__":
    main()
