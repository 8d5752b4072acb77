"""Citations of tape entries in summaries: found, checked against a range, and linked."""

from __future__ import annotations

from harness.tapes import link_citations
from hypothesis import given
from hypothesis import strategies as st

from bub_nb.tape.citations import (
    check_citations,
    cited_ids,
    find_citations,
    format_citation,
    sentences,
    uncited_sentences,
)


def test_single_and_run_citations_are_found_with_their_ids() -> None:
    found = find_citations("Asked for a plot [#12]; chose bars [#14-#16] and [#20–21].")
    assert [(c.first, c.last) for c in found] == [(12, 12), (14, 16), (20, 21)]
    assert cited_ids("Asked [#12], chose [#14-#16].") == [12, 14, 15, 16]


def test_citations_outside_the_range_are_removed_and_counted() -> None:
    checked = check_citations("The user asked for a plot [#12]. It failed [#3]. A run [#11-#40] too.", 10, 20)
    assert checked.text == "The user asked for a plot [#12]. It failed. A run too."
    assert checked.sources == (12,)
    assert checked.removed == 2
    assert checked.uncited == ("It failed.", "A run too.")


def test_a_reversed_run_is_invalid() -> None:
    checked = check_citations("Done [#15-#12].", 10, 20)
    assert (checked.text, checked.removed, checked.sources) == ("Done.", 1, ())


def test_a_citation_after_the_full_stop_belongs_to_its_sentence() -> None:
    text = "The user asked for a plot. [#12]\n- Bars were chosen [#13].\n- Nothing else."
    assert sentences(text) == ["The user asked for a plot. [#12]", "Bars were chosen [#13].", "Nothing else."]
    assert uncited_sentences(text) == ["Nothing else."]


def test_citations_become_markdown_links_to_their_first_entry() -> None:
    linked = link_citations("Chose bars [#14-#16].", lambda entry_id: f"#entry-{entry_id}")
    assert linked == "Chose bars [[#14-#16]](#entry-14)."
    assert format_citation(14, 16) == "[#14-#16]" and format_citation(3) == "[#3]"


@given(
    st.lists(st.tuples(st.integers(1, 60), st.integers(0, 5), st.text(alphabet="abc .", max_size=12)), max_size=12),
    st.integers(1, 30),
    st.integers(0, 30),
)
def test_every_citation_kept_lies_inside_the_range(parts: list[tuple[int, int, str]], first: int, span: int) -> None:
    last = first + span
    text = " ".join(f"{words} {format_citation(start, start + extra)}" for start, extra, words in parts)
    checked = check_citations(text, first, last)
    assert all(first <= entry_id <= last for entry_id in checked.sources)
    assert all(c.within(first, last) for c in find_citations(checked.text))
    assert len(find_citations(checked.text)) + checked.removed == len(parts)
    assert check_citations(checked.text, first, last).text == checked.text
