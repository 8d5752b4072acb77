"""``%handoff NAME --summarize --preview`` then ``--accept``, as a notebook user types them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.shell import Notebook

from bub_nb.agent import Agent


def tape_bytes(nb: Notebook) -> bytes:
    return Path(nb.tape.path).read_bytes()


def test_a_preview_writes_nothing_and_the_accept_writes_it_with_no_second_request(nb: Notebook, endpoint: Any) -> None:
    endpoint.reply("We will keep the 1,200 rows.")
    nb.run("%%bub\nLoad data/sales.csv: 1,200 rows in 42 ms.")
    asked = next(entry.id for entry in nb.tape.read() if entry.kind == "message")
    endpoint.reply(f"Summary:\nLoaded data/sales.csv with 1,200 rows [#{asked}].\nNext steps:\nPlot the rows.")
    before, requests = tape_bytes(nb), len(endpoint.requests)

    nb.run("%handoff phase/loaded --summarize --preview owner=ana")

    assert tape_bytes(nb) == before  # byte for byte: the preview wrote nothing
    assert len(endpoint.requests) == requests + 1
    shown = nb.shown()
    assert "Preview of handoff **phase/loaded**" in shown and f"[[#{asked}]](#entry-{asked}" in shown
    assert "**What the summary keeps** of [#" in shown and "path 1/1" in shown and "42 ms" in shown
    assert "**The next view**:" in shown and "%handoff phase/loaded --accept" in shown

    nb.run("%handoff phase/loaded --accept")

    assert len(endpoint.requests) == requests + 1  # the accept asked the endpoint nothing
    state = nb.tape.find_anchor("phase/loaded").state
    assert state["summary"] == f"Loaded data/sales.csv with 1,200 rows [#{asked}]." and state["owner"] == "ana"
    assert "Handoff **phase/loaded** written" in nb.shown()
    nb.refused("%handoff phase/loaded --accept", "No preview of handoff 'phase/loaded' on tape")


def test_an_accept_is_refused_without_a_preview_with_options_or_when_the_tape_moved_on(nb: Notebook) -> None:
    nb.run("%config BubMagics.model = 'offline'")
    nb.run("%%bub\nWe decided to use polars.")
    nb.refused("%handoff phase/1 --accept", "No preview of handoff 'phase/1' on tape")
    before = tape_bytes(nb)
    nb.run("%handoff phase/1 --summarize --preview")
    assert tape_bytes(nb) == before
    nb.refused("%handoff phase/1 --accept owner=me", "takes no state")
    nb.refused("%handoff phase/1 --preview summarize=1", "cannot also be a state key")
    nb.refused("%handoff phase/1 --preview --to helper", "not one --to an agent")
    nb.refused("%handoff phase/1 --accept --to helper", "takes no state")
    nb.run("%%bub\nOne more thing.")
    nb.refused("%handoff phase/1 --accept", "stale: the tape was at #")
    assert "phase/1" not in nb.tape.anchor_names()


def test_the_accept_button_writes_the_preview_once(nb: Notebook) -> None:
    from bub_nb.notebook.widgets.handoff_preview import accept_button

    agent = Agent(nb.tape, model="offline")
    agent.run("We decided to keep 3 rows.")
    preview = agent.preview_handoff("phase/button")
    box = accept_button(preview, lambda written: f"wrote {len(written)}")
    button = box.children[0]
    button.click()
    assert button.disabled and nb.tape.find_anchor("phase/button").state == preview.state
    assert nb.tape.anchor_names().count("phase/button") == 1


def test_a_comma_preview_writes_nothing_and_percent_accept_takes_it(nb: Notebook) -> None:
    nb.run("%config BubMagics.model = 'offline'")
    nb.run("%%bub\nWe decided to keep 12 rows of data/a.csv.")
    before = tape_bytes(nb)
    nb.run(",handoff name=phase/comma summarize=true preview=true")
    assert tape_bytes(nb) == before
    nb.run("%handoff phase/comma --accept")
    assert "data/a.csv" in nb.tape.find_anchor("phase/comma").state["summary"]
