"""The IPython kernel as the kernel tools see it: the user's namespace, the cells that ran, and consent.

Consent follows ``BubMagics.allow_code``: ``"always"`` runs code without asking; otherwise each call
shows Approve / Deny in the cell, when a frontend can show them. A kernel run headless (nbclient,
papermill, ``bub-nb run``) refuses: no one is there to answer.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from bub_nb.agent.kernel_tools import APPROVED, CellRecord, Decision
from bub_nb.notebook.recording import CellListener, skipped_cell

ALWAYS = "always"
HEADLESS = (
    "python.run was refused: this kernel runs without a frontend that can show Approve / Deny (a headless "
    "run such as nbclient, papermill or bub-nb run, or a terminal), so no one can approve the code. Nothing "
    "ran. The user may set %config BubMagics.allow_code = 'always' to run code without asking."
)
UNREACHABLE = (
    "python.run was refused: this kernel cannot deliver a button's click while a cell runs, so no one can "
    "approve the code. Nothing ran. The user may set %config BubMagics.allow_code = 'always' to run code "
    "without asking."
)
APPROVED_IN_CELL = Decision("approved", "approved in the cell")
DENIED = "The user denied running this code. Nothing ran; the namespace is unchanged."
_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
_KEPT_ERRORS = 200


def can_ask(shell: Any) -> bool:
    """Whether a person can click in the running cell: the request came from a frontend that names its cells.

    JupyterLab, Notebook 7 and VS Code send a ``cellId`` with every execute request; nbclient (and so
    papermill and ``bub-nb run``) and a bare jupyter_client do not, and a terminal has no kernel.
    """
    kernel = getattr(shell, "kernel", None)
    if kernel is None or not hasattr(kernel, "get_parent"):
        return False
    parent = kernel.get_parent("shell") or {}
    return bool((parent.get("metadata") or {}).get("cellId"))


class NotebookKernel(CellListener):
    """An IPython shell as a :class:`~bub_nb.agent.kernel_tools.Kernel`; ``settings`` holds ``allow_code``."""

    def __init__(self, shell: Any, settings: Any, cell_number: Callable[[], int | None]) -> None:
        super().__init__(shell)
        self._settings = settings
        self._cell_number = cell_number
        self._errors: dict[int, str] = {}

    def post_run_cell(self, result: Any) -> None:
        error = result.error_in_exec or result.error_before_exec
        if error is not None and isinstance(result.execution_count, int):
            self._errors[result.execution_count] = f"{type(error).__name__}: {error}".strip()
            for old in sorted(self._errors)[:-_KEPT_ERRORS]:
                del self._errors[old]

    # -- the Kernel protocol --------------------------------------------------------------------

    def namespace(self) -> dict[str, Any]:
        return self._shell.user_ns  # type: ignore[no-any-return]

    def hidden_names(self) -> Collection[str]:
        return set(getattr(self._shell, "user_ns_hidden", {})) | _IPYTHON_NAMES

    def cells(self, limit: int) -> list[CellRecord]:
        history = self._shell.history_manager
        sources: list[str] = list(history.input_hist_raw)
        outputs: dict[int, str] = dict(history.output_hist_reprs)
        found: list[CellRecord] = []
        for number in range(len(sources) - 1, 0, -1):
            source = sources[number].strip()
            if skipped_cell(source):
                continue
            found.append(CellRecord(number, source, outputs.get(number), self._errors.get(number)))
            if len(found) == limit:
                break
        return found[::-1]

    async def consent(self, code: str) -> Decision:
        if self._settings.allow_code == ALWAYS:
            return APPROVED
        if not can_ask(self._shell):
            return Decision("refused", HEADLESS)
        from bub_nb.notebook.comm_wait import comms_while_waiting
        from bub_nb.notebook.widgets.code_approval import CodeApproval

        with comms_while_waiting(self._shell) as clicks_arrive:
            if not clicks_arrive:
                return Decision("refused", UNREACHABLE)
            approved = await CodeApproval(code).decided()
        return APPROVED_IN_CELL if approved else Decision("denied", DENIED)

    def approve_server(self, spec: Any) -> bool | None:
        """Ask in the running cell whether an MCP server from a ``.mcp.json`` may start: ``None`` when no one can
        be asked (a headless run), else the click."""
        if not can_ask(self._shell):
            return None
        from bub_nb.agent.eventloop import run_sync
        from bub_nb.notebook.comm_wait import comms_while_waiting
        from bub_nb.notebook.widgets.code_approval import CodeApproval

        heading = (
            f"Start the MCP server {spec.name!r} from {spec.origin}? Its tools would be offered to the model. "
            "This approval covers exactly this program, arguments, folder and environment; a change asks again:"
        )
        outcomes = ("Approved: starting it (asked once).", "Denied: it does not start (asked once).")
        with comms_while_waiting(self._shell) as clicks_arrive:
            if not clicks_arrive:
                return None

            async def clicked() -> bool:
                return await CodeApproval(spec.approval_text(), heading=heading, outcomes=outcomes).decided()

            return run_sync(clicked())

    def transform(self, code: str) -> str:
        return str(self._shell.transform_cell(code))

    def show(self, figure: Any) -> None:
        from IPython.display import display

        display(figure)

    def cell_number(self) -> int | None:
        return self._cell_number()
