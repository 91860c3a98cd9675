"""A PostgreSQL cluster and a redis-server of our own, in a temporary folder on a free port, to kill.

The fault tests and bench/faults.py stop and restart these; the shared servers on 5432 and 6379
are never touched. PostgreSQL refuses to run as root, so as root the cluster belongs to `postgres`.
"""

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.proc_sockets import free_port


def wait_for_port(port: int, timeout: float = 120.0, *, open_: bool = True, process=None) -> None:
    """Wait until 127.0.0.1:`port` accepts connections (or, with open_=False, refuses them).

    With the `process` (a Popen) that is to open it, the wait is bounded by the CPU its process tree spends,
    not by the clock (tests/waiting.py); `timeout` then does not apply."""
    if process is not None and open_:
        from tests.waiting import port_open, wait_for_process

        wait_for_process(lambda: port_open(port), process, what=f"port {port} open", cpu_budget=60)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                if open_:
                    return
        except OSError:
            if not open_:
                return
        time.sleep(0.05)
    raise RuntimeError(f"port {port} did not {'open' if open_ else 'close'} within {timeout} s")


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class OwnPostgres:
    """initdb + pg_ctl in a temporary folder; `url(name)` for a database on it (trust auth, user postgres)."""

    def __init__(self) -> None:
        self.bin = postgres_bin()
        if self.bin is None:
            raise RuntimeError("PostgreSQL server binaries not found under /usr/lib/postgresql")
        self.folder = Path(tempfile.mkdtemp(prefix="own-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        self._user = "postgres" if os.geteuid() == 0 else None
        if self._user:
            entry = pwd.getpwnam(self._user)
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                       f"unix_socket_directories = '{self.folder}'\nmax_connections = 200\n")

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin / tool), *args]
        if self._user:
            command = ["runuser", "-u", self._user, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=check, timeout=600)

    def url(self, name: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"), "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """pg_ctl stop: `fast` ends every session (what a restart does), `immediate` is a crash."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def close(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


class OwnRedis:
    """redis-server with no persistence: a restart starts empty, the worst case for what it held. With
    `persistent`, an append-only file written on every command, as compose.yaml's Redis keeps one: a restart
    keeps what was acknowledged (a job broker's queued messages among it)."""

    def __init__(self, *, persistent: bool = False) -> None:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not installed")
        self.folder = Path(tempfile.mkdtemp(prefix="own-redis-"))
        self.port = free_port()
        self.persistent = persistent
        self.process: subprocess.Popen | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             *(["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]),
             "--dir", str(self.folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, process=self.process)

    def kill(self) -> None:
        """SIGKILL: Redis vanishes with everything it held; connections are refused from then on."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        wait_for_port(self.port, open_=False)

    def freeze(self) -> None:
        """SIGSTOP: Redis accepts connections (the kernel does) but never answers: a hung server."""
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.thaw()
        self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)
