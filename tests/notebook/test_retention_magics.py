"""What a handoff kept, as a notebook user sees it: the ``retention`` column of ``%anchors``."""

from __future__ import annotations

import pandas as pd
from harness.shell import Notebook

import bub_nb


def test_anchors_show_what_each_summary_kept_and_nothing_for_a_plain_handoff(nb: Notebook) -> None:
    nb.run("%config BubMagics.model = 'offline'")
    nb.run("%%bub\nLoad data/sales.csv: 1,200 rows in 42 ms. We decided to keep the outliers.")
    nb.run("%handoff phase/1 --summarize")
    nb.run("%%bub\nNow the regions.")
    nb.run("%handoff plain/2 owner=ana")
    anchors = nb.run("%anchors")
    assert isinstance(anchors, pd.DataFrame) and "retention" in anchors.columns
    by_name = dict(zip(anchors["name"], anchors["retention"], strict=True))
    assert pd.isna(by_name["plain/2"]) and pd.isna(by_name["session/start"])
    report = bub_nb.retention(nb.tape, "phase/1")
    assert report.set_index("artifact").loc["data/sales.csv", "kept"]
    counts = report.attrs["counts"]
    expected = " · ".join(f"{kind} {kept}/{total}" for kind, (kept, total) in counts.items() if total)
    assert by_name["phase/1"] == expected


def test_a_summarizing_handoff_confirms_with_readable_text_and_linked_citations(nb: Notebook) -> None:
    nb.run("%config BubMagics.model = 'offline'")
    nb.run('%%bub\nLoad data/sales.csv. We decided to keep the "odd" rows.')
    nb.run("%handoff phase/1 --summarize owner=ana")
    shown = nb.shown()
    state = nb.tape.find_anchor("phase/1").state
    assert state is not None
    before_fold, fold = shown.split("raw state:")  # the plain text; the HTML folds the raw state away
    assert "<details><summary>raw state</summary>" in str(nb.displays.outputs[-1]["data"]["text/html"])
    assert "**Summary** of [#" in before_fold and "· by offline" in before_fold
    cited = state["sources"][0]
    assert f'[[#{cited}]](#entry-{cited} "#{cited} ' in before_fold  # a link titled with the entry it cites
    assert "- **owner**: ana" in before_fold and '"removed_citations"' not in before_fold  # text, not JSON
    assert '"summarized_by": "offline"' in fold  # the raw state stays one click away
    nb.run("%handoff plain/2 owner=bo")
    assert '```json\n{\n  "owner": "bo"\n}\n```' in nb.shown()


def test_anchors_show_a_summary_as_text_beside_the_raw_state(nb: Notebook) -> None:
    nb.run("%config BubMagics.model = 'offline'")
    nb.run("%%bub\nLoad data/sales.csv. We decided to keep the outliers.")
    nb.run("%handoff phase/1 --summarize")
    anchors = nb.run("%anchors").set_index("name")
    state = nb.tape.find_anchor("phase/1").state
    assert anchors.loc["phase/1", "summary"] == state["summary"] and anchors.loc["phase/1", "state"] == state
    assert pd.isna(anchors.loc["session/start", "summary"])
    assert list(anchors.columns).index("summary") == list(anchors.columns).index("state") - 1
