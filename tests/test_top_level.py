"""The top level is cheap: ``import bub_nb`` loads only itself; the layers load when a name is first used."""

from __future__ import annotations

import json
import subprocess
import sys

_NEW_MODULES = """
import json, sys
before = set(sys.modules)
import bub_nb
{then}
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def modules_loaded(then: str = "") -> list[str]:
    """The modules a fresh interpreter loads for ``import bub_nb`` (and ``then``)."""
    code = _NEW_MODULES.format(then=then)
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def test_import_bub_nb_loads_no_other_bub_nb_module_and_no_third_party_package() -> None:
    loaded = modules_loaded()
    outside_the_standard_library = [m for m in loaded if m.partition(".")[0] not in sys.stdlib_module_names]
    assert outside_the_standard_library == ["bub_nb"]


def test_a_tape_read_through_the_top_level_loads_the_layers_it_needs_on_first_use(tmp_path: object) -> None:
    then = (
        f"tape = bub_nb.open_tape('t', home={str(tmp_path)!r})\n"
        "tape.append_message({'role': 'user', 'content': 'hi'})\n"
        "assert tape.view().messages[-1] == {'role': 'user', 'content': 'hi'}\n"
    )
    loaded = modules_loaded(then)
    assert "bub_nb.context" in loaded  # the seam imported the layer that builds views
    assert not any(m.startswith(("bub_nb.agent", "bub_nb.notebook", "pandas", "openai", "IPython")) for m in loaded)
