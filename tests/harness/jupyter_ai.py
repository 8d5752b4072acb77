"""jupyter-ai's ACP client (``jupyter-ai-acp-client``) in a real Jupyter server, with a persona that starts
``bub-nb acp serve``, driven as JupyterLab drives it: over jupyterlab-chat's WebSocket at ``/api/chat/ws/<path>``.

jupyter-ai pins packages the project's own environment does not hold (the ACP SDK below 0.12, among others), so it
lives in a virtual environment of its own, built from ``.ci/jupyter-ai/requirements.txt`` once per hash of that
file under ``${BUB_NB_CACHE:-~/.cache/bub_nb}/jupyter-ai/<hash>`` (20 to 50 s with pip's cache warm). bub_nb is not
installed there: the persona names the suite's own ``bub-nb`` by its full path, as the docs tell a user to.
Without that environment (pip cannot reach the index) a test skips, and fails under ``CI=true``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / ".ci" / "jupyter-ai" / "requirements.txt"
BUB_NB = str(Path(sys.executable).with_name("bub-nb"))
PERSONA_MODULE = "bub_nb_persona"
PERSONA_ID = f"jupyter-ai-personas::{PERSONA_MODULE}::BubNbPersona"
"""The id jupyter-ai gives a persona found in ``.jupyter/personas/<module>.py``: the module, then the class."""

PERSONA = '''"""bub_nb as a jupyter-ai persona: the chat's messages are prompts to ``bub-nb acp serve``."""

from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
from jupyter_ai_persona_manager import PersonaDefaults


class BubNbPersona(BaseAcpPersona):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, executable=COMMAND, **kwargs)

    @property
    def defaults(self):
        return PersonaDefaults(
            name="bub_nb", description="bub_nb's tape-native agent", avatar_path="", system_prompt="unused"
        )
'''


def jupyter_ai_venv() -> Path:
    """The virtual environment holding the pinned jupyter-ai ACP client and Jupyter server, made once per pins."""
    pins = REQUIREMENTS.read_bytes()
    cache = Path(os.environ.get("BUB_NB_CACHE") or Path.home() / ".cache" / "bub_nb").expanduser() / "jupyter-ai"
    key = hashlib.sha256(pins).hexdigest()[:16]
    venv, done = cache / key, cache / f"{key}.done"
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / f"{key}.lock")):
        if not done.exists():
            shutil.rmtree(venv, ignore_errors=True)  # a venv an interrupted run left half made
            python = shutil.which("python3") or sys.executable
            made = subprocess.run([python, "-m", "venv", str(venv)], capture_output=True, text=True)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)]
            installed = made.returncode == 0 and subprocess.run(pip, capture_output=True, text=True)
            if not installed or installed.returncode != 0:
                why = (installed.stderr if installed else made.stderr).strip().splitlines()[-1:] or ["?"]
                _missing(f"the jupyter-ai environment could not be built from {REQUIREMENTS.name}: {why[0]}")
            done.touch()
    return venv


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@dataclass
class JupyterAiServer:
    """A running ``jupyter-server`` with jupyter-ai's ACP client, its root holding the bub_nb persona."""

    url: str
    token: str
    root: Path
    log: Path
    process: subprocess.Popen[bytes]

    def ws_url(self, chat: str) -> str:
        return f"{self.url.replace('http', 'ws', 1)}api/chat/ws/{chat}?token={self.token}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def jupyter_ai_server(root: Path, command: list[str], env: dict[str, str]) -> Iterator[JupyterAiServer]:
    """``jupyter-server`` from the jupyter-ai environment on ``root``, whose ``.jupyter/personas`` holds a persona
    running ``command``; ``env`` is the server's environment, which the persona's agent inherits."""
    venv = jupyter_ai_venv()
    personas = root / ".jupyter" / "personas"
    personas.mkdir(parents=True, exist_ok=True)
    (personas / f"{PERSONA_MODULE}.py").write_text(f"COMMAND = {json.dumps(command)}\n\n{PERSONA}")
    token, port = secrets.token_hex(16), _free_port()
    log = root.parent / "jupyter-server.log"
    argv = [
        str(venv / "bin" / "jupyter-server"), "--no-browser", f"--port={port}", "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}", "--allow-root",
    ]  # fmt: skip
    environment = {
        **env,
        "JUPYTER_CONFIG_DIR": str(root.parent / "jupyter-config"),  # nothing of the developer's own config
        "JUPYTER_DATA_DIR": str(root.parent / "jupyter-data"),
        "JUPYTER_RUNTIME_DIR": str(root.parent / "jupyter-runtime"),
    }
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, cwd=root, env=environment, stdout=out, stderr=subprocess.STDOUT)
    server = JupyterAiServer(f"http://127.0.0.1:{port}/", token, root, log, process)
    try:
        _wait_until_up(server)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_up(server: JupyterAiServer, timeout: float = 90) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"jupyter-server exited ({server.process.returncode}):\n{server.log_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}api/status?token={server.token}", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    pytest.fail(f"jupyter-server did not answer in {timeout:.0f} s:\n{server.log_text()[-3000:]}")


def send_frame(body: str, to: str = PERSONA_ID) -> dict[str, Any]:
    """A ``send`` frame as JupyterLab's chat input makes it: the picked persona in ``metadata.to_persona``."""
    return {
        "type": "client",
        "action": "send",
        "id": uuid.uuid4().hex,
        "body": body,
        "mentions": [],
        "metadata": {"to_persona": to},
    }
