"""User functions become tools with schemas from their hints and docstrings; calls are validated."""

from __future__ import annotations

import asyncio
import enum
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

import jsonschema
import pytest

from bub_nb.agent.tools import Tool, ToolCallError, ToolContext, ToolRegistry, parse_docstring, tool
from bub_nb.agent.tools.builtin import builtin_registry, model_builtins
from bub_nb.context import build_view
from bub_nb.errors import ToolError
from bub_nb.tape import Tape, open_tape


@tool
def convert(amount: float, currency: Literal["EUR", "USD"] = "EUR", round_to: int | None = None) -> str:
    """Convert an amount of money.

    Longer explanation that models do not need to see twice.

    Args:
        amount: How much money, in the
            source currency.
        currency (str): Target currency.
        round_to: Decimal places to keep.

    Returns:
        The converted amount as text.
    """
    value = amount * (1.1 if currency == "USD" else 1.0)
    return f"{round(value, round_to) if round_to is not None else value} {currency}"


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


def run(registry: ToolRegistry, name: str, arguments: Any, context: ToolContext | None = None) -> Any:
    return asyncio.run(registry.call(name, arguments, context))


# -- schemas -----------------------------------------------------------------------------------


def test_a_bare_decorator_takes_name_summary_and_parameter_docs_from_the_function() -> None:
    assert convert.name == "convert"
    assert convert.description.startswith("Convert an amount of money.")
    assert "Returns" not in convert.description
    properties = convert.parameters["properties"]
    assert properties["amount"] == {"type": "number", "description": "How much money, in the source currency."}
    assert properties["currency"] == {
        "type": "string",
        "enum": ["EUR", "USD"],
        "description": "Target currency.",
        "default": "EUR",
    }
    assert properties["round_to"]["type"] == ["integer", "null"]
    assert convert.parameters["required"] == ["amount"]


def test_a_decorated_function_still_works_as_a_function() -> None:
    assert convert(10, "EUR") == "10.0 EUR"


def test_the_decorator_takes_a_dotted_name_and_a_description() -> None:
    @tool(name="math.add", description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    assert (add.name, add.model_name, add.description) == ("math.add", "math_add", "Add two integers.")
    assert add.schema()["function"]["name"] == "math_add"


def test_containers_enums_and_annotations_become_json_schema() -> None:
    @tool
    def plot(
        columns: list[str],
        limits: dict[str, float],
        color: Color,
        title: Annotated[str, "Shown above the chart"],
        flags: tuple[bool, ...] = (),
        extra: Any = None,
    ) -> None:
        """Plot columns."""

    properties = plot.parameters["properties"]
    assert properties["columns"] == {"type": "array", "items": {"type": "string"}}
    assert properties["limits"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert properties["color"] == {"enum": ["red", "blue"]}
    assert properties["title"] == {"type": "string", "description": "Shown above the chart"}
    assert properties["flags"]["items"] == {"type": "boolean"}
    assert properties["extra"] == {"default": None}
    jsonschema.Draft202012Validator.check_schema(plot.parameters)


def test_numpy_style_docstrings_document_parameters() -> None:
    summary, documented = parse_docstring(
        """Search the tape.

        Parameters
        ----------
        query : str
            Text to look for,
            case-insensitive.
        limit : int, optional
            How many entries at most.

        Returns
        -------
        list
        """
    )
    assert summary == "Search the tape."
    assert documented == {"query": "Text to look for, case-insensitive.", "limit": "How many entries at most."}


def test_a_function_without_docstring_is_described_by_its_name() -> None:
    def shout(text: str) -> str:
        return text.upper()

    assert tool(shout).description == "shout"


def test_tool_names_that_models_cannot_call_are_refused() -> None:
    with pytest.raises(ToolError, match="'my tool'"):
        tool(name="my tool")(convert.handler)


def test_schemas_use_underscored_names_as_openai_requires() -> None:
    registry = ToolRegistry([tool(name="tape.handoff")(convert.handler), convert])
    assert [schema["function"]["name"] for schema in registry.schemas()] == ["tape_handoff", "convert"]
    assert all(schema["type"] == "function" for schema in registry.schemas())


# -- the registry ------------------------------------------------------------------------------


def test_tools_are_found_by_dotted_or_underscored_name() -> None:
    registry = ToolRegistry([tool(name="tape.info")(lambda: "info")])
    assert registry.get("tape.info") is registry.get("tape_info")
    assert "tape_info" in registry
    assert "tape.info" in registry


def test_an_unknown_tool_names_itself_and_the_known_ones() -> None:
    registry = ToolRegistry([convert, tool(name="tape.info")(lambda: "info")])
    with pytest.raises(ToolCallError, match=r"Unknown tool 'plot'; known tools: convert, tape.info") as raised:
        run(registry, "plot", {})
    assert raised.value.as_result()["kind"] == "not_found"


def test_registering_a_name_again_replaces_the_tool() -> None:
    registry = ToolRegistry()
    registry.register(tool(name="answer")(lambda: 1))
    registry.register(tool(name="answer")(lambda: 2))
    assert len(registry) == 1
    assert run(registry, "answer", None) == 2


def test_select_keeps_named_and_globbed_tools() -> None:
    registry = ToolRegistry(
        [tool(name=name)(lambda name=name: name) for name in ("tape.info", "tape.search", "memory.save")] + [convert]
    )
    assert registry.select(["tape.*", "convert"]).names == ["tape.info", "tape.search", "convert"]
    assert registry.select(["memory_save"]).names == ["memory.save"]
    with pytest.raises(ToolCallError, match=r"'shell\.run'"):
        registry.select(["shell.run"])


# -- calls -------------------------------------------------------------------------------------


def test_json_arguments_are_parsed_validated_and_passed() -> None:
    registry = ToolRegistry([convert])
    assert run(registry, "convert", '{"amount": 2, "currency": "USD", "round_to": 1}') == "2.2 USD"
    assert run(registry, "convert", {"amount": 3}) == "3.0 EUR"


def test_malformed_json_is_an_input_error_naming_the_tool() -> None:
    with pytest.raises(ToolCallError, match=r"Tool 'convert' got arguments that are not JSON: '\{amount: 2'") as raised:
        run(ToolRegistry([convert]), "convert", "{amount: 2")
    assert raised.value.kind == "invalid_input"


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "'amount' is a required property"),
        ({"amount": "ten"}, r"invalid amount: 'ten' is not of type 'number'"),
        ({"amount": 1, "currency": "GBP"}, r"invalid currency: 'GBP' is not one of \['EUR', 'USD'\]"),
        ({"amount": 1, "rate": 2}, r"'rate' was unexpected"),
        ([1, 2], "needs a JSON object of arguments"),
    ],
)
def test_arguments_that_do_not_fit_the_schema_say_what_is_wrong(arguments: Any, problem: str) -> None:
    with pytest.raises(ToolCallError, match=f"Tool 'convert' .*{problem}") as raised:
        run(ToolRegistry([convert]), "convert", arguments)
    assert raised.value.as_result() == {"kind": "invalid_input", "message": str(raised.value)}


def test_a_failing_tool_becomes_an_error_result_for_the_model() -> None:
    @tool
    def divide(a: int, b: int) -> float:
        return a / b

    with pytest.raises(ToolCallError) as raised:
        run(ToolRegistry([divide]), "divide", {"a": 1, "b": 0})
    assert raised.value.as_result() == {
        "kind": "tool",
        "message": "Tool 'divide' failed: ZeroDivisionError: division by zero",
    }
    assert isinstance(raised.value.__cause__, ZeroDivisionError)


def test_async_tools_are_awaited() -> None:
    @tool
    async def fetch(key: str) -> str:
        await asyncio.sleep(0)
        return f"value of {key}"

    assert run(ToolRegistry([fetch]), "fetch", {"key": "k"}) == "value of k"


def test_the_context_parameter_is_injected_and_hidden_from_the_schema(tmp_path: Any) -> None:
    @tool
    def last_anchor(context: ToolContext, phase: bool = True) -> str:
        """Name the last anchor."""
        assert context.tape is not None
        anchor = context.tape.last_anchor(phase=phase)
        return anchor.name if anchor else "(none)"

    assert list(last_anchor.parameters["properties"]) == ["phase"]
    tape = open_tape("tools", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    assert run(ToolRegistry([last_anchor]), "last_anchor", {}, ToolContext(tape=tape)) == "session/start"


def test_call_sync_works_inside_a_running_event_loop() -> None:
    registry = ToolRegistry([convert])

    async def kernel() -> Any:
        return registry.call_sync("convert", {"amount": 1})

    assert asyncio.run(kernel()) == "1.0 EUR"
    assert registry.call_sync("convert", '{"amount": 5}') == "5.0 EUR"


def test_a_tool_built_by_hand_is_validated_against_its_own_schema() -> None:
    echo = Tool(
        "text.echo",
        "Echo text.",
        {"type": "object", "properties": {"text": {"type": "string", "maxLength": 3}}, "required": ["text"]},
        lambda text: text,
    )
    assert run(ToolRegistry([echo]), "text_echo", {"text": "abc"}) == "abc"
    with pytest.raises(ToolCallError, match="'abcd' is too long"):
        run(ToolRegistry([echo]), "text_echo", {"text": "abcd"})


# -- the builtin tools -------------------------------------------------------------------------


@pytest.fixture
def tape(tmp_path: Any) -> Tape:
    tape = open_tape("builtin", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    return tape


def call(tape: Tape, name: str, arguments: Any = None) -> Any:
    return run(builtin_registry(), name, arguments, ToolContext(tape=tape))


def test_the_builtins_are_the_tape_and_memory_tools_only() -> None:
    assert builtin_registry().names == [
        "tape.handoff",
        "tape.anchors",
        "tape.info",
        "tape.search",
        "tape.reset",
        "tape.retract",
        "tape.unretract",
        "memory.save",
        "memory.daily",
        "memory.recall",
        "memory.show",
        "memory.clear",
    ]
    assert "tape.retract" not in model_builtins(True).names  # a model is given it only when the user names it


def test_the_handoff_schema_is_the_one_handoff_documents() -> None:
    function = builtin_registry().get("tape.handoff").schema()["function"]
    assert function["name"] == "tape_handoff"
    assert function["parameters"]["required"] == ["name"]
    properties = {"name", "summary", "next_steps", "summarize", "to", "reason", "share"}
    assert set(function["parameters"]["properties"]) == properties


def test_handoff_state_reaches_the_model(tape: Tape) -> None:
    tape.append_message({"role": "user", "content": "design the schema"})
    output = call(tape, "tape_handoff", '{"name": "phase/db", "summary": "5 tables", "next_steps": "routes"}')
    assert output.startswith("anchor added: phase/db")
    first = build_view(tape).messages[0]
    assert first == {
        "role": "assistant",
        "content": '[Anchor created: phase/db]: {"summary": "5 tables", "next_steps": "routes"}',
    }


def test_anchors_shows_the_most_recent_phase_anchors(tape: Tape) -> None:
    for phase in ("a", "b", "c"):
        tape.handoff(f"phase/{phase}")
    tape.memory.save_long_term("memory anchors are not phases")
    listed = call(tape, "tape.anchors", {"limit": 2}).splitlines()
    assert listed[0] == "(2 earlier anchors not shown)"
    assert [line.split()[1] for line in listed[1:]] == ["phase/b", "phase/c"]


def test_search_says_when_nothing_matches(tape: Tape) -> None:
    assert call(tape, "tape.search", {"query": "nowhere"}) == "(no entries match 'nowhere')"


def test_search_leaves_retracted_hits_out_and_still_finds_as_many_older_ones(tape: Tape) -> None:
    ids = [tape.append_message({"role": "user", "content": f"note {n}"}).id for n in range(8)]
    tape.retract(f"{ids[5]}-{ids[7]}", reason="wrong")
    found = call(tape, "tape.search", {"query": "note", "limit": 3}).splitlines()
    assert found[0] == "(3 retracted entries match and are left out)"
    assert [line.split()[1] for line in found[1:4]] == [f"#{ids[4]}", f"#{ids[3]}", f"#{ids[2]}"]
    assert "more entries match" in found[-1]


def test_info_is_the_tapes_own_report(tape: Tape) -> None:
    assert call(tape, "tape.info") == str(tape.info())


def test_reset_starts_the_tape_over_and_archives_by_default(tape: Tape) -> None:
    tape.append_message({"role": "user", "content": "old"})
    answer = call(tape, "tape.reset")
    assert answer.startswith("tape reset; the old tape is archived at ")
    assert [entry.kind for entry in tape.read()] == ["anchor", "event"]
    archived = tape.read()[0].payload["state"]["archived"]
    assert archived in answer and "old" in Path(archived).read_text()


def test_memory_save_and_daily_land_in_the_memory_zone(tape: Tape) -> None:
    assert call(tape, "memory.save", {"content": "Prefers dark plots"}) == "saved to long-term memory (version 1)"
    today = datetime.now(UTC).date().isoformat()
    assert call(tape, "memory.daily", {"content": "Cleaned the survey data"}).startswith(
        f"added to daily notes of {today}"
    )
    snapshot = tape.memory.read()
    assert snapshot.long_term == "Prefers dark plots"
    assert "Cleaned the survey data" in (snapshot.daily(today) or "")


def test_recall_filters_by_text_and_by_days(tape: Tape) -> None:
    today = datetime.now(UTC).date()
    zone = tape.memory
    zone.save_long_term("Uses pandas")
    zone.append_daily("Fixed the pandas merge", (today - timedelta(days=1)).isoformat())
    zone.append_daily("Plotted with matplotlib", (today - timedelta(days=10)).isoformat())
    recalled = call(tape, "memory.recall", {"query": "PANDAS", "days": 3})
    assert "Uses pandas" in recalled and "Fixed the pandas merge" in recalled
    assert "matplotlib" not in recalled
    assert "matplotlib" in call(tape, "memory.recall", {"days": 30})
    assert call(tape, "memory.recall", {"query": "rust"}) == "(no memories mention 'rust')"


def test_memory_show_and_clear(tape: Tape) -> None:
    assert call(tape, "memory.show") == "no memory zone on this tape yet"
    call(tape, "memory.save", {"content": "Likes tables"})
    assert "long-term: Likes tables" in call(tape, "memory.show")
    assert call(tape, "memory.clear") == "memory cleared (version 2)"
    assert tape.memory.read().is_empty


def test_a_builtin_tool_without_a_tape_says_so() -> None:
    with pytest.raises(ToolCallError, match="works on a tape"):
        run(builtin_registry(), "tape.info", {})
