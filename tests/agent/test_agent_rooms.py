"""agent/ stays walkable: its rooms (hooks/, tools/, models/, summaries/) stand alone; no folder or module grows big."""

from __future__ import annotations

from pathlib import Path

from test_import_graph import PACKAGE, graph

AGENT = PACKAGE / "agent"
ROOMS = ("hooks", "tools", "models", "summaries")
#: What every room may use from the top of agent/: running coroutines from synchronous code.
SHARED = {"bub_nb.agent.eventloop"}
#: The doors between rooms: the summariser asks a model (its protocol and calibration), and the offline model
#: answers a summary request with the extractive summary.
DOORS = {
    "bub_nb.agent.summaries.summarize": {"bub_nb.agent.models.base", "bub_nb.agent.models.calibration"},
    "bub_nb.agent.models.offline": {"bub_nb.agent.summaries.extractive"},
}
MAX_MODULES = 15
MAX_LINES = 300


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


def test_no_folder_of_agent_holds_more_than_15_modules_and_none_is_over_300_lines() -> None:
    folders = [AGENT, *(path for path in AGENT.rglob("*") if path.is_dir() and path.name != "__pycache__")]
    crowded = {
        str(folder.relative_to(PACKAGE)): count
        for folder in folders
        if (count := len([p for p in folder.glob("*.py") if p.name != "__init__.py"])) > MAX_MODULES
    }
    long = {str(path.relative_to(PACKAGE)): n for path in AGENT.rglob("*.py") if (n := _lines(path)) > MAX_LINES}
    assert crowded == {} and long == {}


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())
