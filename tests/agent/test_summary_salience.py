"""What the offline summary keeps of a conversation: the facts of both speakers, not their pleasantries."""

from __future__ import annotations

from pathlib import Path

from bub_nb import open_tape
from bub_nb.agent import Agent
from bub_nb.agent.summaries.salience import notes
from bub_nb.context import build_view
from bub_nb.context.retention import anchor_retention
from bub_nb.tape import Tape
from bub_nb.tape.citations import cited_ids

DIALOGUE = [
    ("user", "Rosa: Hi Tom! So good to see you, how have you been?"),
    ("assistant", "Tom: Hey Rosa! Great, thanks for asking!"),
    ("user", "Rosa: I started a pottery course at the Hollis studio on 12 April."),
    ("assistant", "Tom: Wow, that's awesome!"),
    ("assistant", "Tom: I decided to move to Bristol in September for the new job at Arden Labs."),
    ("user", "Rosa: Thanks, that's so sweet of you!"),
    ("user", "Rosa: My brother Luis ran the Porto marathon in 3 hours 40 minutes."),
    ("assistant", "Tom: Amazing, congrats to him!"),
]
FACTS = (2, 4, 6)
PLEASANTRIES = (0, 1, 3, 5, 7)


def conversation(tmp_path: Path, name: str = "talk") -> tuple[Tape, list[int]]:
    tape = open_tape(name, home=tmp_path)
    tape.ensure_bootstrap_anchor()
    ids = [tape.append_message({"role": role, "content": text}).id for role, text in DIALOGUE]
    return tape, ids


def test_the_offline_summary_cites_the_facts_of_both_speakers_and_leaves_the_pleasantries(tmp_path: Path) -> None:
    tape, ids = conversation(tmp_path)
    _, anchor, _ = Agent(tape, model="offline").handoff("talk/1", summarize=True)
    summary = anchor.payload["state"]["summary"]
    cited = set(cited_ids(summary))
    assert {ids[i] for i in FACTS} <= cited  # Rosa's course and brother, Tom's move: both speakers
    assert not cited & {ids[i] for i in PLEASANTRIES}
    assert "Bristol" in summary and "Hollis" in summary and "Porto" in summary
    assert "thanks" not in summary.lower() and "awesome" not in summary.lower()


def test_near_duplicates_are_noted_once() -> None:
    from bub_nb.agent.summaries.extractive import Item

    items = [
        Item(1, 1, "user", "Ana: We adopted a grey cat called Pixel in May."),
        Item(2, 2, "assistant", "Ben: You adopted a grey cat called Pixel in May!"),
        Item(3, 3, "user", "Ana: The vet in Leeds said Pixel is two years old."),
    ]
    noted = notes(items)
    assert [note.entry for note in noted].count(1) + [note.entry for note in noted].count(2) == 1
    assert 3 in [note.entry for note in noted]


def test_carried_lines_keep_citing_their_original_entries_through_handoffs(tmp_path: Path) -> None:
    tape, ids = conversation(tmp_path)
    agent = Agent(tape, model="offline")
    agent.handoff("talk/1", summarize=True)
    for number in range(2, 5):
        tape.append_message({"role": "user", "content": f"Rosa: Round {number} was quiet."})
        agent.handoff(f"talk/{number}", summarize=True)
    last = tape.find_anchor("talk/4").state or {}
    carried = [line for line in last["summary"].splitlines() if "Carried over:" in line]
    assert carried and {ids[i] for i in FACTS} & set(cited_ids("\n".join(carried)))
    assert set(last["sources"]) >= set(cited_ids("\n".join(carried)))
    # The phases view sends each carried line once: the earlier phases' messages hold the originals.
    view = build_view(tape, "phases")
    assert sum(str(m.get("content", "")).count("Carried over:") for m in view.messages[:-1]) == 0


def test_the_retention_report_says_when_a_summary_kept_only_pleasantries(tmp_path: Path) -> None:
    tape, ids = conversation(tmp_path)
    bad = f"Rosa said thanks, that's so sweet [#{ids[5]}]. Tom said it was amazing [#{ids[7]}]."
    tape.handoff("talk/1", {"summary": bad, "sources": [ids[5], ids[7]], "range": [ids[0], ids[-1]]})
    report = anchor_retention(tape, "talk/1")
    kept, total = report.counts()["number"]
    assert total >= 2 and kept == 0
    assert {found.entry for found in report.lost()} >= {ids[2], ids[6]}
    assert "number 0/" in report.short()
    good = Agent(tape, model="offline")
    tape.append_message({"role": "user", "content": "Rosa: The kiln fires at 1,240 degrees on 3 May."})
    _, anchor, _ = good.handoff("talk/2", summarize=True)
    kept, total = anchor_retention(tape, anchor.id).counts()["number"]
    assert total and kept == total
