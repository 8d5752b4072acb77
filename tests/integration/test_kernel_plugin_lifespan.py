"""In a real Jupyter kernel, a plugin's ``provide_lifespan`` (Bub's hook) lasts as long as the kernel: entered when
the plugin registers on the started pipeline, left when the kernel shuts down."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.kernel import running_kernel

pytestmark = pytest.mark.integration

PLUGIN = """
import pluggy
from pathlib import Path
from bub_nb.agent import register_plugin

class Connection:
    @pluggy.HookimplMarker("bub")
    def provide_lifespan(self):
        Path({log!r}).write_text("open\\n")
        yield
        with open({log!r}, "a") as handle:
            handle.write("closed\\n")

register_plugin(Connection(), name="connection")
"""


def test_a_plugins_lifespan_is_left_when_the_kernel_shuts_down(tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    with running_kernel(tmp_path) as kernel:
        kernel.ok(PLUGIN.format(log=str(log)))
        assert log.read_text() == "open\n"
        kernel.ok("%%bub\nhello")
        assert log.read_text() == "open\n"
        kernel.manager.shutdown_kernel(now=False)  # as Jupyter's "Shut Down Kernel" asks; returns once it exited
    assert log.read_text() == "open\nclosed\n"
