"""The Approve / Deny buttons under code the model wants to run; the turn waits on the user's click."""

from __future__ import annotations

import asyncio
import html
from typing import Any

from IPython.display import display

from bub_nb.markup import reveal_hidden, visible_controls

APPROVE, DENY = "Approve", "Deny"


class CodeApproval:
    """Shows ``code`` with Approve and Deny in the running cell; :meth:`decided` waits for a click.

    The click reaches the kernel as a comm message while the cell still runs; wait inside
    :func:`bub_nb.notebook.comm_wait.comms_while_waiting`, which has the kernel dispatch it at once.
    """

    def __init__(
        self,
        code: str,
        *,
        heading: str = "The model asks to run this code in your kernel (python.run):",
        outcomes: tuple[str, str] = ("Approved: running it.", "Denied: nothing ran."),
    ) -> None:
        import ipywidgets

        self._answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.code = code
        self.approve = ipywidgets.Button(description=APPROVE, button_style="success", icon="play")
        self.deny = ipywidgets.Button(description=DENY, button_style="danger", icon="times")
        self.status = ipywidgets.HTML("<i>Waiting for your answer…</i>")
        self.outcomes = outcomes
        title = ipywidgets.HTML(f"<b>{html.escape(heading)}</b>")
        revealed, hidden = reveal_hidden(visible_controls(code))
        self.warning = hidden_warning(hidden)
        warned = [ipywidgets.HTML(f"<div class='bub-error bub-hidden-warning'>{html.escape(self.warning)}</div>")]
        shown = ipywidgets.HTML(f"<pre class='bub-code'>{html.escape(revealed)}</pre>")
        parts = [title, *(warned if hidden else []), shown, ipywidgets.HBox([self.approve, self.deny]), self.status]
        self.widget = ipywidgets.VBox(parts)
        self.widget.add_class("bub-code-approval")
        self.approve.on_click(lambda _button: self._decide(True))
        self.deny.on_click(lambda _button: self._decide(False))

    def _decide(self, approved: bool) -> None:
        if self._answer.done():
            return
        self._answer.set_result(approved)
        self._close(self.outcomes[0] if approved else self.outcomes[1])

    def _close(self, status: str) -> None:
        self.approve.disabled = self.deny.disabled = True
        self.status.value = f"<b>{html.escape(status)}</b>"

    async def decided(self) -> bool:
        """Show the buttons and wait for a click; ■ (an interrupt) or a cancelled turn stops the wait."""
        display(self.widget)
        try:
            return await asyncio.shield(self._answer)
        except BaseException:
            self._close("Stopped before an answer: nothing ran.")
            raise

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        revealed, hidden = reveal_hidden(visible_controls(self.code))
        warning = f"{self.warning}\n" if hidden else ""
        printer.text(f"python.run asks to run:\n{warning}{revealed}")


def hidden_warning(count: int) -> str:
    """The line above code that holds invisible or direction-changing characters."""
    return (
        f"Warning: this code holds {count} invisible or direction-changing character(s), shown as ⟦U+…⟧ markers: "
        "what runs may read differently from how an editor shows it."
        if count
        else ""
    )
