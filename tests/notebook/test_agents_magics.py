"""``%agent``, ``%%bub --agent``, ``%handoff --to`` and its comma form on a real InteractiveShell."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.shell import Notebook
from IPython.core.error import UsageError

from bub_nb.agent.team import CONTEXT_HANDOFF, Team
from bub_nb.tape import FileTapeStore, Tape, TapeEntry
from bub_nb.tape.events import AGENT


def counts(nb: Notebook) -> dict[str, int]:
    """Each agent's entries, leaving out the definitions ``%agent`` records on the notebook's tape."""
    team = nb.magics.session.team()
    return {name: len(tape) - len(definitions(tape)) for name, tape in team.tapes().items()}


def definitions(tape: Tape) -> list[TapeEntry]:
    return [e for e in tape.read() if e.kind == "event" and e.payload["name"] == AGENT] if len(tape) else []


def two_agents(nb: Notebook) -> None:
    nb.run("%agent analyst --instructions 'You analyse data.'")
    nb.run("%agent reviewer -m offline")
    nb.run("%%bub --agent analyst\nWhat is the mean of 1, 2 and 3?")


def test_agent_alone_lists_the_agents_their_tapes_and_the_holder(nb: Notebook) -> None:
    nb.run("%agent analyst -m offline")
    nb.run("%agent")
    shown = nb.shown()
    assert f"`{nb.tape.name}~analyst`" in shown and "| main |" in shown
    assert "Nobody has been handed the conversation" in shown and "Handoffs" not in shown


def test_a_cell_without_agent_still_runs_on_the_notebooks_tape(nb: Notebook) -> None:
    nb.run("%%bub\nhello")
    assert len(nb.tape) > 0
    assert nb.magics.session.last_agent.name is None


def test_each_agent_runs_on_its_own_tape_with_its_own_settings(nb: Notebook) -> None:
    two_agents(nb)
    analyst = nb.magics.session.last_agent
    assert analyst.name == "analyst" and analyst.tape.name == f"{nb.tape.name}~analyst"
    assert "You analyse data." in analyst.instructions
    assert counts(nb)["main"] == 0 and counts(nb)["analyst"] > 0


def test_a_transfer_makes_the_receiver_the_holder_and_the_sender_refuses_until_handed_back(nb: Notebook) -> None:
    two_agents(nb)
    nb.run("%handoff review/1 --to reviewer --from analyst --reason 'second opinion' summary='A mean [#6]'")
    assert "`reviewer` holds the conversation now" in nb.shown()
    nb.run("%%bub\nIs the mean right?")
    assert nb.magics.session.last_agent.name == "reviewer"
    before = counts(nb)
    with pytest.raises(UsageError, match=r"'analyst' handed the conversation to 'reviewer'.*'reviewer' holds it now"):
        nb.run("%%bub --agent analyst\nAnything else?")
    assert counts(nb) == before
    nb.run("%handoff review/done --to analyst summary='Checked'")
    nb.run("%%bub\nThanks")
    assert nb.magics.session.last_agent.name == "analyst"
    nb.run("%agent")
    there, back = "analyst → reviewer (transfer, anchor review/1)", "reviewer → analyst (transfer, anchor review/done)"
    assert f"Handoffs, oldest first: {there}; {back}." in nb.shown()


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("%handoff h --to nobody", "No agent named 'nobody'"),
        ("%handoff h --from analyst --to analyst", "cannot hand the conversation to itself"),
        ("%handoff h --reason why", "go with --to AGENT"),
        ("%handoff h --from analyst --to reviewer summary='see [#999]'", "cites \\[#999\\]"),
        ("%handoff h --from analyst --to reviewer refs=1", "'refs' is the handoff's own"),
        ("%agent main", "'main' is the notebook's unnamed agent"),
        ("%agent 9lives", "Agent name '9lives' is not allowed"),
        ("%%bub --agent nobody\nhi", "No agent named 'nobody'"),
    ],
)
def test_bad_agent_lines_are_one_line_and_write_nothing(nb: Notebook, line: str, match: str) -> None:
    two_agents(nb)
    before = counts(nb)
    with pytest.raises(UsageError, match=match):
        nb.run(line)
    assert counts(nb) == before


def test_the_comma_form_hands_off_to_another_agent(nb: Notebook) -> None:
    two_agents(nb)
    nb.run("%%bub --agent analyst\n,handoff name=review/1 to=reviewer reason='check it' summary='asked [#6]'")
    team = nb.magics.session.team()
    assert team.holder() == "reviewer"
    received = team.tape_of("reviewer").read()
    assert received[0].kind == "anchor" and received[1].payload["name"] == CONTEXT_HANDOFF
    assert received[0].payload["state"][CONTEXT_HANDOFF]["content"]["refs"] == [
        f"tape://{nb.tape.name}~analyst/entry/6"
    ]
    nb.run(",handoff name=back to=analyst summary='done'")  # a bare comma cell runs as the holder
    assert team.holder() == "analyst" and [p.sender for p in team.history()] == ["analyst", "reviewer"]


def test_the_model_can_call_in_another_agent_with_the_handoff_tool(nb: Notebook) -> None:
    from bub_nb.agent import ScriptedModel

    call = {"name": "tape_handoff", "arguments": {"name": "specialist", "to": "reviewer", "reason": "needs review"}}
    nb.shell.user_ns["scripted"] = ScriptedModel([{"tool_calls": [call]}, "Handed to the reviewer."])
    nb.run("%agent reviewer -m offline")
    nb.run("%%bub -m scripted\nPlease get this reviewed")
    team = nb.magics.session.team()
    assert team.holder() == "reviewer" and [p.sender for p in team.history()] == ["main"]


def test_context_of_an_agent_shows_its_view_and_the_cited_entries_only_on_request(nb: Notebook) -> None:
    two_agents(nb)
    nb.run("%handoff review/1 --from analyst --to reviewer summary='A mean was asked [#6]'")
    nb.run("%context --agent reviewer")
    assert "references the view's anchor carries" not in nb.shown()
    nb.run("%context --agent reviewer --expand-refs")
    shown = nb.shown()
    assert f"`tape://{nb.tape.name}~analyst/entry/6` (message): What is the mean of 1, 2 and 3?" in shown
    assert "(shown here, not sent to the model)" in shown
    with pytest.raises(UsageError, match="--expand-refs goes with the view the next turn would send"):
        nb.run("%context --agent reviewer --turn -1 --expand-refs")


def test_the_lanes_draw_each_agent_and_the_handoffs_between_them(nb: Notebook, tmp_path: Path) -> None:
    from bub_nb.notebook.widgets import AgentLanes

    two_agents(nb)
    nb.run("%handoff review/1 --from analyst --to reviewer summary='A mean was asked [#6]'")
    nb.run("%%bub\nIs it right?")
    nb.run("%agent --lanes")
    lanes = AgentLanes(nb.tape)
    text = lanes.to_text()
    assert "analyst" in text and "→reviewer" in text and "←analyst" in text
    html = lanes.to_html()
    assert 'class="bub-handoff-from" data-to="reviewer" data-ownership="transfer" data-reached="true"' in html
    nb.run(f"%tape export md {tmp_path / 'story.md'}")
    story = (tmp_path / "story.md").read_text()
    assert "Handoff **analyst → reviewer** (transfer) anchor review/1" in story and "**reviewer** was asked" in story
    with pytest.raises(UsageError, match="--lanes draws every agent"):
        nb.run("%agent analyst --lanes")


def test_a_plain_handoff_goes_on_the_holders_tape(nb: Notebook) -> None:
    two_agents(nb)
    nb.run("%handoff review/1 --from analyst --to reviewer")
    nb.run("%handoff phase/checking summary='halfway'")
    reviewer = nb.magics.session.team().tape_of("reviewer")
    assert reviewer.last_anchor().name == "phase/checking" and counts(nb)["main"] == 0


def test_who_holds_the_conversation_is_read_from_the_tapes_after_a_restart(nb: Notebook) -> None:
    two_agents(nb)
    nb.run("%handoff review/1 --from analyst --to reviewer")
    nb.run("%unload_ext bub_nb")
    nb.run("%load_ext bub_nb")  # a fresh session, as after a kernel restart: nothing kept in memory
    nb.run("%agent analyst\n%agent reviewer")
    assert nb.magics.session.team().holder() == "reviewer"
    with pytest.raises(UsageError, match="'reviewer' holds it now"):
        nb.run("%%bub --agent analyst\nStill mine?")
    nb.run("%%bub\nAnd now?")
    assert nb.magics.session.last_agent.name == "reviewer"


def test_while_an_agent_holds_the_conversation_every_command_acts_on_its_tape_and_names_it(nb: Notebook) -> None:
    two_agents(nb)
    nb.run("%handoff review/1 --from analyst --to reviewer")
    nb.run("%%bub\nIs the mean right?")  # runs as the reviewer, the holder
    team = nb.magics.session.team()
    reviewer, analyst = team.tape_of("reviewer"), team.tape_of("analyst")
    asked = next(e.id for e in reviewer.read() if e.payload.get("role") == "user")
    main_before, analyst_before = len(nb.tape), len(analyst)

    nb.run(f"%tape retract {asked}")
    assert reviewer.read()[-1].payload["name"] == "retract"
    assert f"on tape `{reviewer.name}`" in nb.shown().split("Retracted")[-1]
    nb.run(f"%tape unretract {asked}")
    assert reviewer.read()[-1].payload["name"] == "unretract"
    assert nb.run("%tape info").name == reviewer.name
    assert set(nb.run("%tape df")["id"]) == {entry.id for entry in reviewer.read()}
    listed = nb.run("%anchors")
    assert listed["name"].tolist() == [anchor.name for anchor in reviewer.anchors(limit=None)]
    nb.run("%memory save The reviewer checks every figure.")
    assert f"on tape `{reviewer.name}`" in nb.shown().split("Long-term memory saved")[-1]
    nb.run(",anchors")
    assert f"on tape `{reviewer.name}`" in nb.shown().split("review/1")[-1]
    assert (len(nb.tape), len(analyst)) == (main_before, analyst_before)  # nothing went anywhere else

    answered = next(e.id for e in analyst.read() if e.payload.get("role") == "assistant")
    nb.run(f"%tape retract {answered} --agent analyst")
    assert analyst.read()[-1].payload["name"] == "retract" and len(nb.tape) == main_before
    nb.refused("%tape fork elsewhere --agent analyst", "--agent goes with info, df, search")


def test_a_preview_and_its_accept_work_while_a_named_agent_holds_the_conversation(nb: Notebook) -> None:
    two_agents(nb)
    nb.run("%handoff review/1 --from analyst --to reviewer")
    nb.run("%%bub\nIs the mean right?")
    reviewer = nb.magics.session.team().tape_of("reviewer")
    nb.run("%handoff p6 --summarize --preview")
    nb.run("%handoff p6 --accept")
    assert reviewer.last_anchor().name == "p6"
    nb.run("%%bub\nAnd now?")
    nb.run(",handoff name=p7 summarize=true preview=true")
    nb.run(",handoff name=p7 accept=true")
    assert reviewer.last_anchor().name == "p7"


@pytest.mark.parametrize("span", ["-3-5", "-3"])
def test_a_negative_span_to_retract_is_one_line_naming_what_an_id_is(nb: Notebook, span: str) -> None:
    nb.run("%%bub\nhello")
    nb.refused(f"%tape retract {span}", f"takes an entry id \\(7\\) or an inclusive range of ids.*got '{span}'")


def test_a_tape_setting_that_names_another_roles_tape_without_a_database_is_refused_when_set(
    nb: Notebook, capsys: pytest.CaptureFixture[str]
) -> None:
    nb.run("%config BubMagics.tape = 'ann/lesson'")  # %config reports the refusal and keeps the value
    assert nb.magics.tape == "" and "only a database has" in capsys.readouterr().err
    nb.run("%%bub\nhello")  # every magic goes on working
    nb.run("%config BubMagics.tape = 'lesson'")
    assert nb.tape.name == "lesson"


def test_a_handoff_another_kernel_writes_moves_the_next_plain_cell_here(nb: Notebook) -> None:
    nb.run("%%bub\nhello")  # this kernel knows no agents yet
    other_kernel = Team(Tape(nb.tape.name, FileTapeStore(nb.tape.path.parent)))
    other_kernel.define("rev", {"model": "offline", "instructions": None, "tools": None, "context": None})
    other_kernel.handoff("h1", to="rev")
    main_entries = len(nb.tape)
    nb.run("%%bub\nWho answers now?")
    assert nb.magics.session.last_agent.name == "rev" and len(nb.tape) == main_entries
    nb.refused("%%bub --agent main\nMay I?", "'main' handed the conversation to 'rev'")
    other_kernel.define("third", {"model": None, "instructions": None, "tools": None, "context": None})
    assert "| third |" in nb.magics.agent_commands.listing()
