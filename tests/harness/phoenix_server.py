"""A real Phoenix server on 127.0.0.1 for the export tests: its OTLP/HTTP receiver, read back with its own client."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.processes import free_port

LAUNCHER = Path(__file__).with_name("phoenix_launcher.py")  # run as a script, in Phoenix's own process


class PhoenixReceiver:
    """``arize-phoenix`` serving from a working folder of its own, on free loopback ports."""

    def __init__(self, working_dir: Path, *, startup_timeout: float = 180.0) -> None:
        self.working_dir = working_dir
        self.port = free_port()
        self.grpc_port = free_port()
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.log = working_dir / "phoenix.log"
        self.started_in = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> PhoenixReceiver:
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(self.working_dir),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(self.grpc_port),
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        }
        began = time.monotonic()
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(LAUNCHER), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
            )
        while time.monotonic() - began < self.startup_timeout:
            if self.process.poll() is not None:
                raise RuntimeError(f"Phoenix exited with {self.process.returncode}: {self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        self.started_in = time.monotonic() - began
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"Phoenix did not answer within {self.startup_timeout:.0f} s: {self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def client(self) -> Any:
        from phoenix.client import Client

        return Client(base_url=self.base_url)

    def __enter__(self) -> PhoenixReceiver:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
