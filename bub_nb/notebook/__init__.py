"""The notebook surface: magics, streamed answers and widgets. The only layer that imports IPython."""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext bub_nb``: register one configurable ``BubMagics`` instance."""
    from bub_nb.notebook.magics import BubMagics

    magics = BubMagics(shell=ipython, parent=ipython)
    ipython.register_magics(magics)
    magics.origin.start()
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)


def unload_ipython_extension(ipython: Any) -> None:
    for configurable in list(ipython.configurables):
        if type(configurable).__name__ == "BubMagics":
            configurable.recorder.stop()
            configurable.origin.stop()
            ipython.configurables.remove(configurable)
