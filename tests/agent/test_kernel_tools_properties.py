"""Properties of what a model may send the kernel tools: any name either resolves through attributes and
literal keys or is refused, and nothing in it ever runs; any tool result fits its budget, secrets removed."""

from __future__ import annotations

import string
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bub_nb.agent.kernel_tools.names import resolve
from bub_nb.agent.results import fit_result
from bub_nb.context.tokens import count_text_tokens
from bub_nb.errors import ToolError

CALLED: list[str] = []


class Tripwire:
    """Every way code could run on it is recorded: a call, a conversion, an index that is not a literal."""

    def __call__(self, *args: Any) -> Any:
        CALLED.append("call")
        return self

    def __getattr__(self, name: str) -> Any:
        return self  # attributes are how a name walks; reading one runs nothing of ours

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, str | int | float | bool | bytes | tuple | list | slice | type(None)):
            CALLED.append(f"index {key!r}")
        return self

    def __bool__(self) -> bool:
        CALLED.append("bool")
        return True


def trip() -> None:
    CALLED.append("trip()")


NAMESPACE = {"obj": Tripwire(), "trip": trip, "data": {"a": [1, 2, 3]}}

PIECES = st.sampled_from(
    ["obj", "trip", "data", "trip()", "obj.x", ".y", "[0]", "['a']", "[-1]", "[1:2]", "(", ")", "[", "]", "+",
     "lambda: trip()", "__class__", ".__init__", "obj()", "[trip()]", " if obj else ", "await ", ";", "\n",
     "import os", "f'{trip()}'", "*", "[obj]", ":=", "x", "'", '"', "{", "}", ","]
)  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, min_size=1, max_size=6).map("".join) | st.text(string.printable, max_size=30))
def test_a_name_resolves_or_is_refused_and_never_runs_code(expression: str) -> None:
    CALLED.clear()
    try:
        resolve(expression, NAMESPACE)
    except ToolError as refused:
        assert "\n" not in str(refused)
    assert CALLED == [], (expression, CALLED)


SECRET = "sk-" + "Zx9" * 10


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(max_size=80) | st.just(SECRET) | st.just("postgresql://u:hunter2@db/x"), max_size=200),
    st.integers(min_value=50, max_value=3000),
)
def test_every_result_fits_its_budget_says_when_cut_and_leaks_no_secret(parts: list[str], budget: int) -> None:
    text = "\n".join(parts)
    fitted = fit_result(text, budget)
    assert SECRET not in fitted and "hunter2" not in fitted
    if fitted.splitlines() and fitted.splitlines()[-1].startswith("[cut: this result was ≈"):
        assert count_text_tokens(fitted) <= budget + 5
        assert f"over the budget of {budget:,}" in fitted
    else:
        assert count_text_tokens(fitted) <= budget
