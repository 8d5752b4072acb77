"""The notebook surface: magics, streamed answers and widgets. The only layer that imports IPython."""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext bub_nb``: register one configurable ``BubMagics`` instance and comma cells."""
    from bub_nb.notebook import comma_cells
    from bub_nb.notebook.magics import BubMagics

    magics = BubMagics(shell=ipython, parent=ipython)
    ipython.register_magics(magics)
    magics.origin.start()
    magics.kernel.start()
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)
    comma_cells.install(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext bub_nb``: comma cells, the cell recorder and every bub_nb magic go."""
    from bub_nb.notebook import comma_cells

    comma_cells.uninstall(ipython)
    for configurable in list(ipython.configurables):
        if type(configurable).__name__ == "BubMagics":
            configurable.recorder.stop()
            configurable.origin.stop()
            configurable.kernel.stop()
            ipython.configurables.remove(configurable)
            _unregister_magics(ipython, configurable)


def _unregister_magics(ipython: Any, magics: Any) -> None:
    # IPython has no public way to remove magics; its manager keeps them in two plain dicts.
    manager = ipython.magics_manager
    for table in manager.magics.values():
        for name, function in list(table.items()):
            if getattr(function, "__self__", None) is magics:
                del table[name]
    if manager.registry.get(type(magics).__name__) is magics:
        del manager.registry[type(magics).__name__]
