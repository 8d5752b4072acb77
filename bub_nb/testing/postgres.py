"""A throwaway PostgreSQL server in a temporary folder, for tests, lessons and benchmarks.

It runs Debian's ``initdb`` and ``pg_ctl``. PostgreSQL refuses to run as root, so as root the
server runs as the unprivileged ``postgres`` user through ``runuser``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

SUPERUSER = "postgres"
SUPERUSER_PASSWORD = "bub-nb-admin-secret"


def server_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, newest version first; ``None`` when not installed."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """One server on 127.0.0.1 with password authentication; ``dsn()`` connects to it."""

    def __init__(self, directory: str | Path | None = None) -> None:
        binaries = server_binaries()
        if binaries is None:
            raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
        self.binaries = binaries
        self.directory = Path(directory or tempfile.mkdtemp(prefix="bub-nb-pg-"))
        self.data = self.directory / "data"
        self.port = _free_port()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            self._as_user = ["runuser", "-u", "postgres", "--"]
            account = pwd.getpwnam("postgres")
            os.chown(self.directory, account.pw_uid, account.pw_gid)
        self.directory.chmod(0o700)

    def _run(self, *args: str) -> None:
        result = subprocess.run([*self._as_user, *args], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{Path(args[0]).name} failed: {(result.stderr or result.stdout).strip()[-500:]}")

    def start(self) -> PostgresServer:
        if not self.data.exists():
            password_file = self.directory / "pw"
            password_file.write_text(SUPERUSER_PASSWORD)
            if self._as_user:
                shutil.chown(password_file, "postgres")
            self._run(
                str(self.binaries / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--pwfile", str(password_file),
                "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8",
            )  # fmt: skip
            password_file.unlink()
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory} -c fsync=off "
            "-c synchronous_commit=on -c max_connections=200 -c full_page_writes=off"
        )
        self._run(str(self.binaries / "pg_ctl"), "-D", str(self.data), "-o", options, "-l",
                  str(self.directory / "log"), "-w", "-t", "60", "start")  # fmt: skip
        return self

    def stop(self, mode: str = "fast") -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)

    def dsn(self, user: str = SUPERUSER, password: str | None = SUPERUSER_PASSWORD, database: str = "postgres") -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://{user}{secret}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A fresh database; returns the superuser's DSN for it."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(database=name)

    def create_role(self, name: str, password: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(name), sql.Literal(password))
            )

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
