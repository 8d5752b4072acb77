"""Signs that always render: widgets, confirmations and transcripts use words and drawn marks, not emoji, which a
browser without an emoji font shows as empty boxes."""

from __future__ import annotations

import re
from pathlib import Path

from harness.shell import Notebook

from bub_nb.agent import Agent
from bub_nb.agent.models import OfflineModel
from bub_nb.notebook.widgets import ContextDiffView, ContextView, MemoryView, NextRequestView, TapeTimeline
from bub_nb.tape import Tape

# Pictographs, dingbats and misc symbols (⚓ ⚠ ✓…), the media and clock signs that render as emoji (⏹ ⏺ ⌛),
# and the emoji presentation selector.
EMOJI = re.compile(
    "[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f\u231a\u231b\u2328\u23cf\u23e9-\u23f3\u23f8-\u23fa]"
)


def without_css(page: str) -> str:
    return re.sub(r"<style>.*?</style>", "", page, flags=re.DOTALL)


def test_widgets_draw_no_emoji(tape: Tape) -> None:
    agent = Agent(tape, OfflineModel(context_window=700))
    tape.memory.save_long_term("The class meets on Thursdays.")
    for number in range(1, 6):
        agent.run(f"Fact {number}: the team picked option {number} because the budget allows it. " * 3)
    tape.handoff("phase/review", {"summary": "Facts collected", "next_steps": ["decide"]})
    shown = [
        ContextView(tape, model=agent.model),
        ContextView(tape, None),
        TapeTimeline(tape, model=agent.model),
        ContextDiffView(tape, "full", "last"),
        MemoryView(tape),
        NextRequestView(agent),
    ]
    assert tape.anchors(limit=50), "the scenario has anchors to mark"
    for widget in shown:
        for form in (without_css(widget.to_html()), widget.to_text()):
            assert not EMOJI.findall(form), f"{type(widget).__name__} shows {set(EMOJI.findall(form))}"


def test_confirmations_notices_and_transcripts_say_it_in_words(nb: Notebook, tmp_path: Path) -> None:
    nb.run("from bub_nb.agent.models import OfflineModel\nsmall = OfflineModel(context_window=600)")
    for number in range(1, 6):
        nb.run(f"%%bub -m small\nFact {number}: the team picked option {number} because the budget allows it. " * 3)
    nb.run("%handoff phase/review summary='Facts collected'")
    nb.run("%anchors")
    nb.run(f"%tape export md {tmp_path / 'tape.md'}")
    shown = nb.shown()
    assert "Warning: The prompt did not fit" in shown and "Handoff **phase/review**" in shown
    assert not EMOJI.findall(shown), set(EMOJI.findall(shown))
    transcript = (tmp_path / "tape.md").read_text()
    assert "## Anchor phase/review" in transcript and not EMOJI.findall(transcript), set(EMOJI.findall(transcript))


def test_no_text_the_package_shows_holds_an_emoji() -> None:
    """Every string bub_nb can show comes from its sources: none may hold an emoji (the hostile replies the test
    servers send are the one exception, and are never shown by bub_nb itself)."""
    package = Path(__import__("bub_nb").__file__).parent
    found = {
        f"{path.relative_to(package)}:{number}": EMOJI.findall(line)
        for path in package.rglob("*.py")
        if path.parts[-2:] != ("testing", "hostile.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if EMOJI.search(line)
    }
    assert not found, found
