"""bub_nb against llama.cpp's own ``llama-server``, serving a tiny random-weights GGUF on 127.0.0.1.

The binary comes from ``.ci/build-llama-server`` (or ``BUB_NB_LLAMA_SERVER``). Without it these tests skip
with the reason, and fail under ``CI=true``.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.gguf_model import write_tiny_gguf
from harness.kernel import kernel_environment, running_kernel
from harness.llama import llama_binary
from harness.llama_server import LlamaServer
from harness.notebooks import execute

from bub_nb.agent import Agent
from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.models import OpenAIModel
from bub_nb.agent.models.embeddings import Embeddings
from bub_nb.context.tokens import count_messages_tokens
from bub_nb.errors import BubNbError, ContextLengthError, ModelError
from bub_nb.tape import MemoryTapeStore, Tape, open_tape

pytestmark = pytest.mark.llama_server

WINDOW = 2048
"""Tokens of the server's context: the system prompt and the tools (about 1,600 of this tokenizer's) fit once."""
SMALL_WINDOW = 900
"""A window the system prompt alone (about 600 of this tokenizer's tokens) fills two thirds of."""


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture(scope="module")
def llama(gguf: Path) -> Iterator[LlamaServer]:
    with LlamaServer(gguf, context=WINDOW, binary=llama_binary(), args=("--jinja",)) as server:
        yield server


@pytest.fixture
def model(llama: LlamaServer) -> Iterator[OpenAIModel]:
    made = OpenAIModel("tiny", base_url=llama.base_url, api_key="sk-local", timeout=60, max_retries=2)
    yield made
    run_sync(made.aclose())


def fresh_tape() -> Tape:
    tape = Tape("llama", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    return tape


def grow(tape: Tape, characters: int) -> None:
    """Exchanges written straight to the tape until its view holds about ``characters`` characters."""
    for number in range(max(1, characters // 400)):
        tape.append_message({"role": "user", "content": f"Part {number}: " + "the tape keeps every cell " * 15})
        tape.append_message({"role": "assistant", "content": f"Noted part {number}."})


# -- plain turns ---------------------------------------------------------------------------------------------


def test_a_plain_turn_streams_an_answer_that_ends(model: OpenAIModel) -> None:
    turn = Agent(fresh_tape(), model, builtin_tools=False).run("Say something.", stream=True)
    assert turn.ok and turn.usage is not None and not turn.usage.estimated
    assert turn.usage.prompt_tokens > 0


# -- 1 and 9: the window and the server's counts -------------------------------------------------------------


def test_an_overflow_teaches_the_window_and_the_servers_token_counts(model: OpenAIModel) -> None:
    messages = [{"role": "user", "content": "the tape keeps every cell " * 200}]
    with pytest.raises(ContextLengthError, match="exceeds the available context size"):
        run_sync(model.complete(messages))
    assert model.context_window == WINDOW
    assert model.token_scale.samples == 1 and model.token_scale.ratio > 1.5  # this tokenizer counts more


def test_turns_calibrate_the_estimates_to_the_servers_counts(model: OpenAIModel) -> None:
    agent = Agent(fresh_tape(), model, builtin_tools=False)
    turn = agent.run("Hello there.")
    messages = [{"role": "system", "content": agent.system_prompt("Hello there.")}, *turn.view.messages]  # type: ignore[union-attr]
    estimate = count_messages_tokens(messages)
    assert turn.usage is not None and turn.usage.prompt_tokens > estimate * 1.5
    assert abs(model.token_scale.scaled(estimate) - turn.usage.prompt_tokens) <= turn.usage.prompt_tokens * 0.1


# -- 4: a model that cites nothing --------------------------------------------------------------------------


def test_the_tiny_models_summary_cites_nothing_and_is_refused(model: OpenAIModel) -> None:
    tape = fresh_tape()
    grow(tape, 800)
    before = len(tape)
    with pytest.raises(BubNbError, match="cites no entry"):
        Agent(tape, model).handoff("phase/x", summarize=True)
    assert len(tape) == before


# -- 5: a session past the window ---------------------------------------------------------------------------


def test_a_session_past_the_window_hands_off_once_and_then_fits(model: OpenAIModel) -> None:
    tape = fresh_tape()
    agent = Agent(tape, model, builtin_tools=False)
    assert agent.run("Start.").ok  # calibrates the estimates
    grow(tape, 6000)
    requests_before = len(tape.read(kinds=("anchor",)))
    turn = agent.run("What next?")
    assert turn.ok, turn.error
    anchors = [e.name for e in tape.read(kinds=("anchor",))][requests_before:]
    assert anchors == ["auto_handoff/context_overflow"]
    assert "extractive" in turn.notices[0]  # the tiny model's summary cites nothing
    again = agent.run("And then?")
    assert again.ok and not again.notices


# -- 6: tools without --jinja -------------------------------------------------------------------------------


def test_tools_without_jinja_are_refused_once_with_advice(gguf: Path) -> None:
    # Without --jinja the server applies only templates it knows by name, so it is given one.
    args = ("--no-jinja", "--chat-template", "chatml")
    with LlamaServer(gguf, context=WINDOW, binary=llama_binary(), args=args) as plain:
        model = OpenAIModel("tiny", base_url=plain.base_url, api_key="sk-local", timeout=60, max_retries=2)
        with pytest.raises(ModelError, match=r"500: tools param requires --jinja flag \(not retried.*--tools none"):
            Agent(fresh_tape(), model).run("Hello.")
        assert Agent(fresh_tape(), model, builtin_tools=False).run("Hello.").ok  # as --tools none runs it
        run_sync(model.aclose())
        assert plain.output().count("tools param requires --jinja flag") <= 1


# -- 8: an answer that runs to the end of the window --------------------------------------------------------


class SpiedModel(OpenAIModel):
    """The real model, keeping the ``max_tokens`` of every request it sends."""

    sent: list[int | None]

    def _request(self, messages: Any, tools: Any) -> dict[str, Any]:
        request = super()._request(messages, tools)
        self.sent = [*getattr(self, "sent", []), request.get("max_tokens")]
        return request


def test_an_answer_is_bounded_by_the_learned_window(tmp_path: Path) -> None:
    rambling = write_tiny_gguf(tmp_path / "rambling.gguf", ends=-20.0)  # the end-of-text token never comes
    with LlamaServer(rambling, context=WINDOW, binary=llama_binary(), args=("--jinja",)) as server:
        model = SpiedModel("tiny", base_url=server.base_url, api_key="sk-local", timeout=60, max_retries=0)
        unbounded = Agent(fresh_tape(), model, builtin_tools=False).run("Go on forever.")
        with pytest.raises(ContextLengthError):  # teaches the window
            run_sync(model.complete([{"role": "user", "content": "the tape keeps every cell " * 300}]))
        bounded = Agent(fresh_tape(), model, builtin_tools=False).run("Go on forever.")
        run_sync(model.aclose())
    # Unbounded, this build stops an answer at the end of its window (older builds answer 500 there).
    assert unbounded.usage is not None and unbounded.usage.total_tokens == WINDOW and model.sent[0] is None
    assert bounded.ok and bounded.usage is not None and bounded.usage.total_tokens <= WINDOW
    limit = model.sent[-1]
    assert limit is not None and bounded.usage.completion_tokens <= limit <= WINDOW - bounded.usage.prompt_tokens


# -- a real kernel ------------------------------------------------------------------------------------------


def test_a_bub_session_in_a_kernel_grown_past_the_window_hands_off_once(gguf: Path, tmp_path: Path) -> None:
    # A window the system prompt fills two thirds of: a retry fits only with the summary cut to what is left.
    llama = LlamaServer(gguf, context=SMALL_WINDOW, binary=llama_binary(), args=("--jinja",)).start()
    env = kernel_environment(tmp_path / "home", BUB_API_BASE=llama.base_url, BUB_MODEL="openai:tiny")
    with running_kernel(tmp_path, env) as kernel:
        kernel.ok("%%bub --tools none\nHello.")
        shown = ""
        for number in range(40):
            shown = kernel.ok(f"%%bub --tools none\nPart {number}: " + "the tape keeps every cell " * 12, timeout=180)
            if "auto_handoff/context_overflow" in shown:
                break
        assert "Warning: The prompt did not fit the model's context: handoff auto_handoff/context_overflow" in shown
        after = kernel.ok("%%bub --tools none\nAnd then?", timeout=180)
        assert "did not fit" not in after and "view from anchor auto_handoff/context_overflow" in after
        handoffs = [e for e in kernel.tape.read(kinds=("anchor",)) if e.name.startswith("auto_handoff")]
        assert len(handoffs) == 1
        # The tiny model's summary cites nothing: %handoff --summarize is refused and writes nothing.
        kernel.refused("%handoff phase/x --summarize", "cites no entry")
    llama.stop()


# -- the prompt cache: what a turn repeats of the last one, and what a handoff starts anew ---------------------


def test_a_second_turn_reads_its_prefix_from_the_cache_and_a_handoff_starts_a_new_one(model: OpenAIModel) -> None:
    tape = fresh_tape()
    agent = Agent(tape, model, builtin_tools=False)
    first = agent.run("Say something about the tape.")
    second = agent.run("And about the cell.")
    assert first.usage is not None and second.usage is not None
    # The server keeps the last request's tokens: the second request starts with all of them.
    assert first.usage.cached_tokens < first.usage.prompt_tokens
    assert second.usage.cached_tokens >= first.usage.prompt_tokens - 8
    tape.handoff("fresh", {"summary": "The tape and the cell were talked about."})
    third = agent.run("Now about the anchor.")
    assert third.usage is not None
    # The view now starts at the anchor: the request shares little more than the system prompt with the last one.
    assert third.usage.cached_tokens < second.usage.cached_tokens
    assert (
        third.usage.prompt_tokens - third.usage.cached_tokens > second.usage.prompt_tokens - second.usage.cached_tokens
    )
    runs = tape.to_frame().tape.runs()  # the first turn's 0 is a count the server reported, not a missing one
    assert runs["cached_tokens"].tolist() == [u.cached_tokens for u in (first.usage, second.usage, third.usage)]


def server_call(server: LlamaServer, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def rendered(server: LlamaServer, messages: Any) -> str:
    """The text ``server`` makes of ``messages`` with its chat template (the answer's opening included)."""
    return str(server_call(server, "/apply-template", {"messages": list(messages)})["prompt"])


def test_the_lessons_cached_tokens_fall_to_the_system_prompt_at_the_handoff(llama: LlamaServer, tmp_path: Path) -> None:
    run = execute(
        "lesson-context.ipynb",
        tmp_path,
        BUB_MODEL="openai:tiny",
        BUB_NB_MODEL="openai:tiny",
        BUB_API_BASE=llama.base_url,
        BUB_API_KEY="sk-local",
    )
    tape = open_tape("lesson-context-cache", home=tmp_path / "home")
    runs = tape.to_frame().tape.runs()
    prompt, cached = runs["input_tokens"].tolist(), runs["cached_tokens"].tolist()
    assert runs["status"].tolist() == ["ok"] * 4 and runs["model"].tolist() == ["openai:tiny"] * 4
    # Within the phase each request starts with the whole last one (and its answer): all of it comes from the cache.
    assert cached[0] < prompt[0]
    assert cached[1] >= prompt[0] and cached[2] >= prompt[1]
    # After the handoff the request shares with the last one the system prompt and the opening of the anchor's
    # line that both views start with (their first message says which anchor): the cache reads that, no more.
    before, after = (rendered(llama, tape.view_of_turn(turn).messages) for turn in (-2, -1))
    shared = before[: next((at for at, pair in enumerate(zip(before, after, strict=False)) if pair[0] != pair[1]), 0)]
    system = rendered(llama, tape.view_of_turn(-1).messages[:1])  # the system prompt, then the answer's opening
    assert shared.startswith(system) and shared[len(system) :] == "[Anchor created: "
    tokens = server_call(llama, "/tokenize", {"content": shared, "add_special": True, "parse_special": True})
    assert abs(cached[3] - len(tokens["tokens"])) <= 2 and cached[3] < cached[2] - 200
    shown = run.text("cache_tape = ")
    assert "cached_tokens" in shown and "trip/cached" in shown
    assert "the first 1 messages" in run.text("%handoff trip/cached")


# -- recall ranked by llama-server's embeddings ----------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder(gguf: Path) -> Iterator[LlamaServer]:
    """A server with ``/v1/embeddings``: ``--embeddings``, with a pooling (the OpenAI form refuses ``none``, this
    model's own) and a batch that holds a whole entry. It serves chat too, so one endpoint does both."""
    args = ("--jinja", "--embeddings", "--pooling", "mean", "--ubatch-size", str(WINDOW), "--batch-size", str(WINDOW))
    with LlamaServer(gguf, context=WINDOW, binary=llama_binary(), args=args) as server:
        yield server


def recall_tape() -> Tape:
    tape = fresh_tape()
    for fact in ("the tape keeps every cell", "the anchor starts a view", "one model per turn"):
        tape.append_message({"role": "user", "content": fact})
        tape.append_message({"role": "assistant", "content": "Noted."})
    tape.handoff("phase/next", {"summary": "Three facts."})
    return tape


def test_recall_ranks_by_the_vectors_llama_server_makes_and_embeds_each_entry_once(embedder: LlamaServer) -> None:
    both = OpenAIModel("tiny", base_url=embedder.base_url, api_key="sk-local", timeout=60, max_retries=2)
    agent = Agent(recall_tape(), both, context="last+recall", embedding_model="tiny", builtin_tools=False)
    ranker = agent.context.ranker
    assert isinstance(ranker, Embeddings) and ranker.base_url == embedder.base_url  # the chat model's endpoint
    view = agent.view(prompt="Which cell does the tape keep?")
    assert view.recalled and view.recalled_by == "embeddings tiny"
    assert all(-1 <= score <= 1 for _, score in view.recalled)
    made = ranker.requests
    turn = agent.run("And which anchor starts a view?")
    assert turn.ok, turn.error
    assert turn.view is not None and turn.view.recalled_by == "embeddings tiny"
    assert ranker.requests == made + 1, "the entries' vectors were kept: only the new prompt was embedded"
    run_sync(both.aclose())


def test_a_chat_server_without_embeddings_leaves_recall_to_bm25_in_one_line(
    model: OpenAIModel, capsys: pytest.CaptureFixture[str]
) -> None:
    tape = recall_tape()
    agent = Agent(tape, model, context="last+recall", embedding_model="tiny", builtin_tools=False)
    view = agent.view(prompt="Which cell does the tape keep?")
    again = agent.view(prompt="Which cell does the tape keep?")
    err = capsys.readouterr().err
    assert view.recalled_by == again.recalled_by == "bm25 (embeddings failed)" and view.recalled
    assert err.count("\n") == 1 and "Start it with `--embeddings`" in err and "Traceback" not in err
