"""The notebook surface: magics, streamed answers and widgets. The only layer that imports IPython."""

from __future__ import annotations

import atexit
import sys
from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext bub_nb``: register one configurable ``BubMagics`` instance, comma cells and ``%bub`` questions.

    Cell recording goes on again when the shell's configuration asks for it (``BubMagics.record``, which
    ``%tape record on`` sets), so ``%reload_ext bub_nb`` keeps recording.
    """
    from bub_nb.errors import BubNbError
    from bub_nb.notebook.magics import BubMagics
    from bub_nb.notebook.parsing import transformers
    from bub_nb.notebook.usage_errors import one_line
    from bub_nb.tape.locations import tell_cells_run

    tell_cells_run(lambda: ipython.history_manager.input_hist_raw[1:])  # which notebook runs, when nothing else says
    magics = BubMagics(shell=ipython, parent=ipython)
    ipython.register_magics(magics)
    magics.origin.start()
    magics.kernel.start()
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)
    transformers.install(ipython)
    _start_plugins()
    if magics.record:
        try:
            magics.recorder.start()
        except BubNbError as exc:
            magics.record = False
            print(f"Cells are not recorded: {one_line(exc)}", file=sys.stderr)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext bub_nb``: comma cells, ``%bub`` questions, the cell recorder and every bub_nb magic go."""
    from bub_nb.notebook.parsing import transformers

    transformers.uninstall(ipython)
    _close_plugins()
    for configurable in list(ipython.configurables):
        if type(configurable).__name__ == "BubMagics":
            configurable.recorder.stop()
            configurable.origin.stop()
            configurable.kernel.stop()
            configurable.session.mcp.close()  # every MCP server's process ends with the extension
            ipython.configurables.remove(configurable)
            _unregister_magics(ipython, configurable)


_closes_at_exit = False


def _start_plugins() -> None:
    """Enter the shared pipeline's plugin lifespans (Bub's ``provide_lifespan``) for as long as the kernel runs:
    left when the extension unloads, or at the kernel's exit. A lifespan that fails is said in one line."""
    from bub_nb.agent.registry import default_pipeline
    from bub_nb.errors import BubNbError
    from bub_nb.notebook.usage_errors import one_line

    pipeline = default_pipeline()
    try:
        pipeline.start()
    except BubNbError as exc:
        print(f"Plugin lifespans did not start: {one_line(exc)}", file=sys.stderr)
        return
    global _closes_at_exit
    if not _closes_at_exit:
        atexit.register(_close_plugins)
        _closes_at_exit = True


def _close_plugins() -> None:
    from bub_nb.agent.registry import shared_pipeline

    pipeline = shared_pipeline()
    if pipeline is not None and pipeline.started:
        pipeline.close()


def _unregister_magics(ipython: Any, magics: Any) -> None:
    # IPython has no public way to remove magics; its manager keeps them in two plain dicts.
    manager = ipython.magics_manager
    for table in manager.magics.values():
        for name, function in list(table.items()):
            if getattr(function, "__self__", None) is magics:
                del table[name]
    if manager.registry.get(type(magics).__name__) is magics:
        del manager.registry[type(magics).__name__]
