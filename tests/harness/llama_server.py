"""llama.cpp's ``llama-server`` on 127.0.0.1 serving a GGUF, for tests and lessons that need a real endpoint.

The binary is found through ``BUB_NB_LLAMA_SERVER``, else in the cache that ``.ci/build-llama-server`` fills
(``$BUB_NB_CACHE``, by default ``~/.cache/bub_nb``, then ``llama-server/<version>/bin/llama-server``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

BINARY_VARIABLE = "BUB_NB_LLAMA_SERVER"


def cache_folder() -> Path:
    return Path(os.environ.get("BUB_NB_CACHE") or Path.home() / ".cache" / "bub_nb") / "llama-server"


def llama_server_binary() -> Path | None:
    """The ``llama-server`` to run: ``$BUB_NB_LLAMA_SERVER``, else the newest one built into the cache."""
    named = os.environ.get(BINARY_VARIABLE)
    if named:
        return Path(named) if os.access(named, os.X_OK) else None
    built = sorted(cache_folder().glob("*/bin/llama-server"), key=lambda path: path.stat().st_mtime, reverse=True)
    return next((path for path in built if os.access(path, os.X_OK)), None)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """One ``llama-server`` process serving ``model`` with a ``context``-token window, one request at a time.

    ``base_url`` is what the openai client takes; ``log`` is the server's own output (where it says what it
    refused and why). A fixed ``--seed`` keeps sampling repeatable between runs.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        context: int = 512,
        binary: str | Path | None = None,
        args: Sequence[str] = (),
        ready_timeout: float = 120.0,
    ) -> None:
        found = Path(binary) if binary is not None else llama_server_binary()
        if found is None:
            raise RuntimeError(f"llama-server is not built: run .ci/build-llama-server or set {BINARY_VARIABLE}")
        self.binary = found
        self.model = Path(model)
        self.context = context
        self.args = tuple(args)
        self.ready_timeout = ready_timeout
        self.port = 0
        self.log = Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def version(self) -> str:
        """What ``llama-server --version`` prints, in one line (``version: N (commit)``)."""
        done = subprocess.run([str(self.binary), "--version"], capture_output=True, text=True, timeout=30, check=False)
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("version")]
        return lines[0] if lines else "unknown"

    def start(self) -> LlamaServer:
        if self._process is not None:
            return self
        self.port = _free_port()
        command = [
            str(self.binary), "--host", "127.0.0.1", "--port", str(self.port), "--model", str(self.model),
            "--ctx-size", str(self.context), "--parallel", "1", "--threads", "1", "--seed", "1",
            "--alias", "tiny", *self.args,
        ]  # fmt: skip
        with self.log.open("wb") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:]
                self._process = None
                raise RuntimeError(f"llama-server exited before it was ready:\n{tail}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"llama-server was not ready within {self.ready_timeout:g} s; its log is {self.log}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
