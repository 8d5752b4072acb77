"""A throwaway JupyterLab and headless Chromium for the browser tests, and what to show when they fail.

The server runs with its own Jupyter config, data and runtime folders, its own HOME and IPython
folder, so nothing from the machine leaks in. The venv's kernel spec and the ipywidgets
labextension are still found: both live under ``sys.prefix/share/jupyter``, which Jupyter always
searches. The browser is the system's Chromium; a browser is never downloaded.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from harness.processes import free_port

CHROMIUM: Final = Path("/usr/bin/chromium")
CHROMIUM_ARGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
WIDGETS_LABEXTENSION: Final = "@jupyter-widgets/jupyterlab-manager"
SERVER_START_SECONDS: Final = 60.0
SERVER_STOP_SECONDS: Final = 15.0
IDLE_GRACE_SECONDS: Final = 10.0

# Variables that would point the server or its kernels at the machine's own settings or models.
_LEAKY_PREFIXES: Final = ("JUPYTER", "JPY_", "IPYTHON", "BUB_", "OPENAI_", "MPLBACKEND")


def chromium_missing_reason(environ: dict[str, str] | None = None) -> str | None:
    """Why the browser tests cannot run here, or None. Under CI a missing Chromium is a failure, not a skip."""
    env = os.environ if environ is None else environ
    if CHROMIUM.exists():
        return None
    if env.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        raise RuntimeError(
            f"CI={env['CI']!r} but {CHROMIUM} is missing: .ci/run installs Debian's chromium when run as root"
        )
    return f"{CHROMIUM} is not installed (apt-get install chromium); set CI=true to make this a failure"


def lab_environment(base: Path, bub_home: Path) -> dict[str, str]:
    """The server's environment: private Jupyter and IPython folders, Bub on ``bub_home`` and the offline model."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(_LEAKY_PREFIXES)}
    folders = {
        "HOME": base / "home",
        "JUPYTER_CONFIG_DIR": base / "jupyter-config",
        "JUPYTER_DATA_DIR": base / "jupyter-data",
        "JUPYTER_RUNTIME_DIR": base / "jupyter-runtime",
        "IPYTHONDIR": base / "ipython",
        "BUB_HOME": bub_home,
    }
    for name, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        env[name] = str(folder)
    env["BUB_MODEL"] = "offline"
    env["PYTHONNOUSERSITE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    # No news, update checks or toasts: they would reach the network and cover the notebook.
    settings = folders["JUPYTER_CONFIG_DIR"] / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True})
    )
    return env


@dataclass
class JupyterLab:
    """A running JupyterLab server on 127.0.0.1, its root folder and its log."""

    root: Path
    port: int
    token: str
    log_path: Path
    process: subprocess.Popen[bytes]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}?token={self.token}"

    def api(self, path: str, method: str = "GET", timeout: float = 5.0, body: Any = None) -> Any:
        """One REST call as JupyterLab makes it; ``body`` is sent as JSON."""
        data = None if body is None else json.dumps(body).encode()
        headers = {} if body is None else {"Content-Type": "application/json"}
        request = urllib.request.Request(self.url(path), data=data, headers=headers, method=method)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def log(self, tail: int = 120) -> str:
        lines = self.log_path.read_text(errors="replace").splitlines() if self.log_path.exists() else []
        return "\n".join(lines[-tail:])

    def wait_until_ready(self, seconds: float = SERVER_START_SECONDS) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with code {self.process.returncode}:\n{self.log()}")
            with contextlib.suppress(OSError, ValueError):
                self.api("api/status", timeout=2.0)
                return
            time.sleep(0.2)
        raise TimeoutError(f"JupyterLab did not answer on {self.base_url} within {seconds:.0f}s:\n{self.log()}")

    def kernels(self) -> list[dict[str, Any]]:
        """The running kernels; empty while the list cannot be read (the server answers 500 mid-start)."""
        try:
            return list(self.api("api/kernels"))
        except (OSError, ValueError):
            return []

    def kernel_states(self) -> list[str]:
        return [kernel["execution_state"] for kernel in self.kernels()]

    def shut_down_kernels(self, seconds: float = SERVER_STOP_SECONDS) -> None:
        """End every session and its kernel, as closing a notebook with "Shut Down Kernel" does."""
        for session in self.api("api/sessions"):
            self.api(f"api/sessions/{session['id']}", method="DELETE")
        deadline = time.monotonic() + seconds
        while self.api("api/kernels"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"kernels still running {seconds:.0f}s after their sessions ended: {self.kernels()}")
            time.sleep(0.2)

    def labextensions(self) -> dict[str, Any]:
        """The prebuilt labextensions the server hands to the page, by name."""
        page = urllib.request.urlopen(self.url("lab"), timeout=10.0).read().decode()
        start = page.index('id="jupyter-config-data"')
        body = page[page.index(">", start) + 1 : page.index("</script>", start)]
        config = json.loads(body)
        return {extension["name"]: extension for extension in config.get("federated_extensions", [])}

    def stop(self) -> None:
        """Shut down through the API (kernels included), then make sure the whole process group is gone."""
        if self.process.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                self.api("api/shutdown", method="POST")
            try:
                self.process.wait(SERVER_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGTERM)
                try:
                    self.process.wait(5.0)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.process.pid, signal.SIGKILL)
                    self.process.wait(5.0)


@contextlib.contextmanager
def running_lab(
    base: Path, notebooks: list[Path], bub_home: Path, env: Mapping[str, str] | None = None
) -> Iterator[JupyterLab]:
    """JupyterLab serving copies of ``notebooks`` from ``base/root``, with ``env`` over its environment; stopped
    (kernels and all) on exit."""
    root = base / "root"
    root.mkdir(parents=True, exist_ok=True)
    for notebook in notebooks:
        shutil.copy(notebook, root / notebook.name)
    env = {**lab_environment(base, bub_home), **(env or {})}
    port, token = free_port(), secrets.token_hex(16)
    log_path = base / "jupyterlab.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        "--ServerApp.terminals_enabled=False",
        "--LabApp.extension_manager=readonly",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    lab = JupyterLab(root, port, token, log_path, process)
    try:
        lab.wait_until_ready()
        yield lab
    finally:
        lab.stop()


# -- the notebook in the browser -------------------------------------------------------------------

WIDGET_PLACEHOLDERS: Final = ("Loading widget...", "Error displaying widget")
OUTPUT_DIR: Final = Path(__file__).resolve().parents[2] / "test-output" / "browser"

# Every code cell shows "[n]:" once it has run; "[*]:" while queued or running, "[ ]:" before. After a rerun
# (window.bubQueued, see _RECORD_QUEUED) a cell counts only once it was queued again: until then it shows its old count.
_ALL_CODE_CELLS_RAN: Final = """() => {
    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
    const queued = window.bubQueued;
    return prompts.length > 0 && prompts.every(
        p => /^\\[\\d+\\]:$/.test(p.textContent.trim()) && (!queued || queued.has(p)));
}"""

# Remembers every code cell prompt that shows "[*]:" from now on: the cells a Run All queued.
_RECORD_QUEUED: Final = """() => {
    window.bubQueued = new Set();
    const note = () => document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt').forEach(
        p => { if (p.textContent.trim() === '[*]:') window.bubQueued.add(p); });
    new MutationObserver(note).observe(
        document.querySelector('.jp-Notebook'), {subtree: true, childList: true, characterData: true});
}"""

#: The text of each code cell's outputs, in order: widgets, rendered Markdown and HTML as the page shows them.
_CODE_CELL_OUTPUTS: Final = """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')].map(
    cell => [...cell.querySelectorAll('.jp-OutputArea-output')].map(output => output.textContent).join('\\n'))"""


# Records every state an output passes through while cells run, keyed by its cell's source.
_RECORD_OUTPUT_FRAMES: Final = """() => {
    window.bubOutputFrames = [];
    new MutationObserver(records => {
        for (const record of records) {
            const node = record.target.nodeType === Node.ELEMENT_NODE ? record.target : record.target.parentElement;
            const output = node && node.closest('.jp-OutputArea-output');
            const cell = output && output.closest('.jp-CodeCell');
            if (!cell) continue;
            const source = cell.querySelector('.jp-InputArea-editor').textContent;
            window.bubOutputFrames.push({source, text: output.textContent});
        }
    }).observe(document.querySelector('.jp-Notebook'), {subtree: true, childList: true, characterData: true});
}"""


def clear_kept() -> None:
    """Start ``test-output/browser/`` afresh, so no screenshot there is from an earlier run."""
    shutil.rmtree(OUTPUT_DIR, ignore_errors=True)


def keep(path: Path) -> Path:
    """Copy an artifact to ``test-output/browser/`` at the repository root, where a person can look at it."""
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    target = OUTPUT_DIR / path.name
    shutil.copyfile(path, target)
    return target


class LabNotebook:
    """One notebook open in JupyterLab, driven the way a person would: menus, buttons, the page itself."""

    def __init__(self, page: Any, lab: JupyterLab) -> None:
        self.page = page
        self.lab = lab
        self.console: list[str] = []
        page.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))

    def open(self, name: str, seconds: float = 60.0, workspace: str | None = None) -> None:
        """Open ``name`` and wait until its kernel is connected and idle; running earlier asks for a kernel.

        In a ``workspace`` of its own, JupyterLab reopens no notebook an earlier page had open (nor starts its kernel).
        """
        where = f"lab/workspaces/{workspace}/tree/{name}" if workspace else f"lab/tree/{name}"
        self.page.goto(self.lab.url(where), timeout=seconds * 1000)
        self.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=seconds * 1000)
        deadline = time.monotonic() + seconds
        while not any(k["connections"] > 0 and k["execution_state"] == "idle" for k in self.lab.kernels()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no idle kernel connected within {seconds:.0f}s: {self.lab.kernels()}")
            time.sleep(0.2)
        self.wait_for_kernel_idle(seconds)

    def wait_for_kernel_idle(self, seconds: float) -> None:
        """The notebook's own kernel indicator says idle (it also says so before a kernel exists)."""
        self.page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').wait_for(
            state="attached", timeout=seconds * 1000
        )

    def run_all_cells(self) -> None:
        """Run > Run All Cells, through the menu bar, recording what the outputs show on the way."""
        self.page.evaluate(_RECORD_OUTPUT_FRAMES)
        self.page.get_by_role("menuitem", name="Run", exact=True).click()
        self.page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

    def restart_and_run_all(self) -> None:
        """Kernel > Restart Kernel and Run All Cells…, accepting the dialog that asks to restart."""
        self.page.evaluate(_RECORD_QUEUED)
        self.page.get_by_role("menuitem", name="Kernel", exact=True).click()
        self.page.get_by_role("menuitem", name="Restart Kernel and Run All Cells…", exact=True).click()
        self.page.locator(".jp-Dialog .jp-mod-accept").click()

    def wait_until_all_cells_ran(self, seconds: float, idle_grace: float = IDLE_GRACE_SECONDS) -> None:
        """Wait until every code cell has run and the kernel is idle.

        Fails early when the kernel sits idle for ``idle_grace`` seconds while cells still wait:
        their execute requests were lost, and waiting longer changes nothing.
        """
        deadline = time.monotonic() + seconds
        idle_since: float | None = None
        while not self.page.evaluate(_ALL_CODE_CELLS_RAN):
            now = time.monotonic()
            idle = self.lab.kernel_states() == ["idle"]
            idle_since = (idle_since or now) if idle else None
            if now > deadline or (idle_since is not None and now - idle_since > idle_grace):
                prompts = self.code_cell_prompts()
                ran = [f"{prompt} {source}" for prompt, source in prompts if "[*]" not in prompt]
                stuck = [f"{prompt} {source}" for prompt, source in prompts if "[*]" in prompt]
                why = f"the kernel has been idle for {now - idle_since:.0f}s" if idle_since else f"after {seconds:.0f}s"
                raise TimeoutError(
                    f"code cells never ran ({why}, kernels {self.lab.kernel_states()}); "
                    f"last cell that ran: {ran[-1] if ran else 'none'}; still waiting: " + "; ".join(stuck)
                )
            time.sleep(0.25)
        self.wait_for_kernel_idle(seconds)
        while not (states := self.lab.kernel_states()) or any(state != "idle" for state in states):
            if time.monotonic() > deadline:
                raise TimeoutError(f"kernels stayed busy after every cell ran: {states}")
            time.sleep(0.2)

    def output_frames(self, text: str) -> list[str]:
        """Every text the outputs of the cell whose source contains ``text`` showed, in order, duplicates dropped."""
        frames: list[str] = []
        for frame in self.page.evaluate("() => window.bubOutputFrames || []"):
            if text in frame["source"] and (not frames or frames[-1] != frame["text"]):
                frames.append(frame["text"])
        return frames

    def code_cell_prompts(self) -> list[tuple[str, str]]:
        """Each code cell's prompt (``[3]:``, ``[*]:``) and the first line of its source."""
        cells = self.page.locator(".jp-Notebook .jp-CodeCell").all()
        return [
            (
                (cell.locator(".jp-InputPrompt").text_content() or "").strip(),
                (cell.locator(".jp-InputArea-editor .cm-line").first.text_content() or "").strip(),
            )
            for cell in cells
        ]

    def code_cell(self, text: str) -> Any:
        """The code cell whose source contains ``text``."""
        return self.page.locator(".jp-Notebook .jp-CodeCell").filter(
            has=self.page.locator(".jp-InputArea", has_text=text)
        )

    # Text is read with textContent: JupyterLab skips rendering cells out of view (content-visibility),
    # and innerText is empty for those.
    def error_outputs(self) -> list[str]:
        return self.page.locator(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]'
        ).all_text_contents()

    def stderr_outputs(self) -> list[str]:
        return self.page.locator(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
        ).all_text_contents()

    def code_cell_outputs(self) -> list[str]:
        """What each code cell's outputs show, as text, in the order of the cells."""
        return list(self.page.evaluate(_CODE_CELL_OUTPUTS))

    def widget_placeholders(self) -> list[str]:
        outputs = self.page.locator(".jp-OutputArea-output").all_text_contents()
        return [text.strip() for text in outputs if text.strip().startswith(WIDGET_PLACEHOLDERS)]

    def screenshot(self, path: Path, element: Any = None) -> Path:
        if element is None:
            self.page.screenshot(path=str(path))
        else:
            element.screenshot(path=str(path))
        return keep(path)

    @contextlib.contextmanager
    def explained(self, out_dir: Path, name: str) -> Iterator[None]:
        """Turn any failure inside into one message with a screenshot, the browser console and the server log."""
        try:
            yield
        except Exception as error:
            shot = out_dir / f"{name}-failure.png"
            with contextlib.suppress(Exception):
                self.screenshot(shot)
            console = "\n".join(self.console[-40:]) or "(empty)"
            raise AssertionError(
                f"{name}: {type(error).__name__}: {error}\n"
                f"screenshot: {shot} (copied to {OUTPUT_DIR})\n"
                f"browser console:\n{console}\n"
                f"JupyterLab log ({self.lab.log_path}):\n{self.lab.log()}"
            ) from error
