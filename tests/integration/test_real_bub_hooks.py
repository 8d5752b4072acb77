"""The real Bub 0.5.1 (from PyPI, in its own Python 3.12 environment, ``tests/harness/bub.py``) beside bub_nb: a
plugin marked with Bub's ``@bub.hookimpl`` answers ``admit_message``, ``provide_model_options`` and
``provide_lifespan`` with Bub's own classes in a notebook's pipeline, and a tool result Bub's own spill sidecar wrote
resolves, and lists under its owner, here."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.bub import PLUGIN_PINS, bub_python, bub_venv

from bub_nb import read_tapes
from bub_nb.tape import FileTapeStore
from bub_nb.tape.sidecars import resolve_spill

pytestmark = pytest.mark.integration

OWNER = "494727f0da168296__0898b22730d57afc"

HOOKS = """
import json
from pathlib import Path
import bub
from bub.channels.admission import AdmitDecision
from bub.model_selection import ModelChoice, ModelOptions
from bub_nb.agent import Agent, BuiltinPlugin, TurnPipeline
from bub_nb.errors import PipelineError
from bub_nb.tape import FileTapeStore, Tape

log = []

class Bubbish:
    @bub.hookimpl
    def admit_message(self, session_id, message, turn):
        return AdmitDecision("drop", "not now") if "later" in message.content else AdmitDecision("process")

    @bub.hookimpl
    def provide_model_options(self, session_id, workspace):
        return ModelOptions([ModelChoice("openai:gpt-test", "GPT test")], current_model="openai:gpt-test")

    @bub.hookimpl
    async def provide_lifespan(self):
        log.append("open")
        yield
        log.append("closed")

pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
pipeline.register_plugin(Bubbish(), name="bubbish")
pipeline.start()
agent = Agent(Tape("notebook", FileTapeStore(Path("tapes"))), "offline", pipeline=pipeline)
try:
    agent.run("later, please")
    dropped = None
except PipelineError as exc:
    dropped = str(exc)
after_drop = len(agent.tape)
answered = agent.run("Hello").text
options = pipeline.model_options("s")
during = list(log)
pipeline.close()
print(json.dumps({
    "dropped": dropped, "after_drop": after_drop, "answered": answered, "during": during, "log": log,
    "models": [[c.id, c.name] for c in options.models], "current": options.current_model,
}))
"""


def test_a_plugin_answering_with_bubs_own_classes_admits_chooses_models_and_owns_a_lifespan(tmp_path: Path) -> None:
    ran = bub_python(HOOKS, home=tmp_path, venv=bub_venv(*PLUGIN_PINS, with_bub_nb=True))
    assert ran["dropped"] == "Plugin 'bubbish' did not admit the message; nothing was written: not now"
    assert ran["after_drop"] == 0 and ran["answered"]
    assert ran["models"] == [["openai:gpt-test", "GPT test"]] and ran["current"] == "openai:gpt-test"
    assert ran["during"] == ["open"] and ran["log"] == ["open", "closed"]


SPILL = """
import asyncio, json
from pathlib import Path
from bub.builtin.spill import SpillSettings, SpillStore
from bub.store import AsyncTapeStoreAdapter, FileTapeStore
from bub.tape import Tape, TapeContext, TapeEntry

OWNER = "<owner>"
store = AsyncTapeStoreAdapter(FileTapeStore(Path("tapes")))
spill = SpillStore(SpillSettings(threshold=10))
tape = Tape(archive_path=Path("archive"), store=store, context=TapeContext(), sidecars=(spill,)).scoped(OWNER)
big = "".join(f"row {i}: naïve ✓\\n" for i in range(3000))

async def main():
    await store.append(OWNER, TapeEntry.anchor("session/start", {"owner": "human"}))
    pointer = await spill.spill_tool_result(tape, big, tool="bash", run_id="r1")
    await store.append(OWNER, TapeEntry.tool_result([pointer]))
    return pointer

pointer = asyncio.run(main())
print(json.dumps({"pointer": pointer, "big": big}))
""".replace("<owner>", OWNER)


def test_a_tool_result_bubs_spill_sidecar_wrote_resolves_and_its_sidecar_lists_under_the_owner(tmp_path: Path) -> None:
    ran = bub_python(SPILL, home=tmp_path, venv=bub_venv(*PLUGIN_PINS, with_bub_nb=True))
    pointer, big = ran["pointer"], ran["big"]
    assert pointer.startswith("[tool output spilled: ") and pointer != big
    store = FileTapeStore(tmp_path / "tapes")
    assert sorted(store.list_tapes()) == [OWNER, f"{OWNER}__sidecar__spill"]
    written = [e for e in store.read(OWNER) if e.kind == "tool_result"][-1].payload["results"][0]
    assert written == pointer and resolve_spill(written, store, OWNER) == big
    frame = read_tapes(tmp_path)
    assert set(frame["tape_name"]) == {OWNER} and set(frame["sidecar"]) == {"", "spill"}
