"""The hook runtime calls plugins exactly as pluggy's own ``pm.hook.name()`` does, on pluggy's multicall cases.

Each case registers the same plugins on one ``HookRuntime``; the oracle is pluggy's caller on that runtime's own
plugin manager. Both must give the same result (or raise the same exception) and call the implementations in the
same order: firstresult, ``wrapper=True``, old-style ``hookwrapper=True`` with a forced result, ``tryfirst`` and
``trylast``, and exceptions raised by an implementation or a wrapper, caught or not; then Hypothesis mixes them.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import pluggy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.hooks.runtime import HookRuntime
from bub_nb.agent.hooks.specs import PROJECT, hookimpl

hookspec = pluggy.HookspecMarker(PROJECT)


class Specs:
    @hookspec
    def collect(self, arg: int) -> list[Any]:  # type: ignore[empty-body]
        """Every answer."""

    @hookspec(firstresult=True)
    def first(self, arg: int) -> Any:
        """The first answer."""


Log = list[str]
Case = Callable[[Log], list[object]]


def plain(name: str, value: Any, **marks: bool) -> Callable[[Log], object]:
    def make(log: Log) -> object:
        class Plugin:
            @hookimpl(**marks)
            def collect(self, arg: int) -> Any:
                log.append(name)
                return value if value is None else (value, arg)

            @hookimpl(**marks)
            def first(self, arg: int) -> Any:
                log.append(name)
                return value if value is None else (value, arg)

        return Plugin()

    return make


def failing(name: str, **marks: bool) -> Callable[[Log], object]:
    def make(log: Log) -> object:
        class Plugin:
            @hookimpl(**marks)
            def collect(self, arg: int) -> Any:
                log.append(name)
                raise ValueError(f"{name} failed on {arg}")

            @hookimpl(**marks)
            def first(self, arg: int) -> Any:
                log.append(name)
                raise ValueError(f"{name} failed on {arg}")

        return Plugin()

    return make


def wrapper(name: str, *, replace: bool = False, catch: bool = False, fail: bool = False) -> Callable[[Log], object]:
    """A new-style wrapper: sees the result (or the exception) at its ``yield`` and returns the call's result."""

    def make(log: Log) -> object:
        def body(arg: int) -> Generator[None, Any, Any]:
            log.append(f"{name} before")
            try:
                result = yield
            except ValueError as exc:
                log.append(f"{name} caught")
                if catch:
                    return f"{name} recovered from {exc}"
                raise
            log.append(f"{name} after")
            if fail:
                raise ValueError(f"{name} failed after")
            return (name, result) if replace else result

        class Plugin:
            @hookimpl(wrapper=True)
            def collect(self, arg: int) -> Generator[None, Any, Any]:
                return (yield from body(arg))

            @hookimpl(wrapper=True)
            def first(self, arg: int) -> Generator[None, Any, Any]:
                return (yield from body(arg))

        return Plugin()

    return make


def old_wrapper(name: str, *, force: bool = False) -> Callable[[Log], object]:
    """An old-style hookwrapper: gets a ``pluggy.Result`` at its ``yield`` and may force another result."""

    def make(log: Log) -> object:
        def body(arg: int) -> Generator[None, pluggy.Result[Any], None]:
            log.append(f"{name} before")
            outcome = yield
            log.append(f"{name} after {'raised' if outcome.exception else 'returned'}")
            if force:
                outcome.force_result((name, "forced", arg))

        class Plugin:
            @hookimpl(hookwrapper=True)
            def collect(self, arg: int) -> Generator[None, pluggy.Result[Any], None]:
                yield from body(arg)

            @hookimpl(hookwrapper=True)
            def first(self, arg: int) -> Generator[None, pluggy.Result[Any], None]:
                yield from body(arg)

        return Plugin()

    return make


#: Plugins in the order they are registered (the last registered is called first, markers aside).
CASES: dict[str, list[Callable[[Log], object]]] = {
    "no plugins": [],
    "one answer": [plain("a", 1)],
    "answers last registered first": [plain("a", 1), plain("b", 2), plain("c", 3)],
    "None answers are left out": [plain("a", 1), plain("b", None), plain("c", 3)],
    "every answer is None": [plain("a", None), plain("b", None)],
    "tryfirst and trylast move an implementation": [
        plain("first", 1, tryfirst=True),
        plain("plain", 2),
        plain("last", 3, trylast=True),
        plain("plain again", 4),
    ],
    "two tryfirst keep registration order among them": [plain("a", 1, tryfirst=True), plain("b", 2, tryfirst=True)],
    "an implementation raises": [plain("a", 1), failing("b"), plain("c", 3)],
    "a tryfirst implementation raises before the others run": [plain("a", 1), failing("b", tryfirst=True)],
    "a wrapper passes the result on": [plain("a", 1), wrapper("w"), plain("b", 2)],
    "a wrapper replaces the result": [plain("a", 1), wrapper("w", replace=True)],
    "nested wrappers, innermost torn down first": [wrapper("outer", replace=True), plain("a", 1), wrapper("inner")],
    "a wrapper sees an implementation's exception and raises it on": [failing("a"), wrapper("w")],
    "a wrapper catches an implementation's exception": [failing("a"), wrapper("w", catch=True)],
    "an outer wrapper catches what an inner wrapper raised": [
        plain("a", 1),
        wrapper("outer", catch=True),
        wrapper("inner", fail=True),
    ],
    "an old-style hookwrapper sees the result": [plain("a", 1), old_wrapper("old")],
    "an old-style hookwrapper forces a result": [plain("a", 1), old_wrapper("old", force=True)],
    "an old-style hookwrapper forces a result over an exception": [failing("a"), old_wrapper("old", force=True)],
    "old and new wrappers together": [old_wrapper("old", force=True), plain("a", 1), wrapper("new", replace=True)],
    "a wrapper around no implementations": [wrapper("w", replace=True)],
}


def outcome(call: Callable[[], Any], log: Log) -> tuple[str, Any, Log]:
    """What a call gave, as something to compare: its result or its exception, and the calls it made."""
    log.clear()
    try:
        result = call()
    except Exception as exc:
        return "raised", (type(exc), str(exc)), list(log)
    return "returned", result, list(log)


def runtime_with(plugins: list[Callable[[Log], object]], log: Log) -> HookRuntime:
    runtime = HookRuntime(Specs)
    for index, make in enumerate(plugins):
        runtime.register(make(log), name=f"p{index}")
    return runtime


@pytest.mark.parametrize("hook", ["collect", "first"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_runtime_calls_a_hook_as_pluggy_does(case: str, hook: str) -> None:
    log: Log = []
    runtime = runtime_with(CASES[case], log)
    pluggy_call = getattr(runtime._plugins.hook, hook)  # the oracle: pluggy's own caller on the same plugins

    expected = outcome(lambda: pluggy_call(arg=7), log)
    assert outcome(lambda: runtime.call_sync(hook, arg=7), log) == expected
    assert outcome(lambda: run_sync(runtime.call(hook, arg=7)), log) == expected


def test_the_cases_cover_what_pluggy_distinguishes() -> None:
    """Each case gives pluggy's caller a different answer somewhere, so none is a copy of another."""
    answers = {}
    for case, plugins in CASES.items():
        log: Log = []
        callers = runtime_with(plugins, log)._plugins.hook
        answers[case] = repr([outcome(lambda h=h, c=callers: getattr(c, h)(arg=7), log) for h in ("collect", "first")])
    assert len(set(answers.values())) == len(CASES)


_MARKS = st.sampled_from([{}, {"tryfirst": True}, {"trylast": True}])
_PLUGIN = st.one_of(
    st.builds(
        lambda name, value, marks: plain(name, value, **marks),
        st.builds(
            lambda name, value, marks: plain(name, value, **marks),
            st.sampled_from("abcde"),
            st.sampled_from([None, 1, 2]),
            _MARKS,
        ),
        st.sampled_from([None, 1, 2]),
        _MARKS,
    ),
    st.builds(lambda name, marks: failing(name, **marks), st.sampled_from("fg"), _MARKS),
    st.builds(
        lambda name, replace, catch, fail: wrapper(name, replace=replace, catch=catch, fail=fail),
        st.sampled_from(["w", "v"]),
        st.booleans(),
        st.booleans(),
        st.booleans(),
    ),
    st.builds(lambda name, force: old_wrapper(name, force=force), st.sampled_from(["old"]), st.booleans()),
)


@settings(max_examples=150, deadline=None)
@given(plugins=st.lists(_PLUGIN, max_size=6), hook=st.sampled_from(["collect", "first"]))
def test_any_mix_of_plugins_is_called_as_pluggy_calls_it(plugins: list[Callable[[Log], object]], hook: str) -> None:
    """Any mix of plain, failing and wrapping implementations, with any markers, in any registration order."""
    log: Log = []
    runtime = runtime_with(plugins, log)
    expected = outcome(lambda: getattr(runtime._plugins.hook, hook)(arg=3), log)
    assert outcome(lambda: runtime.call_sync(hook, arg=3), log) == expected
    assert outcome(lambda: run_sync(runtime.call(hook, arg=3)), log) == expected
