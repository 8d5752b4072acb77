"""What the magics are configured with: the ``BubMagics`` traits, and the typed view of them the session reads."""

from __future__ import annotations

import os
from typing import Any, Protocol

from traitlets import Bool, Dict, Enum, Float, Int, List, TraitError, Unicode, Union, default, validate
from traitlets.config import Configurable

from bub_nb.agent.models.embeddings import embedding_setting
from bub_nb.agent.models.resolve import model_setting
from bub_nb.errors import BubNbError
from bub_nb.notebook.usage_errors import one_line


class Settings(Protocol):
    """The settings a notebook session reads; ``BubMagics`` provides them as traits."""

    model: str
    context: str
    home: str
    tape: str
    store: str
    max_steps: int
    system_prompt: str
    tools: list[str]
    budget: int
    allow_code: bool | str
    tool_budget: int
    handoff_at: float
    embedding_model: str
    mcp_servers: dict[str, Any]
    allow_mcp_json: bool


class MagicSettings(Configurable):
    """The configurable traits of ``BubMagics`` (``%config BubMagics.<trait> = value``), seeded from ``BUB_*``."""

    model = Unicode(help="Model: 'offline', 'openai:<model>' (env BUB_MODEL).").tag(config=True)
    context = Unicode(help="Default view: 'last', 'full', 'phases', 'window:N', 'notebook' or an anchor name.").tag(
        config=True
    )
    home = Unicode(help="Bub home; tapes live in <home>/tapes (env BUB_HOME, default ~/.bub).").tag(config=True)
    tape = Unicode(help="Tape name or .jsonl path; empty means this notebook's tape.").tag(config=True)
    store = Unicode(help="A postgresql:// DSN to keep tapes in a database (env BUB_STORE); empty: files.").tag(
        config=True
    )
    max_steps = Int(help="Model calls a turn may make before it stops (env BUB_MAX_STEPS).").tag(config=True)
    stream = Bool(True, help="Stream answers into the cell as they arrive.").tag(config=True)
    system_prompt = Unicode("", help="Extra instructions added to the system prompt.").tag(config=True)
    tools = List(Unicode(), help="Default --tools selection (empty: every builtin tool).").tag(config=True)
    budget = Int(
        0, help="Refuse a turn whose prompt is estimated over this many tokens (0: no budget; --budget 0 in a cell)."
    ).tag(config=True)
    otlp_endpoint = Unicode(
        "",
        help="Send each turn to this OTLP/HTTP endpoint as OpenTelemetry GenAI spans as it ends; "
        "empty: only when OTEL_EXPORTER_OTLP_ENDPOINT is set.",
    ).tag(config=True)
    prices = Dict(
        help='Prices per million tokens per model, e.g. {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}.'
    ).tag(config=True)
    allow_code = Union(
        [Bool(), Enum(["always"])],
        default_value=False,
        help="Offer python.run: False (only with --tools python.run), True (approve each call), 'always' (no asking).",
    ).tag(config=True)
    tool_budget = Int(2000, help="Cut every tool result to about this many tokens (0: no limit).").tag(config=True)
    handoff_at = Float(
        0.0,
        help="Write a summarizing handoff before a turn whose request would take more than this share of the model's "
        "window, e.g. 0.8 (0: only when it overflows).",
    ).tag(config=True)
    embedding_model = Unicode(
        help="Rank what the recall modes bring back by this embedding model, at the model's endpoint "
        "(/v1/embeddings; env BUB_NB_EMBEDDING_MODEL); empty: BM25."
    ).tag(config=True)
    mcp_servers = Dict(
        help='MCP servers in the mcpServers shape of a .mcp.json, e.g. {"time": {"command": "uvx", '
        '"args": ["mcp-server-time"]}}; their tools are mcp.<server>.<tool>.'
    ).tag(config=True)
    allow_mcp_json = Bool(
        False, help="Start the servers of a .mcp.json beside the notebook without asking (default: ask once each)."
    ).tag(config=True)
    record = Bool(False, help="Record executed cells as notebook.cell events (%tape record on|off sets it).").tag(
        config=True
    )

    @default("model")
    def _default_model(self) -> str:
        setting = model_setting()  # BUB_NB_MODEL, else BUB_MODEL (shared with Bub)
        return setting[1] if setting else "offline"

    @default("context")
    def _default_context(self) -> str:
        return os.environ.get("BUB_CONTEXT", "") or "last"

    @default("embedding_model")
    def _default_embedding_model(self) -> str:
        return embedding_setting() or ""

    @default("home")
    def _default_home(self) -> str:
        return os.environ.get("BUB_HOME", "")

    @default("store")
    def _default_store(self) -> str:
        return os.environ.get("BUB_STORE", "")

    @default("tape")
    def _default_tape(self) -> str:
        return os.environ.get("BUB_TAPE", "")

    @default("max_steps")
    def _default_max_steps(self) -> int:
        raw = os.environ.get("BUB_MAX_STEPS", "")
        return int(raw) if raw.isdigit() and int(raw) > 0 else 8

    @validate("tape")
    def _valid_tape(self, proposal: Any) -> str:
        """A name the session can open, checked when it is set rather than by every magic after."""
        from bub_nb.tape.names import owner_qualified, validate_tape_name
        from bub_nb.tape.stores.archive import is_archive_name

        value = str(proposal["value"]).strip()
        if not value or is_archive_name(value) or value.endswith(".jsonl"):
            return value
        if owner_qualified(value):
            if self.store or os.environ.get("BUB_STORE"):
                return value
            raise TraitError(
                f"BubMagics.tape {value!r} names another role's tape (owner/name), which only a database has: "
                "set BubMagics.store first, or give a path ending in .jsonl"
            )
        if os.sep in value:
            raise TraitError(f"BubMagics.tape {value!r} is a path: a tape's path ends in .jsonl")
        try:
            return validate_tape_name(value)
        except BubNbError as exc:
            raise TraitError(one_line(exc)) from None

    @validate("budget")
    def _valid_budget(self, proposal: Any) -> int:
        if proposal["value"] < 0:
            raise TraitError(f"BubMagics.budget must be 0 (no budget) or a number of tokens, got {proposal['value']}")
        return int(proposal["value"])

    @validate("handoff_at")
    def _valid_handoff_at(self, proposal: Any) -> float:
        value = proposal["value"]
        if not 0 <= value <= 1:
            raise TraitError(f"BubMagics.handoff_at must be a share of the window from 0 (off) to 1, got {value}")
        return float(value)

    @validate("tool_budget")
    def _valid_tool_budget(self, proposal: Any) -> int:
        value = proposal["value"]
        if value != 0 and value < 50:
            raise TraitError(f"BubMagics.tool_budget must be 0 (no limit) or at least 50 tokens, got {value}")
        return int(value)

    @validate("otlp_endpoint")
    def _valid_otlp_endpoint(self, proposal: Any) -> str:
        from bub_nb.export.otlp import traces_url

        value = str(proposal["value"]).strip()
        try:
            return traces_url(value) if value else ""
        except BubNbError as exc:
            raise TraitError(one_line(exc)) from None

    @validate("mcp_servers")
    def _valid_mcp_servers(self, proposal: Any) -> dict[str, Any]:
        from bub_nb.agent.mcp import servers_from

        try:
            servers_from(proposal["value"], source="config")
        except BubNbError as exc:
            raise TraitError(one_line(exc)) from None
        return dict(proposal["value"])

    @validate("prices")
    def _valid_prices(self, proposal: Any) -> dict[str, Any]:
        from bub_nb.tape.reports.prices import check_prices

        try:
            return check_prices(proposal["value"], where="BubMagics.prices")
        except BubNbError as exc:
            raise TraitError(one_line(exc)) from None
