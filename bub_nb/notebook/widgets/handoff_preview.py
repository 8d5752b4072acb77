"""The button under a handoff preview: accepting writes what the preview showed and says so in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
from IPython.display import display

from bub_nb.errors import BubNbError
from bub_nb.markup import Shown

if TYPE_CHECKING:
    from bub_nb.agent.phase_handoff import HandoffPreview
    from bub_nb.tape import TapeEntry


def accept_button(preview: HandoffPreview, confirm: Callable[[list[TapeEntry]], str]) -> widgets.VBox:
    """A button that accepts ``preview`` once; ``confirm`` says what was written (a refusal shows as one line)."""
    button = widgets.Button(description=f"Accept {preview.name}", button_style="success", icon="check")
    output = widgets.Output()

    def accept(_: Any) -> None:
        button.disabled = True
        output.clear_output()
        with output:
            try:
                written = preview.accept()
            except BubNbError as exc:
                display(Shown.markdown(f"**Not written**: {exc}"))
                return
            display(Shown.markdown(confirm(written)))

    button.on_click(accept)
    return widgets.VBox([button, output])
