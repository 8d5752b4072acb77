"""The deep paths earlier releases documented, kept importable for one release as aliases of where they now live."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

#: Old module path -> the module that now holds what it held. A submodule of an old package maps the same way.
ALIASES = {
    "bub_nb.tape.store": "bub_nb.tape.stores",
    "bub_nb.tape.postgres": "bub_nb.tape.stores.postgres",
    "bub_nb.tape.frame": "bub_nb.tape.frames.frame",
    "bub_nb.agent.hookspecs": "bub_nb.agent.hooks.specs",
    "bub_nb.agent.pipeline": "bub_nb.agent.framework",
    "bub_nb.agent.builtin_tools": "bub_nb.agent.tools.builtin",
    "bub_nb.agent.signatures": "bub_nb.agent.tools.signatures",
    "bub_nb.agent.worker": "bub_nb.agent.tools.worker",
    "bub_nb.agent.handoff": "bub_nb.agent.phase_handoff",
    "bub_nb.agent.team.handoff": "bub_nb.agent.team.agent_handoff",
    "bub_nb.agent.summarize": "bub_nb.agent.summaries.summarize",
    "bub_nb.agent.models.gist": "bub_nb.agent.summaries.gist",
    "bub_nb.agent.models.decisions": "bub_nb.agent.summaries.decisions",
    "bub_nb.agent.models.extractive": "bub_nb.agent.summaries.extractive",
}


def _target(name: str) -> str | None:
    for old, new in ALIASES.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return None


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path as the very module object of its new path, so classes are never loaded twice."""

    def __init__(self) -> None:
        self._specs: dict[str, ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if _target(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        target = _target(spec.name)
        assert target is not None
        module = importlib.import_module(target)
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module ran under its new name already; give it back the spec the import machinery replaced."""
        module.__spec__ = self._specs.pop(module.__name__, module.__spec__)


def install() -> None:
    if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
