"""The package's import graph has one direction: no cycle between modules, no import pointing up a layer.

Every import counts, including the ones inside functions and under ``TYPE_CHECKING``: a cycle kept alive by a
deferred import is still a cycle a reader has to hold in their head.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "bub_nb"

#: Layers from the bottom up. A module may import its own layer and the ones below it.
LAYERS = {
    "errors": 0, "markup": 0, "tape": 1, "imports": 2, "context": 3, "memory": 3, "export": 4, "agent": 5,
    "notebook": 6, "cli": 7,
}  # fmt: skip


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["bub_nb", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every bub_nb module that ``name`` imports, wherever the import statement sits."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the submodule; `from pkg import name` imports pkg itself.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("bub_nb") and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    known = module_names()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def layer(name: str) -> int | None:
    parts = name.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def package_of(name: str) -> str:
    """The subpackage a module belongs to (``tape``, ``agent``...), or ``bub_nb`` for the top-level modules."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else "bub_nb"


def cycles_within(package: str | None) -> list[list[str]]:
    """The cycles whose modules all sit in ``package``; with ``None`` the cycles that cross packages."""
    found = cycles(graph())
    if package is None:
        return [cycle for cycle in found if len({package_of(name) for name in cycle}) > 1]
    return [cycle for cycle in found if {package_of(name) for name in cycle} == {package}]


#: Every subpackage, and ``bub_nb`` for the modules at the top.
PACKAGES = ["tape", "imports", "context", "memory", "export", "agent", "notebook", "cli", "testing", "bub_nb"]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_itself_back_through_others(package: str) -> None:
    assert cycles_within(package) == []


def test_no_cycle_crosses_packages() -> None:
    assert cycles_within(None) == []


def test_every_package_is_checked() -> None:
    """A new subpackage gets its own cycle case and a layer, so nothing escapes the checks above."""
    assert {package_of(name) for name in module_names()} <= set(PACKAGES)


def test_no_import_points_up_a_layer() -> None:
    offenders = [
        f"{name} -> {target}"
        for name, targets in graph().items()
        for target in sorted(targets)
        if layer(name) is not None and layer(target) is not None and layer(target) > layer(name)  # type: ignore[operator]
    ]
    assert offenders == []


#: The rooms of ``bub_nb.tape``, from the bottom up; a module imports its own room and the rooms below it.
#: The vocabulary (entries, events, names, citations...) is every top-level module not listed here.
TAPE_ROOMS = {
    "vocabulary": 0,
    "stores": 1,  # the protocol, memory, files and their index, archives, lineage, PostgreSQL
    "operations": 2,  # anchors and slicing, redaction, info, the seams the layers above fill
    "forks": 2,  # writes that go aside, forked sessions and their renumbered copies
    "corrections": 2,  # retraction and redaction: taking back what a tape holds
    "reports": 3,  # the transcript, usage per phase, prices
    "frames": 4,  # DataFrames, the df.tape accessor, a home's tapes, a class overview
    "tape": 5,  # the Tape, its queries, opening and following one
}
TAPE_MODULE_ROOMS = {
    "anchors": "operations",
    "renamed": "operations",
    "identity": "operations",
    "renumber": "operations",
    "redact": "operations",
    "info": "operations",
    "seams": "operations",
    "tape": "tape",
    "query": "tape",
    "open": "tape",
    "follow": "tape",
    "attach": "tape",
}


def tape_room(name: str) -> str | None:
    """The room of a ``bub_nb.tape`` module, or ``None`` for a module outside the tape layer and its package."""
    parts = name.split(".")
    if len(parts) < 3 or parts[1] != "tape":
        return None
    if parts[2] in TAPE_ROOMS:
        return parts[2]
    return TAPE_MODULE_ROOMS.get(parts[2].lstrip("_"), "vocabulary")


def test_no_import_inside_the_tape_layer_points_up_a_room() -> None:
    offenders = [
        f"{name} ({tape_room(name)}) -> {target} ({tape_room(target)})"
        for name, targets in graph().items()
        if tape_room(name) is not None
        for target in sorted(targets)
        if tape_room(target) is not None and TAPE_ROOMS[tape_room(target)] > TAPE_ROOMS[tape_room(name)]  # type: ignore[index]
    ]
    assert offenders == []


def test_every_tape_room_is_a_folder_or_a_listed_module() -> None:
    """A new subpackage of ``bub_nb.tape`` is given a room above, so nothing escapes the order."""
    folders = {path.name for path in (PACKAGE / "tape").iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders <= set(TAPE_ROOMS)


#: Third-party packages only the notebook layer may import: everything below runs without a kernel.
NOTEBOOK_ONLY = ("IPython", "ipywidgets", "ipykernel")


def third_party_imports(path: Path) -> set[str]:
    """The top-level names of every absolute import in a file, wherever the import statement sits."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.partition(".")[0])
    return found


def test_ipython_and_widgets_are_imported_only_in_the_notebook_layer() -> None:
    offenders = [
        f"{name} imports {package}"
        for name, path in sorted(module_names().items())
        if package_of(name) != "notebook"
        for package in sorted(third_party_imports(path) & set(NOTEBOOK_ONLY))
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ],
)
def test_the_cycle_finder_finds_cycles_and_only_cycles(edges: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(edges) == expected


def test_the_walk_sees_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from bub_nb.agent import loop\n"
        "def f():\n    from bub_nb.tape.tape import Tape\n"
    )
    known = {"bub_nb.tape.m": module, "bub_nb.agent.loop": module, "bub_nb.tape.tape": module}
    assert imports_of("bub_nb.tape.m", module, known) == {"bub_nb.agent.loop", "bub_nb.tape.tape"}
