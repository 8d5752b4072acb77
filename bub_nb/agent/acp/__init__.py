"""bub_nb as an Agent Client Protocol agent: sessions are tapes, prompts are turns (the ``[acp]`` extra's SDK)."""

from __future__ import annotations

from bub_nb.agent.acp.server import AcpServer, prompt_text, serve, serve_stdio
from bub_nb.agent.acp.tapes import Place

__all__ = ["AcpServer", "Place", "prompt_text", "serve", "serve_stdio"]
