"""Recall ranked by embeddings from the endpoint's ``/v1/embeddings``: what BM25 misses, each entry embedded once,
BM25 again (said in one line, once) when the endpoint fails, and nothing taken back ever recalled."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.shell import Notebook

from bub_nb import Tape, open_tape
from bub_nb.agent import Agent
from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.models import OpenAIModel
from bub_nb.agent.models.embeddings import EMBEDDING_MODEL_VARIABLE, Embeddings
from bub_nb.agent.models.vectors import VectorCache, text_digest, unit
from bub_nb.context import Recall, build_view
from bub_nb.context.recall import RECALLED
from bub_nb.testing import OpenAICompatibleServer

FACTS = [
    "My sister Ana moved to Lisbon in March 2021.",
    "The quarterly report lives in reports/q3-final.xlsx.",
    "We adopted a grey cat called Pixel last weekend.",
    "The database password rotation happens every 90 days.",
]
KITTEN = "Tell me about our kitten"
"""No word of it is in any fact (BM25 finds nothing); the endpoint knows a kitten is a cat."""


@pytest.fixture
def server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer() as running:
        running.embedding_aliases = {"kitten": "cat"}
        yield running


@pytest.fixture
def model(server: OpenAICompatibleServer) -> Iterator[OpenAIModel]:
    made = OpenAIModel("test", base_url=server.base_url, api_key="sk-test")
    yield made
    run_sync(made.aclose())


@pytest.fixture
def tape(tmp_path: Path) -> Tape:
    tape = open_tape("recall", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    for number, fact in enumerate(FACTS):
        tape.append_message({"role": "user", "content": fact})
        tape.append_message({"role": "assistant", "content": f"Noted, point {number + 1}."})
        tape.handoff(f"phase/{number + 1}", {"summary": "A phase."})
    return tape


def pixel(tape: Tape) -> int:
    return next(e.id for e in tape.read(kinds=("message",)) if e.payload.get("content") == FACTS[2])


def embedded_inputs(server: OpenAICompatibleServer) -> list[list[str]]:
    return [list(body["input"]) for body in server.embedding_requests]


def test_embeddings_recall_what_bm25_cannot_and_the_view_says_what_ranked_it(
    tape: Tape, model: OpenAIModel, server: OpenAICompatibleServer
) -> None:
    by_words = build_view(tape, "last+recall", prompt=KITTEN)
    assert by_words.recalled == ()  # no word in common: BM25 brings nothing back
    view = Agent(tape, model, context="last+recall", embedding_model="test-embed").view(prompt=KITTEN)
    assert view.recalled[0][0] == pixel(tape) and 0 < view.recalled[0][1] <= 1
    assert view.recalled_by == "embeddings test-embed"
    assert f"[Recalled #{pixel(tape)} (score " in view.messages[view.sources.index(pixel(tape))]["content"]
    assert f"recalled #{pixel(tape)}" in view.to_text() and "ranked by embeddings test-embed" in view.to_text()
    assert {body["model"] for body in server.embedding_requests} == {"test-embed"}
    assert len(tape.read()) == len(list(tape.read())), "a view with a prompt writes nothing"


def test_a_turn_embeds_only_the_entries_it_has_not_seen_and_its_prompt(
    tape: Tape, model: OpenAIModel, server: OpenAICompatibleServer
) -> None:
    agent = Agent(tape, model, context="last+recall", embedding_model="test-embed")
    server.reply_tool_calls([{"name": "tape_info", "arguments": {}}])  # a turn of two steps, two views
    assert agent.run(KITTEN).ok
    first = embedded_inputs(server)
    assert first[-1] == [KITTEN] and FACTS[2] in first[0]
    assert sum(batch == [KITTEN] for batch in first) == 1, "each step recalls for the prompt; it is embedded once"
    tape.handoff("phase/5", {"summary": "Another phase."})
    assert agent.run("And the sister in Lisbon?").ok
    since = embedded_inputs(server)[len(first) :]
    assert since[-1] == ["And the sister in Lisbon?"]
    fresh = [text for batch in since[:-1] for text in batch]
    assert fresh and all(text not in FACTS for text in fresh), "the earlier entries' vectors were kept"
    assert KITTEN in fresh, "the first turn's prompt is an earlier entry now, embedded once"
    request = server.last_request["messages"]
    assert any(str(m.get("content", "")).startswith(f"{RECALLED}") and "Lisbon" in m["content"] for m in request)


def test_texts_go_in_batches(tape: Tape, server: OpenAICompatibleServer) -> None:
    ranker = Embeddings("test-embed", base_url=server.base_url, batch=3)
    view = build_view(tape, Recall(ranker=ranker), prompt=KITTEN)
    candidates = sum(len(batch) for batch in embedded_inputs(server)[:-1])
    assert [len(batch) for batch in embedded_inputs(server)[:-1]] == [3] * (candidates // 3) + (
        [candidates % 3] if candidates % 3 else []
    )
    assert ranker.requests == len(server.embedding_requests) and view.recalled_by == "embeddings test-embed"


def test_an_endpoint_error_falls_back_on_bm25_in_one_line_said_once(
    tape: Tape, model: OpenAIModel, server: OpenAICompatibleServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.fail_embeddings(404, "The model 'no-such-embed' does not exist", code="model_not_found", times=2)
    agent = Agent(tape, model, context="last+recall", embedding_model="no-such-embed")
    first = agent.view(prompt="Where did Ana move?")
    second = agent.view(prompt="Where did Ana move?")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "recall ranked by BM25" in err and "'no-such-embed'" in err and "does not exist" in err
    assert (
        first.recalled
        and first.recalled == second.recalled == build_view(tape, "last+recall", prompt="Where did Ana move?").recalled
    )
    assert first.recalled_by == "bm25 (embeddings failed)"
    assert agent.view(prompt=KITTEN).recalled_by == "embeddings no-such-embed"  # the endpoint answers again


def test_retracted_and_redacted_entries_never_come_back_by_embeddings(
    tape: Tape, model: OpenAIModel, server: OpenAICompatibleServer
) -> None:
    agent = Agent(tape, model, context="last+recall", embedding_model="test-embed")
    assert agent.view(prompt=KITTEN).recalled[0][0] == pixel(tape)
    tape.retract(pixel(tape))
    assert pixel(tape) not in dict(agent.view(prompt=KITTEN).recalled)
    report = next(e.id for e in tape.read(kinds=("message",)) if e.payload.get("content") == FACTS[1])
    tape.redact(report)
    view = agent.view(prompt="quarterly report xlsx redacted sha256")
    shown = "".join(str(m.get("content")) for m in view.messages)
    assert report not in dict(view.recalled) and "[redacted" not in shown and "Pixel" not in shown


def test_the_setting_is_read_from_the_environment_and_empty_keeps_bm25(
    tape: Tape, model: OpenAIModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(EMBEDDING_MODEL_VARIABLE, "test-embed")
    assert Agent(tape, model, context="last+recall").view(prompt=KITTEN).recalled_by == "embeddings test-embed"
    assert Agent(tape, model, context="last+recall", embedding_model="").view(prompt=KITTEN).recalled == ()
    assert Agent(tape, model, context="last").context == "last"  # a mode that does not recall stays as given


def test_the_magics_setting_ranks_what_context_next_shows(
    nb: Notebook, server: OpenAICompatibleServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUB_API_BASE", server.base_url)
    monkeypatch.setenv("BUB_API_KEY", "test-key-not-secret")
    nb.run('%config BubMagics.model = "openai:test-model"')
    nb.run("%%bub\nOur cat Pixel was adopted in May.")
    nb.run("%handoff phase/garden")
    nb.run("%%bub\nThe roses need water.")
    nb.run('%context last+recall --next "Tell me about our kitten"')
    assert "ranked by embeddings" not in str(nb.displays.outputs[-1]["data"]["text/plain"])
    nb.run('%config BubMagics.embedding_model = "test-embed"')
    before = len(nb.tape)
    nb.run('%context last+recall --next "Tell me about our kitten"')
    text = str(nb.displays.outputs[-1]["data"]["text/plain"])
    pixel = next(e.id for e in nb.tape.read(kinds=("message",)) if "Pixel" in str(e.payload.get("content")))
    assert f"recalled for the prompt, in the view: #{pixel} (score " in text
    assert "ranked by embeddings test-embed" in text
    html = str(nb.displays.outputs[-1]["data"]["text/html"])  # the widget marks them too
    assert f'class="bub-recalled" data-recalled="{pixel}"' in html and "ranked by embeddings test-embed" in html
    assert len(nb.tape) == before


def test_kept_vectors_outlive_the_process_in_a_file_and_only_for_the_same_text(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    cache = VectorCache(path)
    cache.put("m", "t", [(1, text_digest("one"), unit([1.0, 0.0])), (2, text_digest("two"), unit([0.0, 2.0]))])
    cache.close()
    again = VectorCache(path)
    found = again.get("m", "t", [(1, text_digest("one")), (2, text_digest("rewritten"))])
    assert list(found) == [1] and found[1].tolist() == [1.0, 0.0]
    again.keep_only("m", "t", [2])  # entry 1 was retracted: its vector goes from the file too
    assert VectorCache(path).get("m", "t", [(1, text_digest("one"))]) == {}
