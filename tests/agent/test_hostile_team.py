"""A hostile model in a team of agents: whatever it asks of ``tape.handoff`` (to itself, to nobody, to a name of
hundreds of characters, to a teammate, with any reason, summary and share), every handoff is whole on both tapes or
marked failed on the sender's, the holder is a member of the team, an agent that may not run writes nothing, and no
view holds an entry twice.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from harness.hostile_model import HostileModel, Move, moves, texts
from harness.tapes import bub_read
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bub_nb.agent import Agent
from bub_nb.agent.team import CONTEXT_HANDOFF, HANDOFF_FAILED, Team
from bub_nb.context import FULL, LAST_ANCHOR, PHASES, build_view, window
from bub_nb.errors import BubNbError, NotHoldingError
from bub_nb.tape import FileTapeStore, Tape

EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "30"))
AGENTS = ("analyst", "reviewer")
FAILURES = (BubNbError, ValueError, RuntimeError, TimeoutError)

receivers = st.sampled_from([*AGENTS, "main", "nobody", "", "x" * 300, "Reviewer", "reviewer ", "../analyst"])
handoff_arguments = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["review/1", "phase/back", "memory/open", "session/start", "", "a" * 200]),
        "to": receivers,
    },
    optional={
        "reason": texts(),
        "summary": st.one_of(texts(), st.just("See [#1] and [#2-#999999].")),
        "next_steps": texts(),
        "share": st.one_of(st.booleans(), st.sampled_from(["yes", 1, None])),
        "summarize": st.booleans(),
    },
).map(lambda arguments: json.dumps(arguments, ensure_ascii=False))
handoff_moves = st.lists(
    st.builds(
        Move,
        st.just("calls"),
        texts(),
        st.lists(st.tuples(st.just("tape_handoff"), handoff_arguments), min_size=1, max_size=2).map(tuple),
    ),
    min_size=1,
    max_size=3,
)
scripts = st.lists(st.one_of(handoff_moves, moves(3)), min_size=1, max_size=4)


def handoff_anchors(tape: Tape) -> list[tuple[int, str, dict[str, Any]]]:
    """Every anchor of ``tape`` that carries a handoff between agents: (id, name, record)."""
    found = []
    for entry in tape.read(kinds=("anchor",)):
        state = entry.payload.get("state")
        record = state.get(CONTEXT_HANDOFF) if isinstance(state, dict) else None
        if isinstance(record, dict):
            found.append((entry.id, str(entry.payload.get("name")), record))
    return found


def archived_anchors(home: Path, tape: Tape) -> list[tuple[int, str, dict[str, Any]]]:
    """The handoff anchors the archives of ``tape`` keep (a reset moved them there)."""
    found = []
    for path in sorted(home.glob(f"{tape.name}.jsonl.*.bak")):
        for record in bub_read(path):
            state = record["payload"].get("state") if record["kind"] == "anchor" else None
            handoff = state.get(CONTEXT_HANDOFF) if isinstance(state, dict) else None
            if isinstance(handoff, dict):
                found.append((record["id"], str(record["payload"].get("name")), handoff))
    return found


def assert_whole_or_marked(home: Path, team: Team) -> None:
    """Each sender's anchor has its receiver's twin (on its tape, or in the archive a reset left), or a failure
    mark; each receiver's anchor names an anchor the sender wrote."""
    tapes = {name: tape for name, tape in team.tapes().items() if tape.store.exists(tape.name)}
    received = {
        (record["content"]["anchor"], agent): name
        for agent, tape in tapes.items()
        for _id, name, record in [*handoff_anchors(tape), *archived_anchors(home, tape)]
        if record.get("to") == f"agent:{agent}"
    }
    for agent, tape in tapes.items():
        failed = {e.payload["data"]["anchor"] for e in tape.read(kinds=("event",)) if e.name == HANDOFF_FAILED}
        for anchor_id, name, record in handoff_anchors(tape):  # a reset archives the sender's anchors with the rest
            if record.get("from") != f"agent:{agent}":
                continue
            receiver = str(record["to"]).removeprefix("agent:")
            twin = received.get((f"tape://{tape.name}/entry/{anchor_id}", receiver))
            assert twin == name or anchor_id in failed, f"{agent}'s handoff #{anchor_id} is half written"
    for (address, agent), name in received.items():
        sender_tape, _, anchor_id = address.removeprefix("tape://").rpartition("/entry/")
        sender = Tape(sender_tape, team.tape.base_store)
        kept = {anchor: kept_name for anchor, kept_name, _ in archived_anchors(home, sender)}
        sent = sender.get(int(anchor_id)) if int(anchor_id) <= sender.last_id else None
        sent_name = sent.payload.get("name") if sent is not None and sent.kind == "anchor" else None
        assert name in (sent_name, kept.get(int(anchor_id))), f"{agent} received {name!r} from nothing"


def assert_views_hold_each_entry_once(team: Team) -> None:
    for tape in team.tapes().values():
        if not tape.store.exists(tape.name):
            continue
        assert bub_read(tape.path), f"Bub's reader finds nothing in {tape.name}"  # type: ignore[arg-type]
        for mode in (LAST_ANCHOR, FULL, PHASES, window(3)):
            ids = build_view(tape, mode).entry_ids
            assert len(ids) == len(set(ids)), f"a {mode} view of {tape.name} holds an entry twice"


def play(home: Path, scripts: list[list[Move]]) -> None:
    tape = Tape("class", FileTapeStore(home))
    team = Team(tape, [Agent(tape, "offline", name=name) for name in AGENTS])
    team.agent("analyst").run("Which region grew fastest?")  # type: ignore[union-attr]
    for number, script in enumerate(scripts):
        name = team.holder() or AGENTS[number % 2]
        assert name in team.names, f"the holder {name!r} is not a member"
        agent = team.add(Agent(tape, HostileModel(script), name=name, max_steps=4))
        assert agent is not None
        others = {other: len(team.tape_of(other)) for other in AGENTS if other != name}
        try:
            agent.run("go on")
        except NotHoldingError:
            raise AssertionError(f"the holder {name!r} was refused") from None
        except FAILURES:
            pass
        for other in AGENTS:  # an agent that handed the conversation away may not run, and writes nothing
            if other == name or other not in others or team.holder() in (None, other):
                continue
            refused = team.add(Agent(tape, "offline", name=other))
            count = len(team.tape_of(other))
            try:
                refused.run("me again")  # type: ignore[union-attr]
            except NotHoldingError:
                assert len(team.tape_of(other)) == count, f"{other} was refused but wrote"
    assert_whole_or_marked(home, team)
    assert_views_hold_each_entry_once(team)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(scripts=scripts)
@example(
    scripts=[
        [Move("calls", "", (("tape_handoff", json.dumps({"name": "review/1", "to": "reviewer", "summary": "[#1]"})),))],
        [Move("calls", "", (("tape_handoff", json.dumps({"name": "phase/back", "to": "analyst", "share": True})),))],
        [Move("calls", "", (("tape_handoff", json.dumps({"name": "review/2", "to": "analyst"})),))],
    ]
)
@example(  # the holder resets its tape: the handoff it received goes to the archive, whole
    scripts=[
        [Move("calls", "", (("tape_handoff", json.dumps({"name": "review/1", "to": "reviewer"})),))],
        [Move("calls", "", (("tape_reset", "{}"),))],
    ]
)
def test_no_hostile_handoff_between_agents_is_half_written_or_strands_the_conversation(
    scripts: list[list[Move]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    play(tmp_path_factory.mktemp("team"), scripts)
