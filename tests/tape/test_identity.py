"""Which tape a notebook writes after a rename, move, Duplicate, copy or clone: the decision from what was read."""

from __future__ import annotations

import pytest

from bub_nb.tape.identity import KEEP_OWN, Decision, Evidence, Identity, decide

OWN, OLD = "a" * 16 + "__" + "b" * 16, "c" * 16 + "__" + "d" * 16


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        (Evidence(OWN), Decision(Identity.OWN, OWN)),  # a new notebook: its outputs name no tape
        (Evidence(OWN, OWN, claimed_exists=True), Decision(Identity.OWN, OWN)),  # not renamed
        (Evidence(OWN, OLD, claimed_exists=True), Decision(Identity.CONTINUE, OLD)),  # renamed or moved
        (Evidence(OWN, OLD, claimed_exists=True, claimed_elsewhere=True), Decision(Identity.FORK, OLD)),  # copy
        (Evidence(OWN, OLD), Decision(Identity.FOREIGN, OLD)),  # cloned into a home without that tape
        (Evidence(OWN, OLD, claimed_exists=True, own_has_entries=True), Decision(Identity.OWN, OWN)),
        (Evidence(OWN, OLD, kept=KEEP_OWN), Decision(Identity.OWN, OWN)),  # %tape continue --own
        (Evidence(OWN, None, kept="mine"), Decision(Identity.CONTINUE, "mine")),  # %tape continue mine
        (Evidence(OWN, OLD, kept="mine", claimed_exists=True), Decision(Identity.CONTINUE, "mine")),
        # a tape attached beside the notebook, in a home that lacks the notebook's tape
        (Evidence(OWN, OLD, attached=True), Decision(Identity.ATTACHED, OWN)),  # cloned, with its tape
        (Evidence(OWN, attached=True), Decision(Identity.ATTACHED, OWN)),
        (Evidence(OWN, OLD, claimed_exists=True, attached=True), Decision(Identity.CONTINUE, OLD)),  # renamed here
        (Evidence(OWN, OLD, kept=KEEP_OWN, attached=True), Decision(Identity.OWN, OWN)),
        # a new notebook where a renamed one stood: the own tape went with that one
        (Evidence(OWN, own_has_entries=True, own_went_elsewhere=True), Decision(Identity.FRESH, OWN)),
        (Evidence(OWN, OWN, own_has_entries=True, own_went_elsewhere=True), Decision(Identity.OWN, OWN)),
        (Evidence(OWN, kept=KEEP_OWN, own_went_elsewhere=True), Decision(Identity.OWN, OWN)),
    ],
)
def test_the_saved_notebook_decides_which_tape_it_writes(evidence: Evidence, expected: Decision) -> None:
    assert decide(evidence) == expected


def test_a_kept_choice_wins_over_a_tape_that_already_has_entries() -> None:
    assert decide(Evidence(OWN, OLD, kept=OLD, own_has_entries=True)) == Decision(Identity.CONTINUE, OLD)
