"""Other agents' logs for the import tests: the samples their projects publish, and logs their own code writes.

``DATA`` holds the sample files copied from public repositories (cited in its README). llm and the Agents
SDK publish no sample database, so :func:`write_llm_logs` and :func:`write_agents_session` have the real
library write one, its model calls answered by the local OpenAI-compatible endpoint: llm's OpenAI plugin
and the SDK's chat-completions model each run one tool call (``add``), its answer, and a second prompt.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bub_nb.testing import OpenAICompatibleServer

DATA = Path(__file__).resolve().parents[1] / "data" / "imports"
"""The sample logs copied from the projects' repositories."""


CACHED_AND_REASONING = {"cached_tokens": 64, "reasoning_tokens": 2}
"""What the endpoint reports of the last answer beyond its two counts (the second reports 36 cached tokens)."""


def script(server: OpenAICompatibleServer) -> None:
    """Two prompts: "What is 2 + 3?" (a call to ``add``, then the answer) and "Say hello", the answers reporting
    cached and reasoning tokens in OpenAI's ``prompt_tokens_details`` and ``completion_tokens_details``."""
    server.reply_tool_calls(
        [{"name": "add", "arguments": {"a": 2, "b": 3}}], usage={"prompt_tokens": 50, "completion_tokens": 7}
    )
    server.reply("2 + 3 is 5.", usage={"prompt_tokens": 70, "completion_tokens": 6, "cached_tokens": 36})
    server.reply("Hello again.", usage={"prompt_tokens": 90, "completion_tokens": 3, **CACHED_AND_REASONING})


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def write_llm_logs(path: Path, server: OpenAICompatibleServer) -> Path:
    """A logs.db written by llm itself: its OpenAI plugin, a conversation with a tool, ``log_to_db``."""
    llm = pytest.importorskip("llm", reason="llm writes the logs.db this test reads (pip install -e '.[imports]')")
    sqlite_utils = pytest.importorskip("sqlite_utils")
    from llm.default_plugins.openai_models import Chat

    script(server)
    db = sqlite_utils.Database(path)
    model = Chat("bub-nb-test", key="sk-test", api_base=server.base_url, supports_tools=True)
    conversation = model.conversation(tools=[llm.Tool.function(add)])
    for response in conversation.chain("What is 2 + 3?", system="Answer briefly.").responses():
        response.text()
        response.log_to_db(db)
    response = conversation.prompt("Say hello")
    response.text()
    response.log_to_db(db)
    db.close()
    return path


def write_agents_session(
    path: Path, server: OpenAICompatibleServer, session_id: str = "adder-1", *, advanced: bool = False
) -> Path:
    """An Agents SDK ``SQLiteSession`` database written by ``Runner.run`` over two prompts; with ``advanced`` an
    ``AdvancedSQLiteSession``, which also stores each run's usage (``store_run_usage``)."""
    agents = pytest.importorskip("agents", reason="the Agents SDK writes this session (pip install -e '.[imports]')")
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    script(server)

    async def run() -> None:
        agents.set_tracing_disabled(True)
        client = AsyncOpenAI(base_url=server.base_url, api_key="sk-test")
        model = OpenAIChatCompletionsModel(model="bub-nb-test", openai_client=client)
        tools = [agents.function_tool(add)]
        agent = agents.Agent(name="adder", instructions="Answer briefly.", tools=tools, model=model)
        if advanced:
            from agents.extensions.memory import AdvancedSQLiteSession

            session: Any = AdvancedSQLiteSession(session_id=session_id, db_path=path, create_tables=True)
        else:
            session = agents.SQLiteSession(session_id, path)
        for prompt in ("What is 2 + 3?", "Say hello"):
            result = await agents.Runner.run(agent, prompt, session=session)
            if advanced:
                await session.store_run_usage(result)
        session.close()
        await client.close()

    asyncio.run(run())
    return path
