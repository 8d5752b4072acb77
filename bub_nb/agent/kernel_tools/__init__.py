"""Tools that let the agent see the notebook (its variables, values and cells) and, with consent, run code."""

from __future__ import annotations

from bub_nb.agent.kernel_tools.describe import describe_value
from bub_nb.agent.kernel_tools.execution import Execution, describe_figure, execute
from bub_nb.agent.kernel_tools.kernel import APPROVED, CellRecord, Decision, Kernel, NamespaceKernel
from bub_nb.agent.kernel_tools.limits import Limits, safe_repr
from bub_nb.agent.kernel_tools.names import resolve
from bub_nb.agent.kernel_tools.tools import LOOKING, RUNNING, kernel_tools
from bub_nb.agent.kernel_tools.variables import users_names, variables_text

__all__ = [
    "APPROVED",
    "LOOKING",
    "RUNNING",
    "CellRecord",
    "Decision",
    "Execution",
    "Kernel",
    "Limits",
    "NamespaceKernel",
    "describe_figure",
    "describe_value",
    "execute",
    "kernel_tools",
    "resolve",
    "safe_repr",
    "users_names",
    "variables_text",
]
