"""What a handoff keeps, measured on real dialogue: evidence carried by each view, beside baselines at equal tokens.

A multi-session dialogue set whose questions name their evidence turns (LoCoMo's JSON layout: ``speaker_a``,
``speaker_b``, ``session_N`` with turns ``{speaker, dia_id, text}``, ``session_N_date_time`` and ``qa`` with
``question``, ``answer``, ``category`` and ``evidence``) is replayed onto one tape per conversation: each session
is a phase (a line with its date, then every turn, the first speaker as ``user`` and the second as ``assistant``,
each turn's text after its speaker's name), closed by a summarizing handoff on the offline model
(``Agent.handoff("session/N", summarize=True)``). After the last handoff, for every question (all but category 5,
whose answers are by design absent from the dialogue), the view the next turn would send is built in each mode,
with the question as the turn's prompt, and asked:

- **evidence carried**: for each evidence turn, whether the view holds its text or cites its entry (``[#id]``, or a
  range of at most three entries), following the citations of carried-over lines back through the anchors that
  carried them;
- **answer carried**: whether the answer string appears in the view (case and spacing aside).

Beside every mode stand baselines built in the same run from the same dialogue **at the same tokens** as that
mode's view, question by question: the recency window (the last messages that fit), observation masking (the
user's words only, newest first, that fit), and no history and the full history. The generated corpus of
``benchmarks/compression.py`` is measured the same way (one question per earlier turn: the row count it loaded).

The data set is read from the path given (a folder of JSON files or a zip of them); it is never copied.
Token counts are bub_nb's offline estimates, the same on every side of a ratio.

    python benchmarks/handoff_quality.py DATA [--conversations N] [--modes last,phases,...] [--plot PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import print_table

from bub_nb import Agent, open_tape
from bub_nb.context import build_view
from bub_nb.context.tokens import count_message_tokens
from bub_nb.errors import ContextError
from bub_nb.tape import Tape
from bub_nb.tape.citations import CITATION, find_citations

MODES = ("last", "phases", "recall", "last+recall")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial", 0: "generated"}
RANGE_LIMIT = 3
"""A cited range counts as carrying its entries only when it spans at most this many (a wide range says nothing)."""
_CARRIED = re.compile(r"^(?:[-*]\s*)?(?:Carried over:\s*)+", re.I)


def _flat(text: str) -> str:
    return " ".join(text.casefold().split())


@dataclass
class Question:
    text: str
    answer: str
    category: int
    evidence: tuple[int, ...]  # the entry ids of the evidence turns


@dataclass
class Replayed:
    """One conversation on its tape: its dialogue messages in order (with their entries), and its questions."""

    name: str
    tape: Tape
    messages: list[dict[str, Any]] = field(default_factory=list)
    message_ids: list[int] = field(default_factory=list)
    texts: dict[int, str] = field(default_factory=dict)  # entry id -> the turn's own text
    questions: list[Question] = field(default_factory=list)

    def add(self, role: str, content: str, own: str | None = None) -> int:
        message = {"role": role, "content": content}
        entry = self.tape.append_message(message)
        self.messages.append(message)
        self.message_ids.append(entry.id)
        self.texts[entry.id] = own if own is not None else content
        return entry.id


# -- the data set ----------------------------------------------------------------------------------------------


def conversations(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The conversations at ``path``: a folder of JSON files or a zip of them, by file name."""
    found: list[tuple[str, dict[str, Any]]] = []
    if path.is_dir():
        for file in sorted(path.rglob("*.json")):
            found.append((file.stem, json.loads(file.read_text())))
        for file in sorted(path.rglob("*.zip")):
            found += conversations(file)
    elif zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for name in sorted(n for n in archive.namelist() if n.endswith(".json")):
                found.append((Path(name).stem, json.loads(archive.read(name))))
    else:
        found.append((path.stem, json.loads(path.read_text())))
    return [(name, data) for name, data in found if isinstance(data, dict) and "qa" in data]


def _sessions(data: dict[str, Any]) -> list[int]:
    numbers = [int(key.split("_")[1]) for key in data if re.fullmatch(r"session_\d+", key)]
    return sorted(n for n in numbers if data.get(f"session_{n}"))


def replay(name: str, data: dict[str, Any], home: str) -> Replayed:
    """Write the conversation onto a tape, one phase per session, each closed by a summarizing handoff."""
    tape = open_tape(f"dialogue-{name}", home=home)
    agent = Agent(tape, model="offline")
    tape.ensure_bootstrap_anchor()
    done = Replayed(name, tape)
    first = data.get("speaker_a")
    by_dia: dict[str, int] = {}
    for number in _sessions(data):
        when = data.get(f"session_{number}_date_time") or ""
        done.add("user", f"Session {number}, {when}.".replace(", .", "."))
        for turn in data[f"session_{number}"]:
            text = turn.get("text") or ""
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {turn['blip_caption']}]"
            role = "user" if turn.get("speaker") == first else "assistant"
            by_dia[turn["dia_id"]] = done.add(role, f"{turn.get('speaker')}: {text}", text)
        agent.handoff(f"session/{number}", summarize=True)
    for qa in data["qa"]:
        if qa.get("category") == 5 or "answer" not in qa:
            continue
        evidence = tuple(by_dia[d] for d in _dia_ids(qa.get("evidence") or ()) if d in by_dia)
        if evidence:
            done.questions.append(Question(qa["question"], str(qa["answer"]), int(qa["category"]), evidence))
    return done


def _dia_ids(evidence: Iterable[str]) -> list[str]:
    # a few labels hold two ids in one string ("D8:6; D9:17")
    return [part for item in evidence for part in re.findall(r"D\d+:\d+", str(item))]


# -- the generated corpus --------------------------------------------------------------------------------------


def generated(home: str, turns: int = 200, every: int = 10) -> Replayed:
    """``benchmarks/compression.py``'s session, one question per earlier turn: how many rows its table loaded."""
    from compression import TOPICS, prompt

    tape = open_tape("generated-corpus", home=home)
    agent = Agent(tape, model="offline")
    done = Replayed("generated", tape)
    for turn in range(1, turns + 1):
        agent.run(prompt(turn))
        user = next(e for e in tape.iter_reverse() if e.kind == "message" and e.payload.get("role") == "user")
        rows = f"{turn * 37 % 900 + 100} rows"
        topic = TOPICS[turn % len(TOPICS)]
        done.questions.append(
            Question(f"How many rows did the {topic} table of step {turn} load?", rows, 0, (user.id,))
        )
        if turn % every == 0:
            agent.handoff(f"phase/{turn // every}", summarize=True)
    for entry in tape.read(kinds=("message",)):
        message = entry.payload
        if message.get("role") in ("user", "assistant") and isinstance(message.get("content"), str):
            done.messages.append({"role": message["role"], "content": message["content"]})
            done.message_ids.append(entry.id)
            done.texts[entry.id] = message["content"]
    return done


# -- what a view carries ---------------------------------------------------------------------------------------


def _ids(line: str) -> set[int]:
    found: set[int] = set()
    for citation in find_citations(line):
        if citation.last - citation.first < RANGE_LIMIT:
            found.update(range(citation.first, citation.last + 1))
    return found


def _key(line: str) -> str:
    return _flat(_CARRIED.sub("", CITATION.sub("", line.strip())))


def anchor_lines(tape: Tape) -> dict[int, dict[str, set[int]]]:
    """For each anchor, its summary's lines (citations aside) and the entries each cites, anchors followed back."""
    chains: dict[int, dict[str, set[int]]] = {}
    for anchor in tape.read(kinds=("anchor",)):
        state = anchor.payload.get("state")
        summary = state.get("summary") if isinstance(state, dict) else None
        lines: dict[str, set[int]] = {}
        for line in (summary or "").splitlines():
            lines[_key(line)] = resolve(line, chains)
        chains[anchor.id] = lines
    return chains


def resolve(line: str, chains: dict[int, dict[str, set[int]]]) -> set[int]:
    """The entries ``line`` cites, a cited anchor replaced by what the same line cited in that anchor's summary."""
    ids = set()
    for cited in _ids(line):
        ids |= chains[cited].get(_key(line), {cited}) if cited in chains else {cited}
    return ids


@dataclass
class Carried:
    evidence: float  # share of the question's evidence turns carried
    answer: bool
    tokens: int


def carried(messages: Sequence[dict[str, Any]], q: Question, run: Replayed, chains: Any, tokens: int) -> Carried:
    text = "\n".join(str(m.get("content") or "") for m in messages)
    flat = _flat(text)
    cited: set[int] = set()
    if chains is not None:
        for line in text.splitlines():
            if "[#" in line:
                cited |= resolve(line, chains)
    hits = sum(1 for e in q.evidence if e in cited or _flat(run.texts[e]) in flat)
    return Carried(hits / len(q.evidence), _flat(q.answer) in flat, tokens)


def mode_view(run: Replayed, mode: str, prompt: str) -> list[dict[str, Any]] | None:
    """The messages the next turn sends in ``mode`` for ``prompt`` (the prompt itself left out), or ``None`` when
    this version of bub_nb has no such mode."""
    try:
        # the prompt only where the mode recalls: an older bub_nb has no prompt= to take
        view = build_view(run.tape, mode, prompt=prompt) if "recall" in mode else build_view(run.tape, mode)
    except (ContextError, TypeError):
        return None
    return list(view.messages)


class Baselines:
    """The recency window, observation masking and the full history of one conversation, at any token count."""

    def __init__(self, run: Replayed) -> None:
        self.run = run
        self.tokens = [count_message_tokens(m) for m in run.messages]
        self.full = sum(self.tokens)

    def _newest(self, budget: int, users_only: bool) -> list[int]:
        kept, used = [], 0
        for index in range(len(self.run.messages) - 1, -1, -1):
            if users_only and self.run.messages[index]["role"] != "user":
                continue
            if used + self.tokens[index] > budget:
                break
            used += self.tokens[index]
            kept.append(index)
        return kept

    def carried(self, q: Question, budget: int, *, users_only: bool = False) -> Carried:
        kept = self._newest(budget, users_only)
        ids = {self.run.message_ids[i] for i in kept}
        text = _flat("\n".join(self.run.messages[i]["content"] for i in kept))
        hits = sum(1 for e in q.evidence if e in ids)
        return Carried(hits / len(q.evidence), _flat(q.answer) in text, sum(self.tokens[i] for i in kept))


# -- the run ---------------------------------------------------------------------------------------------------


@dataclass
class Tally:
    evidence: list[float] = field(default_factory=list)
    answers: list[bool] = field(default_factory=list)
    tokens: list[float] = field(default_factory=list)  # share of the full history

    def add(self, found: Carried, full: int) -> None:
        self.evidence.append(found.evidence)
        self.answers.append(found.answer)
        self.tokens.append(found.tokens / full)

    def figures(self) -> tuple[float, float, float]:
        n = max(1, len(self.evidence))
        return sum(self.evidence) / n, sum(self.answers) / n, sum(self.tokens) / n


def measure(runs: Sequence[Replayed], modes: Sequence[str]) -> dict[tuple[str, str, str], Tally]:
    """Tallies keyed by (corpus, category, strategy), strategy being a mode or a baseline at that mode's tokens."""
    tallies: dict[tuple[str, str, str], Tally] = defaultdict(Tally)
    for run in runs:
        corpus = "generated" if run.name == "generated" else "dialogue"
        base = Baselines(run)
        chains = anchor_lines(run.tape)
        fixed = {mode: mode_view(run, mode, "") for mode in modes if "recall" not in mode}
        for q in run.questions:
            cats = ("all", CATEGORIES.get(q.category, str(q.category)))
            for cat in cats:
                tallies[(corpus, cat, "no history")].add(Carried(0.0, False, 0), base.full)
                tallies[(corpus, cat, "full history")].add(base.carried(q, base.full), base.full)
            for mode in modes:
                messages = fixed[mode] if mode in fixed else mode_view(run, mode, q.text)
                if messages is None:
                    continue
                tokens = sum(count_message_tokens(m) for m in messages)
                found = carried(messages, q, run, chains, tokens)
                recent = base.carried(q, tokens)
                masked = base.carried(q, tokens, users_only=True)
                for cat in cats:
                    tallies[(corpus, cat, mode)].add(found, base.full)
                    tallies[(corpus, cat, f"{mode}: recency")].add(recent, base.full)
                    tallies[(corpus, cat, f"{mode}: masking")].add(masked, base.full)
    return tallies


def curve(runs: Sequence[Replayed], shares: Sequence[float]) -> dict[str, list[tuple[float, float]]]:
    """Evidence carried by the recency window and masking at fixed shares of each conversation's full history."""
    lines: dict[str, list[tuple[float, float]]] = {"recency window": [], "observation masking": []}
    dialogue = [run for run in runs if run.name != "generated"]
    for share in shares:
        for label, users in (("recency window", False), ("observation masking", True)):
            values = []
            for run in dialogue:
                base = Baselines(run)
                values += [base.carried(q, int(share * base.full), users_only=users).evidence for q in run.questions]
            lines[label].append((share, sum(values) / max(1, len(values))))
    return lines


def table(tallies: dict[tuple[str, str, str], Tally], modes: Sequence[str], corpus: str) -> list[list[str]]:
    rows = []
    for mode in ("no history", "full history", *modes):
        if (corpus, "all", mode) not in tallies:
            continue
        ev, ans, tok = tallies[(corpus, "all", mode)].figures()
        row = [f"{corpus}: {mode}", f"{ev:.1%}", f"{ans:.1%}", f"{tok:.3f}x"]
        if mode in modes:
            rev, rans, _ = tallies[(corpus, "all", f"{mode}: recency")].figures()
            mev, mans, _ = tallies[(corpus, "all", f"{mode}: masking")].figures()
            row += [f"{rev:.1%} / {rans:.1%}", f"{mev:.1%} / {mans:.1%}", f"{ev / rev:.2f}x" if rev else "inf"]
        else:
            row += ["", "", ""]
        rows.append(row)
    return rows


def category_table(tallies: dict[tuple[str, str, str], Tally], modes: Sequence[str]) -> list[list[str]]:
    cats = [
        c for c in ("multi-hop", "temporal", "open-domain", "single-hop") if ("dialogue", c, "full history") in tallies
    ]
    rows = []
    for mode in modes:
        if ("dialogue", "all", mode) not in tallies:
            continue
        for strategy in (mode, f"{mode}: recency", f"{mode}: masking"):
            cells = []
            for cat in cats:
                ev, ans, _ = tallies[("dialogue", cat, strategy)].figures()
                cells.append(f"{ev:.1%} / {ans:.1%}")
            rows.append([strategy, *cells])
    rows.append(["questions", *(str(len(tallies[("dialogue", c, "full history")].evidence)) for c in cats)])
    return rows


def plot(tallies: dict[tuple[str, str, str], Tally], modes: Sequence[str], lines: Any, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, points in lines.items():
        ax.plot([x for x, _ in points], [y for _, y in points], "--", label=f"{label} (baseline)")
    for mode in modes:
        if ("dialogue", "all", mode) in tallies:
            ev, _, tok = tallies[("dialogue", "all", mode)].figures()
            ax.scatter([tok], [ev], s=60, zorder=3)
            ax.annotate(mode, (tok, ev), textcoords="offset points", xytext=(6, -4))
    ax.set_xscale("log")
    ax.set_xlabel("tokens sent / full history (log)")
    ax.set_ylabel("evidence turns carried")
    ax.set_ylim(0, 1)
    ax.set_title("What the next turn's view carries of earlier sessions (offline model)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the dialogue set: a folder of JSON files or a zip of them")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N conversations (0: all)")
    parser.add_argument("--modes", default=",".join(MODES), help="the view modes to measure, comma separated")
    parser.add_argument("--no-generated", action="store_true", help="leave out the generated corpus")
    parser.add_argument("--plot", type=Path, help="draw evidence carried against tokens per strategy into a PNG")
    args = parser.parse_args(argv)
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    found = conversations(args.data)
    if args.conversations:
        found = found[: args.conversations]
    if not found:
        raise SystemExit(f"no conversation with questions at {args.data}")
    with tempfile.TemporaryDirectory() as home:
        runs = [replay(name, data, home) for name, data in found]
        if not args.no_generated:
            runs.append(generated(home))
        tallies = measure(runs, modes)
        lines = curve(runs, (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)) if args.plot else None
    questions = sum(len(run.questions) for run in runs if run.name != "generated")
    print(f"{len(found)} conversations, {questions} questions with evidence in earlier sessions\n")
    headers = ["view", "evidence", "answer", "tokens / full", "recency (ev / ans)", "masking (ev / ans)", "vs recency"]
    print_table(headers, table(tallies, modes, "dialogue") + table(tallies, modes, "generated"))
    print("\nby category (dialogue), evidence / answer carried; baselines at the same tokens as the mode above them\n")
    cats = [
        c for c in ("multi-hop", "temporal", "open-domain", "single-hop") if ("dialogue", c, "full history") in tallies
    ]
    print_table(["strategy", *cats], category_table(tallies, modes))
    if args.plot and lines is not None:
        plot(tallies, modes, lines, args.plot)
        print(f"\nplot written to {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
