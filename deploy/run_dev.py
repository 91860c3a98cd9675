"""What `make run` runs: the development server and, beside it, the transparency log's sequencer, the
signer service and a Celery worker for jobs.

Production runs the web processes, one `manage.py log_sequencer`, the signer and the job workers (README.md,
"Production"); development runs the same, so a new record gets its place in the log (and its inclusion
proof) about a second after it is stored, every signature comes from the signer over its socket, and a
`Prefer: respond-async` request is done by a worker, as in production. Without REDIS_URL the worker's
broker is a folder beside the job files (config/settings.py, CELERY_BROKER_URL); the worker also runs the
periodic cleanup of jobs (`--beat`, its schedule file in this run's temporary folder).

    python deploy/run_dev.py [HOST:PORT]        # default 127.0.0.1:8000

Every process writes to this terminal. Ctrl-C (SIGINT), SIGTERM or SIGHUP stops them all; so does the
development server exiting on its own (a port already in use, say), with its exit status. The sequencer or
the signer exiting while the server runs is reported and started again, as production's supervisor would.

Each child runs in a process group of its own, which this script signals: `runserver`'s autoreloader
is a second process, and signalling its group stops both of them. Nothing is left behind.
"""

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
STOP_SECONDS = 10  # what each child gets to finish after SIGINT before it is killed
POLL_SECONDS = 0.2
RESTART_DELAYS = (1, 2, 5, 10)  # the sequencer's restarts back off, then stay at 10 s


class Child:
    """A `manage.py` command in a process group of its own, sharing this terminal's output."""

    def __init__(self, name: str, *args: str, env: dict[str, str] | None = None, program: str = "manage.py") -> None:
        self.name, self.args, self.env = name, args, env
        self.command = [program] if program.endswith(".py") else ["-m", program]  # a script, or a module's
        self.process: subprocess.Popen | None = None
        self.restarts = 0

    def start(self) -> None:
        self.process = subprocess.Popen([sys.executable, *self.command, *self.args], cwd=PROJECT,  # noqa: S603
                                        stdin=subprocess.DEVNULL, process_group=0, env=self.env)

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def stop(self) -> None:
        """SIGINT to the child's group (its Ctrl-C), then SIGKILL to the group if it has not exited in time."""
        if self.process is None:
            return
        _signal_group(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            print(f"run_dev: {self.name} did not stop in {STOP_SECONDS} s; killing it", file=sys.stderr, flush=True)
            _signal_group(self.process.pid, signal.SIGKILL)
            self.process.wait()
        else:
            _signal_group(self.process.pid, signal.SIGKILL)  # whatever the child left in its group


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


class _Stop(Exception):
    """A stop signal arrived."""


def _raise_stop(signum, frame) -> None:
    raise _Stop


def main(argv: list[str]) -> int:
    bind = argv[0] if argv else "127.0.0.1:8000"
    with tempfile.TemporaryDirectory(prefix="svc-signer-") as folder:  # a short path: sockets allow 108 bytes
        env = {**os.environ, "SIGNER_SOCKET": os.environ.get("SIGNER_SOCKET") or str(Path(folder) / "signer.sock")}
        worker = Child("job worker", "-A", "config", "worker", "--beat", "--concurrency", "2", "--loglevel", "INFO",
                       "--schedule", str(Path(folder) / "celerybeat-schedule"), env=env, program="celery")
        return _run(Child("runserver", "runserver", bind, env=env),
                    [Child("log sequencer", "log_sequencer", env=env), Child("signer", "signer", env=env), worker])


def _run(server: Child, helpers: list[Child]) -> int:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_stop)
    try:
        for child in (*helpers, server):
            child.start()
        while True:
            time.sleep(POLL_SECONDS)
            if (code := server.exit_code()) is not None:
                names = " and the ".join(helper.name for helper in helpers)
                print(f"run_dev: runserver exited ({code}); stopping the {names}", file=sys.stderr, flush=True)
                return code
            for helper in helpers:
                if (code := helper.exit_code()) is not None:
                    delay = RESTART_DELAYS[min(helper.restarts, len(RESTART_DELAYS) - 1)]
                    print(f"run_dev: the {helper.name} exited ({code}); starting it again in {delay} s",
                          file=sys.stderr, flush=True)
                    time.sleep(delay)
                    helper.restarts += 1
                    helper.start()
    except _Stop:
        return 0
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # a second Ctrl-C does not cut the shutdown short
        for child in (*helpers, server):
            child.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
