"""``%config BubMagics.handoff_at``: the cell says when a summarizing handoff went before its turn."""

from __future__ import annotations

from harness.shell import Notebook

from bub_nb.agent.loop import HANDOFF_AT_ANCHOR


def test_handoff_at_writes_a_summarizing_handoff_before_the_turn_and_the_cell_says_so(nb: Notebook) -> None:
    nb.run("from bub_nb.agent.models import OfflineModel\nsmall = OfflineModel(context_window=2000)")
    nb.run("%config BubMagics.handoff_at = 0.5")
    for n in range(1, 12):
        nb.run(f"%%bub -m small\nFact {n}: the sensor in room {n} reads {n * 7} degrees. " + "More words here. " * 8)
        if HANDOFF_AT_ANCHOR in nb.tape.anchor_names():
            break
    assert HANDOFF_AT_ANCHOR in nb.tape.anchor_names()
    shown = " ".join(str(output.get("data", {}).get("text/plain", "")) for output in nb.displays.outputs)
    assert f"A summarizing handoff ({HANDOFF_AT_ANCHOR}) was written before this turn" in shown + nb.shown()
