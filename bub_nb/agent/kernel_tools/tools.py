"""The kernel tools: ``notebook.vars``, ``notebook.inspect``, ``notebook.cells`` and ``python.run``.

Looking is bounded and safe (no value's code runs unbounded, no text is evaluated). Running code
asks the kernel's :meth:`~bub_nb.agent.kernel_tools.kernel.Kernel.consent` first; a refusal is an
error result the model reads, and nothing runs.
"""

from __future__ import annotations

from typing import Any

from bub_nb.agent.kernel_tools.describe import describe_value
from bub_nb.agent.kernel_tools.execution import execute
from bub_nb.agent.kernel_tools.kernel import CellRecord, Kernel
from bub_nb.agent.kernel_tools.limits import Limits, call_within, shorten
from bub_nb.agent.kernel_tools.names import parse_name, resolve
from bub_nb.agent.kernel_tools.variables import variables_text
from bub_nb.agent.tools import Tool, ToolContext, tool
from bub_nb.errors import ToolCallError, ToolError
from bub_nb.tape.events import NOTEBOOK_CELL

LOOKING = ("notebook.vars", "notebook.inspect", "notebook.cells")
RUNNING = "python.run"
MAX_CELLS = 20
_SOURCE_CHARS = 8000


def kernel_tools(kernel: Kernel, *, limits: Limits | None = None) -> list[Tool]:
    """The four kernel tools over ``kernel``; ``python.run`` is among them, so offer it only when allowed."""
    limits = limits or Limits()

    @tool(name="notebook.vars")
    def notebook_vars() -> str:
        """List the notebook's variables: name, type, shape or length and approximate memory.

        Modules, the kernel's own names and _private names are left out.
        """
        return variables_text(kernel.namespace(), kernel.hidden_names())

    @tool(name="notebook.inspect")
    def notebook_inspect(name: str) -> str:
        """Describe one value of the notebook safely: a DataFrame's columns, dtypes, head and statistics,
        an array's shape and values, a container's sample, a function's signature and docstring.

        Args:
            name: A variable, optionally with attributes and literal keys: df, df.columns, data['train'][0].
        """
        parse_name(name)  # refused before any value's code runs
        found = call_within(lambda: resolve(name, kernel.namespace()), limits.seconds)
        if isinstance(found.exception, ToolError):
            raise found.exception
        if not found.ok:
            raise ToolError(f"{name!r} could not be looked up: {found.error}")
        return describe_value(found.value, name.strip(), limits)

    @tool(name="notebook.cells")
    def notebook_cells(n: int = 5) -> str:
        """Show the last cells that ran in the notebook, oldest first, with the text of their results and errors.

        Args:
            n: How many cells, 1 to 20.
        """
        if not 1 <= n <= MAX_CELLS:
            raise ToolError(f"n must be from 1 to {MAX_CELLS}, got {n}")
        records = kernel.cells(n)
        if not records:
            return "(no cells have run yet)"
        return "\n\n".join(_cell_text(record, limits) for record in records)

    @tool(name=RUNNING)
    async def python_run(context: ToolContext, code: str) -> str:
        """Run Python code in the notebook's kernel, in the user's namespace; the user approves each call.

        Returns what it printed, the value of its last line, any exception, and the figures it drew.

        Args:
            code: The code, as a notebook cell would hold it.
        """
        if not code.strip():
            raise ToolError("code is empty")
        decision = await kernel.consent(code)
        if not decision.approved:
            raise ToolCallError(RUNNING, decision.kind, decision.reason)
        ran = execute(code, kernel.namespace(), transform=kernel.transform, show=kernel.show, limits=limits)
        if context.tape is not None:
            data: dict[str, Any] = {"cell": kernel.cell_number(), "source": code[:_SOURCE_CHARS], "by": RUNNING}
            if len(code) > _SOURCE_CHARS:
                data["truncated"] = len(code) - _SOURCE_CHARS
            if ran.error:
                data["error"] = ran.error.strip().splitlines()[-1]
            meta = {"run_id": context.state.get("run_id"), "cell": data["cell"], "source": RUNNING}
            context.tape.append_event(NOTEBOOK_CELL, data, **{k: v for k, v in meta.items() if v is not None})
        return ran.text(limits)

    return [notebook_vars, notebook_inspect, notebook_cells, python_run]


def _cell_text(record: CellRecord, limits: Limits) -> str:
    lines = [f"In [{record.number}]:", shorten(record.source, limits.chars)]
    if record.output is not None:
        lines += [f"Out[{record.number}]:", shorten(record.output, limits.chars)]
    if record.error:
        lines.append(f"It failed with {record.error}")
    return "\n".join(lines)
