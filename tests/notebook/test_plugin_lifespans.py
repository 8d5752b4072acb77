"""In a real IPython shell, Bub's ``provide_lifespan`` spans the extension's life and ``admit_message`` may refuse a
``%%bub`` cell, which then says so in one line and writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pluggy
import pytest
from harness.shell import Notebook, loaded_shell

import bub_nb.agent.registry as registry
from bub_nb.agent import register_plugin
from bub_nb.agent.hooks.session import AdmitDecision

bub_hookimpl = pluggy.HookimplMarker("bub")


class Connection:
    """Owns a resource while the kernel runs, as a Bub plugin's lifespan does."""

    def __init__(self) -> None:
        self.log: list[str] = []

    @bub_hookimpl
    def provide_lifespan(self) -> Iterator[None]:
        self.log.append("open")
        try:
            yield
        finally:
            self.log.append("closed")


def test_a_plugins_lifespan_is_entered_when_the_extension_loads_and_left_when_it_unloads(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BUB_MODEL", "offline")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(registry, "_pipeline", None)  # a shared pipeline of this test's own
    connection = Connection()
    register_plugin(connection, name="connection")
    with loaded_shell() as nb:
        assert connection.log == ["open"] and registry.default_pipeline().started
        nb.run("%%bub\nhello")
        assert connection.log == ["open"]
    assert connection.log == ["open", "closed"] and not registry.default_pipeline().started


def test_a_bub_cell_a_plugin_does_not_admit_says_so_in_one_line_and_writes_nothing(
    nb: Notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "_pipeline", None)

    class Hours:
        @bub_hookimpl
        def admit_message(self, session_id: str, message: Any, turn: Any) -> Any:
            return AdmitDecision("drop", "after hours") if "homework" in message.content else None

    register_plugin(Hours(), name="hours")
    nb.refused("%%bub\nDo my homework", r"^Plugin 'hours' did not admit the message; nothing was written: after hours$")
    nb.run("%%bub\nExplain tapes")
    assert next(e.payload["content"] for e in nb.tape.read(kinds=("message",))) == "Explain tapes"
