"""Views over random handoff graphs between agents: no view ever holds an entry twice, references are never copied
into a view, every reference resolves to the sender's tape, and ownership follows the transfers."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bub_nb.agent.team import Team, handed_away
from bub_nb.context import diff_views
from bub_nb.context.references import expand_references, view_references
from bub_nb.errors import NotHoldingError
from bub_nb.tape import MemoryTapeStore, Tape, TapeAddress

AGENTS = ("main", "a", "b", "c")

talk = st.tuples(st.just("talk"), st.sampled_from(AGENTS), st.integers(1, 3))
handoff = st.tuples(
    st.just("handoff"), st.sampled_from(AGENTS), st.sampled_from(AGENTS), st.booleans(), st.integers(0, 3)
)
graphs = st.lists(st.one_of(talk, handoff), min_size=1, max_size=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs)
def test_no_view_holds_an_entry_twice_over_random_handoff_graphs(steps: list[tuple]) -> None:  # type: ignore[type-arg]
    team = Team(Tape("nb", MemoryTapeStore()), AGENTS[1:])
    tapes = team.tapes()
    expected_holder: str | None = None
    for number, step in enumerate(steps):
        if step[0] == "talk":
            _, agent, messages = step
            for i in range(messages):
                role = "user" if i % 2 == 0 else "assistant"
                tapes[agent].append_message({"role": role, "content": f"{agent} says {number}.{i}"})
            continue
        _, sender, receiver, share, cites = step
        sent_ids = [e.id for e in tapes[sender].read() if e.kind == "message"] if sender != receiver else []
        summary = " ".join(f"[#{i}]" for i in sent_ids[-cites:]) if cites and sent_ids else None
        before = {name: len(tape) for name, tape in tapes.items()}
        away = handed_away(team.history())
        try:
            team.handoff(f"h{number}", sender=sender, to=receiver, share=share, summary=summary)
        except NotHoldingError:
            assert sender in away
            assert {name: len(tape) for name, tape in tapes.items()} == before  # a refusal writes nothing
            continue
        except Exception:
            assert sender == receiver
            assert {name: len(tape) for name, tape in tapes.items()} == before
            continue
        assert sender != receiver and sender not in away
        if not share:
            expected_holder = receiver

    assert team.holder() == expected_holder
    for agent, tape in tapes.items():
        for mode in (None, "phases"):  # the full tape and every phase's anchor: still each entry once
            ids = tape.view(mode).entry_ids
            assert len(ids) == len(set(ids)), f"{agent}'s {mode} view holds an entry twice"
        view = tape.view()
        assert len(view.entry_ids) == len(set(view.entry_ids)), f"{agent}'s view holds an entry twice"
        own = {(tape.name, entry_id) for entry_id in view.entry_ids}
        references = expand_references(tape, view)
        keys = [ref.key for ref in references]
        assert all(key is not None for key in keys), [ref.error for ref in references]
        assert len(keys) == len(set(keys)) and not own & set(keys)  # cited, never copied in
        for ref in references:
            assert ref.entry is not None and TapeAddress.parse(ref.address).tape != tape.name
        texts = " ".join(str(message.get("content")) for message in view.messages)
        for address in view_references(view):
            assert address in texts  # the model is sent the addresses themselves
        for other, other_tape in tapes.items():
            if other != agent:
                diff = diff_views(other_tape.view(), view)
                assert not diff.stayed and set(diff.entered) == set(view.entry_ids)
