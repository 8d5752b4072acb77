"""A real Jupyter kernel driven as a frontend drives it: cells sent one at a time or queued, their replies read."""

from __future__ import annotations

import ast
import json
import os
import queue
import signal
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import start_new_kernel

from bub_nb.tape import Tape, open_tape

#: What a cell prints to count the current tape's entries.
COUNT = "print(len(get_ipython().find_magic('tape').__self__.session.tape))"

#: Variables a user's shell may carry that would point a test kernel somewhere else.
_FOREIGN = ("JPY_SESSION_NAME", "BUB_API_BASE", "OPENAI_BASE_URL", "BUB_API_KEY", "OPENAI_API_KEY", "BUB_MODEL")


def shown_text(outputs: list[dict[str, Any]]) -> str:
    """What a person reads in a cell's outputs: streams, Markdown or plain displays, and error lines."""
    parts: list[str] = []
    for output in outputs:
        if output["type"] == "stream":
            parts.append(output["text"])
        elif output["type"] in ("display_data", "execute_result", "update_display_data"):
            parts.append(output["data"].get("text/markdown") or output["data"].get("text/plain", ""))
        elif output["type"] == "error":
            parts.append(f"{output['ename']}: {output['evalue']}")
    return "\n".join(parts)


class Kernel:
    """A running kernel, with the Bub home its tapes go to."""

    def __init__(self, client: Any, home: Path | None = None, manager: Any = None) -> None:
        self.client, self.home, self.manager = client, home, manager
        self.seen: list[dict[str, Any]] = []

    def run(self, code: str, timeout: float = 60) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Run one cell to its end: its reply's content and its outputs (display data, streams and errors)."""
        outputs: list[dict[str, Any]] = []

        def keep(message: dict[str, Any]) -> None:
            if message["msg_type"] in ("display_data", "update_display_data", "stream", "execute_result", "error"):
                outputs.append({"type": message["msg_type"], **message["content"]})

        for _ in range(100):
            reply = self.client.execute_interactive(code, timeout=timeout, output_hook=keep)
            if reply["content"]["status"] != "aborted":
                break
            # The cell never ran: it reached the kernel while it still dropped what was queued behind the previous
            # cell's error (ipykernel stops once a marker it posts to its own queue comes round). Sent again, it runs.
        return reply["content"], outputs

    def outcome(self, code: str, timeout: float = 60) -> tuple[str, str]:
        """The cell's status and everything it showed, errors included."""
        content, outputs = self.run(code, timeout)
        return content["status"], shown_text(outputs)

    def ok(self, code: str, timeout: float = 60) -> str:
        """Run a cell that must succeed; what it showed."""
        content, outputs = self.run(code, timeout)
        assert content["status"] == "ok", f"{code!r}: {content.get('ename')}: {content.get('evalue')}"
        return shown_text(outputs)

    def entries(self) -> int:
        return int(self.ok(COUNT).strip())

    def refused(self, code: str, words: str) -> None:
        """The cell is one UsageError line naming ``words``, and the tape did not change."""
        before = self.entries()
        content, _ = self.run(code)
        assert (content["status"], content.get("ename")) == ("error", "UsageError"), (code, content.get("evalue"))
        assert words in content["evalue"] and "\n" not in content["evalue"].strip(), content["evalue"]
        assert self.entries() == before, f"{code!r} wrote to the tape before it was refused"

    def send(self, code: str) -> str:
        """Queue one cell, as Run All does; its message id."""
        return str(self.client.execute(code, store_history=True))

    def queue(self, cells: list[str]) -> list[str]:
        return [self.send(code) for code in cells]

    def replies(self, sent: list[str], timeout: float = 30) -> list[dict[str, Any]]:
        """The replies to queued cells, in the order they were sent."""
        got: dict[str, dict[str, Any]] = {}
        while len(got) < len(sent):
            try:
                reply = self.client.get_shell_msg(timeout=timeout)
            except queue.Empty:
                pytest.fail(f"the kernel went quiet with {len(sent) - len(got)} cells unanswered")
            got[reply["parent_header"]["msg_id"]] = reply["content"]
        return [got[msg_id] for msg_id in sent]

    def wait(self, msg_id: str, timeout: float = 120) -> dict[str, Any]:
        """The reply to a queued cell; fails with the kernel's error when the cell failed."""
        deadline = time.monotonic() + timeout
        while True:
            reply = self.client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        self.drain()
        content: dict[str, Any] = reply["content"]
        if content["status"] != "ok":
            raise AssertionError(f"kernel cell failed: {content.get('ename')}: {content.get('evalue')}")
        return content

    def shown_in(self, msg_id: str, words: str, timeout: float = 60) -> str:
        """Until the queued cell ``msg_id`` shows ``words`` (a streamed answer has reached them); what it showed so
        far, its messages kept in :attr:`seen`."""
        deadline = time.monotonic() + timeout
        outputs: list[dict[str, Any]] = []
        while True:
            try:
                message = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"the cell never showed {words!r}: {shown_text(outputs)!r}")
            self.seen.append(message)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] in ("display_data", "update_display_data", "stream", "execute_result", "error"):
                outputs.append({"type": message["msg_type"], **message["content"]})
                if words in (text := shown_text(outputs[-1:])):
                    return text

    def send_from_lab(self, code: str, cell_id: str = "cell-1") -> str:
        """Queue a cell as JupyterLab sends it, naming the cell (``cellId``): a frontend a person answers in."""
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}}
        message = self.client.session.msg(
            "execute_request", {**content, "allow_stdin": False, "stop_on_error": True}, metadata={"cellId": cell_id}
        )
        self.client.shell_channel.send(message)
        return str(message["header"]["msg_id"])

    def button(self, description: str, timeout: float = 30) -> str:
        """The comm id of the next ipywidgets Button labelled ``description`` the kernel shows; what the cell
        showed on the way is kept in :attr:`seen`."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            self.seen.append(message)
            content = message["content"]
            state = (content.get("data") or {}).get("state") or {}
            button = message["msg_type"] == "comm_open" and state.get("_model_name") == "ButtonModel"
            if button and state.get("description") == description:
                return str(content["comm_id"])

    def click(self, comm_id: str) -> None:
        """What a frontend sends when a person clicks the button."""
        self._to_widget(comm_id, {"method": "custom", "content": {"event": "click"}})

    def waiting_on(self, comm_id: str, timeout: float = 30) -> None:
        """Until the cell is awaiting a click on the widget ``comm_id``.

        While a turn runs, the kernel dispatches comm messages only inside a consent's wait: the widget's
        answer to a frontend's request for its state is the sign."""
        sent = self._to_widget(comm_id, {"method": "request_state"})
        deadline = time.monotonic() + timeout
        while True:
            message = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            self.seen.append(message)
            if message["msg_type"] == "comm_msg" and message["parent_header"].get("msg_id") == sent:
                assert message["content"]["comm_id"] == comm_id, message["content"]
                return

    def asleep_in_its_loop(self, timeout: float = 30) -> None:
        """Until the kernel's main thread sleeps in its event loop with nothing ready to run (read from Linux's
        ``/proc``): an interrupt now reaches what the loop awaits, not a message handler in mid-step (ipykernel
        swallows an interrupt that lands in the handler of a widget's message)."""
        pid = self.manager.provisioner.process.pid
        main = Path(f"/proc/{pid}/task/{pid}")
        if not (main / "wchan").exists():
            pytest.skip("needs Linux's /proc to see where the kernel waits")
        deadline = time.monotonic() + timeout
        while True:
            before, wchan, after = ((main / name).read_text() for name in ("syscall", "wchan", "syscall"))
            # blocked in epoll_wait (or epoll_pwait) with a timeout: asyncio passes 0 while callbacks are ready
            if "epoll" in wchan and before == after and before.split()[4:5] not in ([], ["0x0"]):
                return
            if time.monotonic() > deadline:
                pytest.fail(f"the kernel's main thread never slept in its event loop: {wchan} {after}")
            time.sleep(0.005)

    def slow_widget(self, started: Path, release: Path) -> str:
        """The comm id of a new button elsewhere in the notebook whose click handler, once ``started`` exists,
        holds the kernel until ``release`` exists."""
        self.ok(
            "import pathlib as _pathlib, time as _time, ipywidgets as _widgets\n"
            "def _hold(button):\n"
            f"    _pathlib.Path({str(started)!r}).touch()\n"
            f"    while not _pathlib.Path({str(release)!r}).exists():\n"
            "        _time.sleep(0.01)\n"
            "_slow = _widgets.Button(description='Slow')\n_slow.on_click(_hold)"
        )
        return str(self.value("_slow.model_id"))

    def interrupt(self, timeout: float = 30) -> None:
        """Press ■, and wait until the kernel process has taken the signal (no SIGINT pending in Linux's
        ``/proc``): its handler has run, or runs at the next bytecode of the main thread."""
        self.manager.interrupt_kernel()
        status = Path(f"/proc/{self.manager.provisioner.process.pid}/status")
        if not status.exists():
            pytest.skip("needs Linux's /proc to see the kernel take the signal")
        sigint = 1 << (signal.SIGINT - 1)
        deadline = time.monotonic() + timeout
        while True:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            if not any(int(fields[name], 16) & sigint for name in ("SigPnd", "ShdPnd")):
                return
            if time.monotonic() > deadline:
                pytest.fail("the kernel never took the interrupt")
            time.sleep(0.005)

    def _to_widget(self, comm_id: str, data: dict[str, Any]) -> str:
        message = self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.client.shell_channel.send(message)
        return str(message["header"]["msg_id"])

    def value(self, expression: str) -> Any:
        """A JSON-able expression evaluated in the kernel."""
        self.ok(f"import json as _json; _out = _json.dumps({expression})")
        content, outputs = self.run("_out")
        results = [output for output in outputs if output["type"] == "execute_result"]
        assert results, f"no value for {expression!r} ({content})"
        return json.loads(ast.literal_eval(results[0]["data"]["text/plain"]))

    def drain(self) -> None:
        while True:
            try:
                self.client.get_iopub_msg(timeout=0.01)
            except queue.Empty:
                return

    @property
    def tape(self) -> Tape:
        """The one tape the kernel's notebook wrote under its home."""
        assert self.home is not None, "this kernel was started without a Bub home"
        (path,) = (self.home / "tapes").glob("*.jsonl")
        return open_tape(path)


def kernel_environment(home: Path, **overrides: str) -> dict[str, str]:
    """The test process's environment without a user's endpoint or notebook, with ``home`` as the Bub home."""
    env = {name: value for name, value in os.environ.items() if name not in _FOREIGN}
    return {**env, "BUB_HOME": str(home), "BUB_MODEL": "offline", **overrides}


@contextmanager
def running_kernel(
    cwd: Path, env: Mapping[str, str] | None = None, *, home: Path | None = None, load: bool = True
) -> Iterator[Kernel]:
    """A kernel started in ``cwd`` (a Bub home under it unless given), with bub_nb loaded unless ``load=False``."""
    home = home or cwd / "home"
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(cwd), env=dict(env or kernel_environment(home)))
    try:
        kernel = Kernel(client, home, manager)
        if load:
            kernel.ok("%load_ext bub_nb")
        yield kernel
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def wait_for_requests(server: Any, count: int, timeout: float = 30) -> None:
    """Until the local endpoint has received ``count`` requests."""
    deadline = time.monotonic() + timeout
    while len(server.requests) < count:
        if time.monotonic() > deadline:
            pytest.fail(f"the endpoint got {len(server.requests)} requests, expected {count}")
        time.sleep(0.02)


def wait_for_file(path: Path, timeout: float = 60) -> None:
    """Until code in the kernel has created ``path``, its sign that it reached a point (``timeout`` bounds a hang)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"{path.name} never appeared: the kernel's code did not get there")
        time.sleep(0.02)
