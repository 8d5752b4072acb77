"""Cost beside tokens where a turn's usage is read: the footer under a ``%%bub`` answer, the context widget's usage
line and the next request's gauge, each only once the model has a price."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from harness.shell import Notebook

from bub_nb import set_prices
from bub_nb.notebook.widgets import ContextView
from bub_nb.testing import OpenAICompatibleServer

PRICES = {"openai:test-model": {"input": 2.0, "output": 8.0}}
"""Per million tokens: 1,000 prompt tokens cost 0.002, 100 completion tokens 0.0008."""


@pytest.fixture(autouse=True)
def no_prices(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("BUB_PRICES", raising=False)
    set_prices(None)
    yield
    set_prices(None)


def footer_of(capsys: Any) -> str:
    return str(capsys.readouterr().out.strip().splitlines()[-1])


def test_the_footer_shows_tokens_and_the_turns_cost_once_prices_are_set(
    nb: Notebook, endpoint: OpenAICompatibleServer, capsys: Any
) -> None:
    endpoint.reply("Unpriced.", usage={"prompt_tokens": 1000, "completion_tokens": 100})
    nb.run("%%bub\nHow much?")
    unpriced = footer_of(capsys)
    assert "usage 1000 prompt + 100 completion tokens" in unpriced and "cost" not in unpriced

    nb.run(f"%config BubMagics.prices = {PRICES!r}")
    endpoint.reply("Priced.", usage={"prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 600})
    nb.run("%%bub\nAnd now?")
    priced = footer_of(capsys)
    assert "usage 1000 prompt (600 cached) + 100 completion tokens · cost 0.0028" in priced


def test_the_context_widget_and_the_next_request_show_cost_beside_tokens(
    nb: Notebook, endpoint: OpenAICompatibleServer
) -> None:
    endpoint.reply("Noted.", usage={"prompt_tokens": 1000, "completion_tokens": 100})
    nb.run("%%bub\nThe budget is 400 euros.")
    assert "cost" not in ContextView(nb.tape).to_text()
    nb.run(f"%config BubMagics.prices = {PRICES!r}")

    context = ContextView(nb.tape)
    assert "= 1100 tokens, exact as reported; cost 0.0028" in context.to_text()
    assert 'class="bub-usage-cost" data-cost="0.0028"' in context.to_html()

    nb.run("%context --next")
    shown = nb.displays.outputs[-1]["data"]
    total = int(shown["text/html"].split('data-total-tokens="', 1)[1].split('"', 1)[0])
    cost = total * PRICES["openai:test-model"]["input"] / 1_000_000
    assert f'class="bub-cost" data-cost="{cost!r}"' in shown["text/html"]
    assert f"input cost {cost:.4g}" in " ".join(shown["text/plain"].split())
