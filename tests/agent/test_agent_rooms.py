"""agent/ stays walkable: its rooms (hooks/, tools/, models/, summaries/) stand alone."""

from __future__ import annotations

from test_import_graph import graph

ROOMS = ("hooks", "tools", "models", "summaries")
#: What every room may use from the top of agent/: running coroutines from synchronous code.
SHARED = {"bub_nb.agent.eventloop"}
#: The doors between rooms: the summarizer asks a model (its protocol and calibration), and the offline model
#: answers a summary request with the extractive summary.
DOORS = {
    "bub_nb.agent.summaries.summarize": {"bub_nb.agent.models.base", "bub_nb.agent.models.calibration"},
    "bub_nb.agent.models.offline": {"bub_nb.agent.summaries.extractive"},
}


def test_each_room_imports_nothing_from_agent_outside_itself() -> None:
    offenders = []
    for module, targets in graph().items():
        parts = module.split(".")
        if len(parts) < 4 or parts[1] != "agent" or parts[2] not in ROOMS:
            continue
        room = ".".join(parts[:3])
        outside = {t for t in targets if t.startswith("bub_nb.agent") and not t.startswith(room)} - SHARED
        outside -= DOORS.get(module, set())
        offenders += [f"{module} imports {target}" for target in sorted(outside)]
    assert offenders == []
