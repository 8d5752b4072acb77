"""Logs written by other agents' own code, for the import tests: llm's logs.db and an Agents SDK session.

Neither project publishes a sample database, so each fixture has the real library write one, its model
calls answered by the local OpenAI-compatible test endpoint: llm's OpenAI plugin and the Agents SDK's
chat-completions model each run one tool call (``add``), its answer, and a second prompt.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bub_nb.testing import OpenAICompatibleServer

DATA = Path(__file__).resolve().parents[1] / "data" / "imports"
"""The sample logs copied from the projects' repositories (see the README there)."""

USAGES = ({"prompt_tokens": 50, "completion_tokens": 7}, {"prompt_tokens": 70, "completion_tokens": 6})


def script(server: OpenAICompatibleServer) -> None:
    """Two prompts: "What is 2 + 3?" (a call to ``add``, then the answer) and "Say hello"."""
    server.reply_tool_calls([{"name": "add", "arguments": {"a": 2, "b": 3}}], usage=USAGES[0])
    server.reply("2 + 3 is 5.", usage=USAGES[1])
    server.reply("Hello again.", usage={"prompt_tokens": 90, "completion_tokens": 3})


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def llm_logs(tmp_path: Path, openai_server: OpenAICompatibleServer) -> Path:
    """A logs.db written by llm itself: its OpenAI plugin, a conversation with a tool, ``log_to_db``."""
    llm = pytest.importorskip("llm", reason="llm writes the logs.db this test reads (pip install bub_nb[imports])")
    sqlite_utils = pytest.importorskip("sqlite_utils")
    from llm.default_plugins.openai_models import Chat

    script(openai_server)
    path = tmp_path / "logs.db"
    db = sqlite_utils.Database(path)
    model = Chat("bub-nb-test", key="sk-test", api_base=openai_server.base_url, supports_tools=True)
    conversation = model.conversation(tools=[llm.Tool.function(add)])
    for response in conversation.chain("What is 2 + 3?", system="Answer briefly.").responses():
        response.text()
        response.log_to_db(db)
    response = conversation.prompt("Say hello")
    response.text()
    response.log_to_db(db)
    db.close()
    return path


@pytest.fixture
def agents_session(tmp_path: Path, openai_server: OpenAICompatibleServer) -> Path:
    """An Agents SDK ``SQLiteSession`` database written by ``Runner.run`` over two prompts."""
    agents = pytest.importorskip("agents", reason="the Agents SDK writes this session (pip install bub_nb[imports])")
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    script(openai_server)
    path = tmp_path / "session.db"

    async def run() -> None:
        agents.set_tracing_disabled(True)
        client = AsyncOpenAI(base_url=openai_server.base_url, api_key="sk-test")
        model = OpenAIChatCompletionsModel(model="bub-nb-test", openai_client=client)
        agent = agents.Agent(
            name="adder", instructions="Answer briefly.", tools=[agents.function_tool(add)], model=model
        )
        session = agents.SQLiteSession("adder-1", path)
        await agents.Runner.run(agent, "What is 2 + 3?", session=session)
        await agents.Runner.run(agent, "Say hello", session=session)
        session.close()
        await client.close()

    asyncio.run(run())
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A Bub home for the imported tapes."""
    return tmp_path / "bub-home"
