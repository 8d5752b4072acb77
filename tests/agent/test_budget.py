"""The budget per phase: tokens and cost from the run events, prices the user gives, and a budget that refuses."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from harness.kernel import Kernel
from harness.shell import Notebook

from bub_nb import Agent, set_prices
from bub_nb.agent import OpenAIModel
from bub_nb.errors import BudgetError, PriceError
from bub_nb.notebook.widgets import TapeTimeline
from bub_nb.tape import Tape
from bub_nb.tape.events import run_usage
from bub_nb.tape.reports.prices import current_prices
from bub_nb.tape.reports.transcript import transcript_markdown
from bub_nb.testing import OpenAICompatibleServer

PRICES = {"openai:test-model": {"input": 2.0, "output": 8.0}}


@pytest.fixture(autouse=True)
def no_prices(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("BUB_PRICES", raising=False)
    set_prices(None)
    yield
    set_prices(None)


def two_phases(tape: Tape, server: OpenAICompatibleServer, model: OpenAIModel) -> None:
    """Two turns on the endpoint, a handoff, then one endpoint turn and one offline turn."""
    for tokens_in, tokens_out in ((100, 10), (200, 20), (300, 30)):
        server.reply("ok", usage={"prompt_tokens": tokens_in, "completion_tokens": tokens_out})
    agent = Agent(tape, model)
    agent.run("one")
    agent.run("two")
    tape.handoff("phase/b", {"summary": "done with a"})
    agent.run("three")
    Agent(tape, "offline").run("four")


def test_usage_by_phase_sums_to_the_run_events_and_prices_only_priced_models(
    tape: Tape, openai_server: OpenAICompatibleServer, model: OpenAIModel
) -> None:
    two_phases(tape, openai_server, model)
    runs = [run_usage(e) for e in tape.read(kinds=("event",)) if e.name == "run"]
    set_prices(PRICES)

    usage = tape.to_frame().tape.usage(by="phase")

    assert usage.index.tolist() == ["session/start", "phase/b"]
    assert usage["turns"].tolist() == [2, 2]
    assert usage["tokens_in"].sum() == sum(u["prompt_tokens"] for u in runs if u)
    assert usage["tokens_out"].sum() == sum(u["completion_tokens"] for u in runs if u)
    assert usage.loc["session/start", "cost"] == pytest.approx((300 * 2.0 + 30 * 8.0) / 1_000_000)
    assert math.isnan(usage.loc["phase/b", "cost"])  # a turn on "offline", which has no price
    by_model = tape.to_frame().tape.usage(by="model")
    assert by_model.loc["openai:test-model", "tokens_in"] == 600 and math.isnan(by_model.loc["offline", "cost"])
    free = tape.to_frame().tape.usage(prices={**PRICES, "offline": {"input": 0, "output": 0}})
    assert free.loc["phase/b", "cost"] == pytest.approx(300 * 2.0 / 1_000_000 + 30 * 8.0 / 1_000_000)


def test_a_price_without_the_prefix_prices_the_endpoint_model(
    tape: Tape, openai_server: OpenAICompatibleServer, model: OpenAIModel
) -> None:
    openai_server.reply("ok", usage={"prompt_tokens": 1000, "completion_tokens": 0})
    Agent(tape, model).run("one")
    usage = tape.to_frame().tape.usage(prices={"test-model": {"input": 1.0, "output": 1.0}})
    assert usage["cost"].tolist() == [pytest.approx(0.001)]


def test_prices_come_from_the_file_bub_prices_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(PRICES))
    monkeypatch.setenv("BUB_PRICES", str(path))
    assert current_prices() == PRICES
    set_prices({"offline": {"input": 0, "output": 0}})
    assert current_prices() == {"offline": {"input": 0.0, "output": 0.0}}  # given prices win over the file
    set_prices(None)
    path.write_text("{not json")
    os.utime(path, (1, 1))
    with pytest.raises(PriceError, match=r"BUB_PRICES names .*prices\.json.*, which is not JSON"):
        current_prices()
    monkeypatch.setenv("BUB_PRICES", str(tmp_path / "missing.json"))
    with pytest.raises(PriceError, match=r"missing\.json.*cannot be read"):
        current_prices()


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ([1, 2], "must map a model to its prices"),
        ({"m": {"input": 1}}, "give exactly 'input' and 'output'"),
        ({"m": {"input": -1, "output": 0}}, "the input price -1"),
        ({"m": {"input": "cheap", "output": 0}}, "the input price 'cheap'"),
        ({"m": {"input": 1, "output": float("inf")}}, "the output price inf"),
        ({"m": {"input": 10**400, "output": 1}}, "the input price 1000.*0000; a price is a finite number"),
        ({"": {"input": 1, "output": 1}}, "names model ''"),
    ],
)
def test_a_bad_price_table_is_one_line_naming_what_is_wrong(table: object, words: str) -> None:
    with pytest.raises(PriceError, match=words) as caught:
        set_prices(table)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)
    assert current_prices() == {}


def test_the_timeline_and_the_markdown_export_show_tokens_and_cost_per_phase(
    tape: Tape, openai_server: OpenAICompatibleServer, model: OpenAIModel
) -> None:
    two_phases(tape, openai_server, model)
    set_prices(PRICES)

    timeline = TapeTimeline(tape)
    text, html = timeline.to_text(), timeline.to_html()
    assert "2 turns, 300+30 tokens, cost 0.00084" in text
    assert "cost –" in text  # phase/b holds an offline turn, which has no price
    assert 'data-anchor="session/start" data-entries' in html and 'data-cost="0.00084"' in html
    assert 'data-anchor="phase/b"' in html and 'data-cost=""' in html

    markdown = transcript_markdown(tape)
    assert "## Budget per phase" in markdown
    assert "| anchor session/start | 2 | 300 | 30 | 0.00084 |" in markdown
    phase_b = next(line for line in markdown.splitlines() if line.startswith("| anchor phase/b"))
    assert phase_b.endswith("| –|") or phase_b.endswith("| – |")


def test_an_agent_budget_refuses_a_turn_over_it_before_writing(tape: Tape) -> None:
    Agent(tape, "offline").run("a first turn to make the view longer")
    before = len(tape)
    with pytest.raises(BudgetError, match=r"≈ \d+ tokens, over the budget of 50; nothing was written: hand off"):
        Agent(tape, "offline", budget=50).run("hello")
    assert len(tape) == before
    assert Agent(tape, "offline", budget=100_000).run("hello").ok
    with pytest.raises(Exception, match="budget must be a whole number of tokens"):
        Agent(tape, "offline", budget=0)


def test_bub_budget_refuses_in_the_cell_and_the_trait_sets_a_default(
    nb: Notebook, capsys: pytest.CaptureFixture[str]
) -> None:
    nb.run("%%bub\nhello")
    nb.refused("%%bub --budget 20\nwhat now?", r"over the budget of 20; nothing was written: hand off \(%handoff")
    nb.refused("%%bub --budget -1\nwhat now?", "--budget -1 is not a number of tokens; give one, or 0 for no budget")
    nb.run("%config BubMagics.budget = 20")
    nb.refused("%%bub\nwhat now?", "over the budget of 20")
    nb.refused("%bub what now?", "over the budget of 20")
    nb.run("%%bub --budget 100000\nwhat now?")  # the cell's budget wins over the trait
    nb.run("%bub --budget 0 and now?")  # 0 switches the configured budget off for this cell only
    nb.refused("%bub what now?", "over the budget of 20")
    capsys.readouterr()
    nb.run("%config BubMagics.budget = -1")  # said in one line; the value stays
    assert nb.magics.budget == 20
    assert capsys.readouterr().err == "BubMagics.budget must be 0 (no budget) or a number of tokens, got -1\n"


def test_prices_are_configured_on_the_magics_and_checked(nb: Notebook, capsys: pytest.CaptureFixture[str]) -> None:
    nb.run('%config BubMagics.prices = {"offline": {"input": 1, "output": 2}}')
    assert current_prices() == {"offline": {"input": 1.0, "output": 2.0}}
    nb.run("%%bub\nhello")
    usage = nb.tape.to_frame().tape.usage()
    assert usage["cost"].iloc[0] == pytest.approx(
        (usage["tokens_in"].iloc[0] * 1 + usage["tokens_out"].iloc[0] * 2) / 1_000_000
    )
    nb.run('%config BubMagics.prices = {"offline": {"in": 1}}')
    said = capsys.readouterr().err
    assert "BubMagics.prices gives 'offline' the price {'in': 1}; give exactly 'input' and 'output'" in said
    assert nb.magics.prices == {"offline": {"input": 1.0, "output": 2.0}}
    assert current_prices() == {"offline": {"input": 1.0, "output": 2.0}}
    nb.run("%config BubMagics.prices = {}")
    assert current_prices() == {}
    assert isinstance(usage, pd.DataFrame)


@pytest.fixture
def kernel(offline_kernel: Kernel) -> Kernel:
    """A budget refusal on the offline model."""
    return offline_kernel


def test_a_budget_refusal_in_a_kernel_is_one_usage_error_and_writes_nothing(kernel: Kernel) -> None:
    kernel.ok("%%bub\nhello")
    kernel.refused("%%bub --budget 20\nwhat now?", "over the budget of 20")
    kernel.ok("%config BubMagics.budget = 20")
    kernel.refused("%%bub\nwhat now?", "hand off")
    kernel.ok("%handoff lesson/2 summary='short'")
    kernel.ok("%%bub --budget 100000\nwhat now?")
