"""``%context --next`` and the window gauge: the whole request before it is sent, against the model's window."""

from __future__ import annotations

import re

import pytest
from harness.shell import Notebook

from bub_nb.agent.models import OfflineModel
from bub_nb.context.request import PARTS
from bub_nb.notebook.widgets import ContextView, NextRequestView


def shown_html(nb: Notebook) -> str:
    return str(nb.displays.outputs[-1]["data"]["text/html"])


def shown_text(nb: Notebook) -> str:
    return str(nb.displays.outputs[-1]["data"]["text/plain"])


def test_context_next_shows_every_part_and_a_total_the_turn_then_counts(nb: Notebook) -> None:
    nb.run("from bub_nb.agent.models import OfflineModel\nsmall = OfflineModel(context_window=800)")
    nb.run("%%bub -m small\nFact 1: the budget is 400 euros.")
    nb.run("%memory save The class meets on Thursdays.")
    before = len(nb.tape)
    nb.run("%context --next -m small")
    assert len(nb.tape) == before, "%context --next writes nothing"
    html, text = shown_html(nb), shown_text(nb)
    tokens = {name: int(value) for name, value in re.findall(r'data-part="([^"]+)" data-tokens="(\d+)"', html)}
    assert list(tokens) == list(PARTS) and tokens["memory block"] > 0 and tokens["tool schemas"] > 0
    total = int(re.search(r'data-total-tokens="(\d+)"', html).group(1))  # type: ignore[union-attr]
    assert total == sum(tokens.values())
    assert "/ 800 tokens" in text and "reply priming" in text and "memory block" in text
    # The offline model measures the messages against its window, without the tool schemas.
    used = int(re.search(r'class="bub-gauge" data-used="(\d+)"', html).group(1))  # type: ignore[union-attr]
    nb.run("%%bub -m small\n(the prompt you type next)")
    turn = nb.magics.session.last_turn
    assert turn.usage.prompt_tokens == used == total - tokens["tool schemas"]


def test_context_next_gauges_an_overfull_request_in_red(nb: Notebook) -> None:
    nb.run("from bub_nb.agent.models import OfflineModel\ntiny = OfflineModel(context_window=200)")
    nb.run("%context --next -m tiny")
    html = shown_html(nb)
    assert 'data-over="true"' in html and "over by" in html
    assert "OVER THE WINDOW" in shown_text(nb)


@pytest.mark.parametrize("line", ["%context --next --turn -1", "%context --next --diff last full"])
def test_context_next_refuses_turns_and_diffs(nb: Notebook, line: str) -> None:
    nb.refused(line, "--next")


def test_context_view_with_a_model_draws_used_over_limit(nb: Notebook) -> None:
    nb.run("%%bub\nFact 1: the budget is 400 euros.")
    view = ContextView(nb.tape, model=OfflineModel(context_window=2000))
    request = NextRequestView(nb.magics.session.agent(model="offline")).request
    assert view.gauge is not None
    used, limit = view.gauge
    assert limit == 2000 and used == request.window_tokens
    assert f"{used} / 2000 tokens" in view.to_text()
    assert f'data-used="{used}" data-limit="2000"' in view.to_html()
    assert ContextView(nb.tape).gauge is None and 'class="bub-gauge"' not in ContextView(nb.tape).to_html()
    nb.run("%context -m offline")
    assert 'class="bub-gauge"' in shown_html(nb) and 'data-limit=""' in shown_html(nb)


def test_plain_context_gauges_only_a_configured_model_with_a_known_window(nb: Notebook) -> None:
    nb.run("%%bub\nHello")
    nb.run("%config BubMagics.model = 'offline'")
    nb.run("%context")
    assert 'class="bub-gauge"' not in shown_html(nb), "nothing to gauge against: the window is unknown"
    nb.run("from bub_nb.agent.models import OfflineModel\nsmall = OfflineModel(context_window=900)")
    nb.run("%config BubMagics.model = 'small'")
    nb.run("%context")
    assert 'data-limit="900"' in shown_html(nb)


def test_context_next_with_a_prompt_shows_what_that_prompt_recalls_and_writes_nothing(nb: Notebook) -> None:
    nb.run("%%bub\nOur cat Pixel was adopted in May.")
    nb.run("%handoff phase/pets")
    nb.run("%%bub\nNow the garden: the roses need water.")
    before = len(nb.tape)
    nb.run('%context last+recall --next "When was Pixel adopted?"')
    assert len(nb.tape) == before, "%context --next PROMPT writes nothing"
    text = shown_text(nb)
    assert "recalled for the prompt, in the view: #" in text
    shown = nb.displays.outputs[-1]
    nb.run("%context last --next")
    assert "recalled for the prompt" not in shown_text(nb) and shown is not nb.displays.outputs[-1]


def repeated(html: str) -> tuple[int, int]:
    found = re.search(r'data-repeated-tokens="(\d+)" data-repeated-messages="(\d+)"', html)
    assert found is not None, "the request names what it repeats of the last turn's request"
    return int(found.group(1)), int(found.group(2))


def test_context_next_shows_what_the_next_request_repeats_of_the_last_one(nb: Notebook) -> None:
    from bub_nb.context import view_of_turn
    from bub_nb.context.tokens import count_message_tokens

    nb.run("%context --next")
    assert "bub-repeated" not in shown_html(nb), "before the first turn there is nothing to repeat"
    nb.run("%%bub\nFact 1: the budget is 400 euros.")
    nb.run("%%bub\nFact 2: the class meets on Thursdays.")
    nb.run("%context --next")
    tokens, messages = repeated(shown_html(nb))
    last = view_of_turn(nb.tape, -1)
    # The next request starts with every message the last one sent, in order: all of it can come from a cache.
    assert messages == len(last.messages) > 2
    assert tokens == sum(count_message_tokens(message) for message in last.messages)
    assert (
        f"{'repeated':<14} {tokens:>6}  the first {messages} messages of turn #{last.run_entry_id}'s request"
        in shown_text(nb)
    )

    nb.run("%handoff budget summary='The budget is 400 euros; the class meets on Thursdays.'")
    nb.run("%context --next")
    after_tokens, after_messages = repeated(shown_html(nb))
    assert after_messages < messages and after_tokens < tokens, "a handoff starts a new prefix"
    assert after_messages <= 1, "at most the system prompt is left of the old prefix"
