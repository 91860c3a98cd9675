"""What `make run` runs: the development server and, beside it, the transparency log's sequencer.

Production runs the web processes and one `manage.py log_sequencer` (README.md, "Production");
development runs the same pair, so a new record gets its place in the log (and its inclusion proof)
about a second after it is stored, as it would in production.

    python deploy/run_dev.py [HOST:PORT]        # default 127.0.0.1:8000

Both processes write to this terminal. Ctrl-C (SIGINT), SIGTERM or SIGHUP stops both; so does the
development server exiting on its own (a port already in use, say), with its exit status. The sequencer
exiting while the server runs is reported and it is started again, as production's supervisor would.

Each child runs in a process group of its own, which this script signals: `runserver`'s autoreloader
is a second process, and signalling its group stops both of them. Nothing is left behind.
"""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
STOP_SECONDS = 10  # what each child gets to finish after SIGINT before it is killed
POLL_SECONDS = 0.2
RESTART_DELAYS = (1, 2, 5, 10)  # the sequencer's restarts back off, then stay at 10 s


class Child:
    """A `manage.py` command in a process group of its own, sharing this terminal's output."""

    def __init__(self, name: str, *args: str) -> None:
        self.name, self.args = name, args
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen([sys.executable, "manage.py", *self.args], cwd=PROJECT,  # noqa: S603
                                        stdin=subprocess.DEVNULL, process_group=0)

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
    server = Child("runserver", "runserver", bind)
    sequencer = Child("log_sequencer", "log_sequencer")
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_stop)
    restarts = 0
    try:
        server.start()
        sequencer.start()
        while True:
            time.sleep(POLL_SECONDS)
            if (code := server.exit_code()) is not None:
                print(f"run_dev: runserver exited ({code}); stopping the log sequencer", file=sys.stderr, flush=True)
                return code
            if (code := sequencer.exit_code()) is not None:
                delay = RESTART_DELAYS[min(restarts, len(RESTART_DELAYS) - 1)]
                print(f"run_dev: the log sequencer exited ({code}); starting it again in {delay} s",
                      file=sys.stderr, flush=True)
                time.sleep(delay)
                restarts += 1
                sequencer.start()
    except _Stop:
        return 0
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # a second Ctrl-C does not cut the shutdown short
        sequencer.stop()
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
