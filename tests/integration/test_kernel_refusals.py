"""Refusals as a user meets them in a real Jupyter kernel: one UsageError line, and the tape unchanged."""

from __future__ import annotations

import json

import pytest
from harness.kernel import Kernel

from bub_nb.testing import OpenAICompatibleServer


@pytest.fixture
def kernel(offline_kernel: Kernel) -> Kernel:
    """These refusals happen on the offline model."""
    return offline_kernel


def test_every_refusal_in_a_kernel_is_one_usage_error_and_writes_nothing(kernel: Kernel) -> None:
    kernel.ok("import pandas as pd\ndef takes_df(df: pd.DataFrame) -> int:\n    return len(df)")
    kernel.refused("%%bub --context nosuch\nHello", "Anchor 'nosuch' was not found")
    assert kernel.entries() == 0  # not even session/start
    kernel.ok("%%bub\nHello")
    kernel.ok("%memory save likes tea")
    kernel.refused("%%bub --context nosuch\nHello", "Anchor 'nosuch' was not found")
    kernel.refused("%%bub -m nosuch:model\nHello", "Unknown model spec")
    kernel.refused("%%bub --tools takes_df\nHello", "Parameter 'df' of 'takes_df' is annotated DataFrame")
    kernel.refused("%%bub -o class\nHello", "is not a valid variable name")
    kernel.refused("%%bub\nAbout {missing}", "missing")
    kernel.refused("%%bub\n,compact now", "Unknown command ',compact'")
    kernel.refused("%handoff memory/open version=99", "'memory/' belong to the memory zone")
    kernel.refused("%handoff memory/seal version=99", "'memory/' belong to the memory zone")
    kernel.refused("%%bub\n,handoff memory/notes", "'memory/' belong to the memory zone")
    kernel.refused("%tape use session_graph", "Tape name 'session_graph' is reserved")
    kernel.refused("%tape use nosuch-tape", "Tape 'nosuch-tape' does not exist")
    kernel.refused("%tape", "%tape needs a subcommand")
    kernel.refused("%handoff", "%handoff needs an anchor NAME")
    kernel.refused(
        "from bub_nb.agent.models import OfflineModel\nsmall = OfflineModel(context_window=300)\n"
        "get_ipython().run_cell_magic('bub', '-m small', 'long words ' * 400)",
        "prompt alone is ≈",
    )
    memory = kernel.ok("print(get_ipython().find_magic('tape').__self__.session.tape.memory.read().long_term)")
    assert memory.strip() == "likes tea"
    kernel.ok("%handoff phase/big x=123456789012345678901234567890")
    state = kernel.ok(
        "import json\ntape = get_ipython().find_magic('tape').__self__.session.tape\n"
        "print(json.dumps(tape.read(kinds=('anchor',))[-1].payload['state']))"
    )
    assert json.loads(state) == {"x": 123456789012345678901234567890}


def test_a_changed_endpoint_in_a_kernel_takes_effect_on_the_next_cell(kernel: Kernel) -> None:
    with OpenAICompatibleServer() as first, OpenAICompatibleServer(api_key="key-two") as second:
        first.reply("From the first endpoint.")
        second.reply("From the second endpoint.")
        kernel.ok(f"import os\nos.environ['BUB_API_BASE'] = {first.base_url!r}")
        kernel.ok("%%bub -m openai:test-model -o answer\nHello")
        assert kernel.ok("print(answer)").strip() == "From the first endpoint."
        kernel.ok(f"os.environ['BUB_API_BASE'] = {second.base_url!r}\nos.environ['BUB_API_KEY'] = 'key-two'")
        kernel.ok("%%bub -m openai:test-model -o answer\nHello again")
        assert kernel.ok("print(answer)").strip() == "From the second endpoint."
        assert (len(first.requests), len(second.requests)) == (1, 1)


def test_an_auto_handoff_in_a_kernel_shows_its_notice_in_the_cell(kernel: Kernel) -> None:
    with OpenAICompatibleServer() as server:
        kernel.ok(f"import os\nos.environ['BUB_API_BASE'] = {server.base_url!r}")
        for number in range(4):
            kernel.ok(f"%%bub -m openai:test-model\nPart {number}: " + "a long paragraph about tapes " * 40)
        server.context_window = 1000  # the history no longer fits; the prompt after an anchor does
        server.reply("Recovered.")
        shown = kernel.ok("%%bub -m openai:test-model\nWhat next?")
    notice = shown.strip().splitlines()[-1]
    assert notice.startswith(
        "Warning: The prompt did not fit the model's context: handoff auto_handoff/context_overflow #"
    )
    assert "entries left the view" in notice


def test_a_mistyped_model_is_refused_naming_the_notebooks_models_not_asking_for_a_key(
    offline_kernel: Kernel,
) -> None:
    offline_kernel.ok("from bub_nb.agent.models import OfflineModel\nsmall = OfflineModel(context_window=800)")
    before = offline_kernel.entries()
    status, shown = offline_kernel.outcome("%%bub -m smal\nHello")
    assert status == "error" and "No notebook variable or known model is named 'smal'" in shown
    assert "did you mean small?" in shown and "API key" not in shown
    offline_kernel.ok("del small")  # as a restart loses it
    status, shown = offline_kernel.outcome("%%bub -m small\nHello")
    assert status == "error" and "No notebook variable or known model is named 'small' (models: offline)" in shown
    assert offline_kernel.entries() == before  # refused before the first write
    assert "offline" in offline_kernel.ok("%%bub -m offline\nHello")


def test_a_refused_turn_leaves_no_waiting_placeholder_above_its_error(offline_kernel: Kernel) -> None:
    content, outputs = offline_kernel.run("%%bub --budget 1\nHello")
    assert content["status"] == "error"
    final: dict[str, str] = {}  # what each display shows in the end, as the saved notebook keeps it
    for output in outputs:
        if output["type"] in ("display_data", "update_display_data"):
            final[output.get("transient", {}).get("display_id", "")] = output["data"].get("text/plain", "")
    assert "…" not in final.values()
