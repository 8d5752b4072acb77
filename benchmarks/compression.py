"""Compression by summaries that cite: what a long session sends, against the full history it stands for.

A 200-turn session on the offline model, in two shapes:

- with a summarising handoff every 10 turns: the view the next turn sends (system prompt, the last anchor
  with its summary, the current phase) and the ``phases`` view (every earlier phase's summary, then the
  current phase) against the full history (system prompt and every message); and
  one phase's summary (the anchor's state) against the phase it replaces; and what summarising cost
  (the ``summary`` events' tokens) against what the turns cost (the ``run`` events');
- with no handoff and a small context window, so the session overflows again and again: each retried
  request (system prompt, the overflow anchor with its summary, the prompt) against the full history at
  that moment.

Token counts are bub_nb's offline estimates (``count_messages_tokens``), the same on both sides of a ratio.

    python benchmarks/compression.py [--turns 200] [--every 10] [--window 1500]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile

from _common import print_table

from bub_nb import Agent, open_tape
from bub_nb.agent.models import OfflineModel
from bub_nb.context import FULL, build_view
from bub_nb.context.tokens import count_messages_tokens, count_text_tokens
from bub_nb.tape import Tape

TOPICS = ("sales", "regions", "returns", "prices", "stock", "staff", "weather", "ads")


def prompt(turn: int) -> str:
    topic = TOPICS[turn % len(TOPICS)]
    return (
        f"Step {turn}: look at the {topic} table for month {turn % 12 + 1}. "
        f"We decided to keep the {topic} outliers and note them. Next, compare with step {turn - 1}."
    )


def request_tokens(agent: Agent, mode: object) -> int:
    view = build_view(agent.tape, mode)
    return count_messages_tokens([{"role": "system", "content": agent.system_prompt()}, *view.messages])


def summarised_session(turns: int, every: int, home: str) -> dict[str, float]:
    tape = open_tape("compression-handoffs", home=home)
    agent = Agent(tape, model="offline")
    state_tokens: list[int] = []
    phase_tokens: list[int] = []
    for turn in range(1, turns + 1):
        agent.run(prompt(turn))
        if turn % every == 0:
            phase = count_messages_tokens(build_view(tape).messages)
            _, anchor, _ = agent.handoff(f"phase/{turn // every}", summarize=True)
            phase_tokens.append(phase)
            state_tokens.append(count_text_tokens(json.dumps(anchor.payload["state"], ensure_ascii=False)))
    agent.run(prompt(turns + 1))
    return {
        "view": request_tokens(agent, agent.context),
        "phases": request_tokens(agent, "phases"),
        "full": request_tokens(agent, FULL),
        "state": statistics.mean(state_tokens),
        "phase": statistics.mean(phase_tokens),
        "summary_cost": _usage(tape, "summary"),
        "run_cost": _usage(tape, "run"),
    }


def overflowing_session(turns: int, window: int, home: str) -> dict[str, float]:
    tape = open_tape("compression-overflow", home=home)
    agent = Agent(tape, model=OfflineModel(context_window=window))
    ratios: list[float] = []
    retried: list[tuple[int, int]] = []
    for turn in range(1, turns + 1):
        done = agent.run(prompt(turn))
        if done.notices and done.view is not None:
            sent = count_messages_tokens([{"role": "system", "content": agent.system_prompt()}, *done.view.messages])
            full = request_tokens(agent, FULL)
            retried.append((sent, full))
            ratios.append(sent / full)
    if not ratios:
        raise SystemExit(f"no overflow in {turns} turns with a {window}-token window")
    sent, full = retried[-1]  # the last overflow: the longest history a retry stood for
    return {"overflows": len(ratios), "retry": sent, "full": full, "median_ratio": statistics.median(ratios)}


def _usage(tape: Tape, name: str) -> int:
    total = 0
    for entry in tape.read(kinds=("event",)):
        data = entry.payload.get("data")
        if entry.name == name and isinstance(data, dict) and isinstance(data.get("usage"), dict):
            total += int(data["usage"].get("total_tokens") or 0)
    return total


def rows(turns: int = 200, every: int = 10, window: int = 1500) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as home:
        kept = summarised_session(turns, every, home)
        overflow = overflowing_session(turns, window, home)
    return [
        [
            f"{turns} turns, summarising handoff every {every}: next request",
            f"{kept['view']:.0f} tok",
            f"{kept['full']:.0f} tok (full history)",
            f"{kept['view'] / kept['full']:.3f}x",
            "",
        ],
        [
            f"{turns} turns, summarising handoff every {every}: phases view",
            f"{kept['phases']:.0f} tok",
            f"{kept['full']:.0f} tok (full history)",
            f"{kept['phases'] / kept['full']:.3f}x",
            "",
        ],
        [
            f"one {every}-turn phase: its summary (anchor state)",
            f"{kept['state']:.0f} tok",
            f"{kept['phase']:.0f} tok (the phase)",
            f"{kept['state'] / kept['phase']:.3f}x",
            "",
        ],
        [
            f"{turns} turns: summarising cost",
            f"{kept['summary_cost']:.0f} tok",
            f"{kept['run_cost']:.0f} tok (the turns)",
            f"{kept['summary_cost'] / kept['run_cost']:.3f}x",
            "",
        ],
        [
            f"{turns} turns, window {window}: summarised retry ({overflow['overflows']:.0f} overflows)",
            f"{overflow['retry']:.0f} tok",
            f"{overflow['full']:.0f} tok (full history)",
            f"{overflow['retry'] / overflow['full']:.3f}x (median {overflow['median_ratio']:.3f}x)",
            "",
        ],
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--every", type=int, default=10, help="turns between summarising handoffs")
    parser.add_argument("--window", type=int, default=1500, help="the offline model's window in the overflow run")
    args = parser.parse_args(argv)
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows(args.turns, args.every, args.window))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
