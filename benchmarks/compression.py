"""Compression by summaries that cite: what a long session sends, against the full history it stands for.

A 200-turn session on the offline model, in two shapes:

- with a summarizing handoff every 10 turns: the view the next turn sends (system prompt, the last anchor
  with its summary, the current phase) and the ``phases`` view (every earlier phase's summary, then the
  current phase) against the full history (system prompt and every message); and
  one phase's summary (the anchor's state) against the phase it replaces; and what summarizing cost
  (the ``summary`` events' tokens) against what the turns cost (the ``run`` events');
- with no handoff and a small context window, so the session overflows again and again: each retried
  request (system prompt, the overflow anchor with its summary, the prompt) against the full history at
  that moment.

In the first session each summary's retention report (``bub_nb.retention``) says what share of its phase's
numbers and file paths (and identifiers, commands, decisions) the summary kept; and a retention report for a
1,000-entry phase is timed against ``to_frame()`` of the same phase. Beside them stand the figures deja-vu
published for compaction in another tool (58 transcripts, 43 compactions): a different corpus, real coding
sessions rather than this generated one, so the two sets of figures say what each measured, not which is better.

Token counts are bub_nb's offline estimates (``count_messages_tokens``), the same on both sides of a ratio.

    python benchmarks/compression.py [--turns 200] [--every 10] [--window 1500]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile

from _common import best_of_pairs, print_table

from bub_nb import Agent, open_tape
from bub_nb.agent.models import OfflineModel
from bub_nb.context import FULL, build_view
from bub_nb.context.artifacts import KINDS
from bub_nb.context.retention import anchor_retention
from bub_nb.context.tokens import count_messages_tokens, count_text_tokens
from bub_nb.tape import Tape

TOPICS = ("sales", "regions", "returns", "prices", "stock", "staff", "weather", "ads")
DEJA_VU = {"decision": 0.77, "path": 0.098, "command": 0.002, "number": 0.019}
"""Kept shares deja-vu published for compaction (58 transcripts, 43 compactions); identifiers and URLs not given."""


def prompt(turn: int) -> str:
    topic = TOPICS[turn % len(TOPICS)]
    return (
        f"Step {turn}: look at the {topic} table in data/{topic}/month-{turn % 12 + 1}.csv; "
        f"it loaded {turn * 37 % 900 + 100} rows in {turn * 13 % 80 + 5} ms. "
        f"We decided to keep the {topic} outliers and note them. Next, run `python clean.py --month {turn % 12 + 1}` "
        f"and compare with step {turn - 1}."
    )


def request_tokens(agent: Agent, mode: object) -> int:
    view = build_view(agent.tape, mode)
    return count_messages_tokens([{"role": "system", "content": agent.system_prompt()}, *view.messages])


def summarized_session(turns: int, every: int, home: str) -> dict[str, float]:
    tape = open_tape("compression-handoffs", home=home)
    agent = Agent(tape, model="offline")
    state_tokens: list[int] = []
    phase_tokens: list[int] = []
    kept: dict[str, list[tuple[int, int]]] = {kind: [] for kind in KINDS}
    for turn in range(1, turns + 1):
        agent.run(prompt(turn))
        if turn % every == 0:
            phase = count_messages_tokens(build_view(tape).messages)
            _, anchor, _ = agent.handoff(f"phase/{turn // every}", summarize=True)
            phase_tokens.append(phase)
            state_tokens.append(count_text_tokens(json.dumps(anchor.payload["state"], ensure_ascii=False)))
            for kind, counts in anchor_retention(tape, anchor.id).counts().items():
                kept[kind].append(counts)
    agent.run(prompt(turns + 1))
    shares = {kind: [k / t for k, t in counts if t] for kind, counts in kept.items()}
    return {
        **{
            f"kept_{kind}": sum(k for k, _ in counts) / max(1, sum(t for _, t in counts))
            for kind, counts in kept.items()
        },
        **{f"min_{kind}": min(values, default=float("nan")) for kind, values in shares.items()},
        **{f"total_{kind}": sum(t for _, t in counts) for kind, counts in kept.items()},
        "state_share_max": max(s / p for s, p in zip(state_tokens, phase_tokens, strict=True)),
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


def retention_timing(size: int, home: str) -> tuple[float, float]:
    """Best seconds of a retention report for a ``size``-entry phase, and of ``to_frame()`` of that phase."""
    tape = open_tape("compression-retention", home=home)
    tape.handoff("big/start")
    for turn in range(size // 2):
        tape.append_message({"role": "user", "content": prompt(turn + 1)})
        tape.append_message({"role": "assistant", "content": f"Done: see out/step-{turn}.parquet, run `make step`."})
    first, last = tape.last_anchor().id + 1, tape.last_id  # type: ignore[union-attr]
    summary = f"Kept the outliers of data/sales/month-1.csv: 137 rows in 18 ms [#{first}]."
    tape.handoff("big/end", {"summary": summary, "next_steps": "", "sources": [first], "range": [first, last]})
    phase = tape.query().between_anchors("big/start", "big/end")
    return best_of_pairs(lambda: anchor_retention(tape, "big/end"), phase.to_frame, runs=7)


def _usage(tape: Tape, name: str) -> int:
    total = 0
    for entry in tape.read(kinds=("event",)):
        data = entry.payload.get("data")
        if entry.name == name and isinstance(data, dict) and isinstance(data.get("usage"), dict):
            total += int(data["usage"].get("total_tokens") or 0)
    return total


def rows(turns: int = 200, every: int = 10, window: int = 1500) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as home:
        kept = summarized_session(turns, every, home)
        overflow = overflowing_session(turns, window, home)
        report_s, frame_s = retention_timing(1000, home)
    return [
        [
            f"{turns} turns, summarizing handoff every {every}: next request",
            f"{kept['view']:.0f} tok",
            f"{kept['full']:.0f} tok (full history)",
            f"{kept['view'] / kept['full']:.3f}x",
            "",
        ],
        [
            f"{turns} turns, summarizing handoff every {every}: phases view",
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
            f"{turns} turns: summarizing cost",
            f"{kept['summary_cost']:.0f} tok",
            f"{kept['run_cost']:.0f} tok (the turns)",
            f"{kept['summary_cost'] / kept['run_cost']:.3f}x",
            "",
        ],
        [
            f"{turns} turns, window {window}: summarized retry ({overflow['overflows']:.0f} overflows)",
            f"{overflow['retry']:.0f} tok",
            f"{overflow['full']:.0f} tok (full history)",
            f"{overflow['retry'] / overflow['full']:.3f}x (median {overflow['median_ratio']:.3f}x)",
            "",
        ],
        [
            f"one {every}-turn phase: its summary, the largest share",
            f"{kept['state_share_max']:.3f}x",
            "",
            "",
            "<= 0.2x",
        ],
        *[
            [
                f"offline summary kept: {kind}s ({kept[f'total_{kind}']:.0f} over {turns // every} phases)",
                f"{kept[f'kept_{kind}']:.1%} (worst phase {kept[f'min_{kind}']:.1%})"
                if kept[f"total_{kind}"]
                else "none",
                f"{DEJA_VU[kind]:.1%} (deja-vu, other corpus)" if kind in DEJA_VU else "",
                "",
                ">= 90% each phase" if kind in ("number", "path") else "",
            ]
            for kind in KINDS
        ],
        [
            "retention report, 1,000-entry phase",
            f"{report_s * 1000:.1f} ms",
            f"{frame_s * 1000:.1f} ms (to_frame of the phase)",
            f"{report_s / frame_s:.2f}x",
            "< 50 ms",
        ],
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--every", type=int, default=10, help="turns between summarizing handoffs")
    parser.add_argument("--window", type=int, default=1500, help="the offline model's window in the overflow run")
    args = parser.parse_args(argv)
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows(args.turns, args.every, args.window))
    print(
        "\ndeja-vu's figures were published for compaction in another tool over 58 real coding transcripts and 43 "
        "compactions;\nthis corpus is generated, so the corpora differ and neither column ranks the other."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
