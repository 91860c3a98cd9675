"""Waiting for another process (or thread) to reach a state, bounded by the work it does, not by the clock.

A busy machine stretches wall-clock time without making a process do more work, so a wait with a deadline
fails there. `wait_until` bounds the CPU time the watched processes spend before the condition holds, and
stops at once when `alive()` says they are gone. A process that makes no progress at all (no CPU tick over
STALL_POLLS polls in a row) is reported as stalled rather than waited on forever.
"""

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable

POLL_SECONDS = 0.1
STALL_POLLS = 600  # a minute of sleeping at the least, with not one tick of CPU among the watched processes
_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU of `pid` and of the children it has waited for; None when it is gone."""
    try:
        stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115 - one read of a proc file
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return sum(int(value) for value in fields[11:15]) / _TICKS


def own_cpu_seconds() -> float:
    """User and system CPU of this process (every thread) and of the children it has waited for."""
    user, system, children_user, children_system, _ = os.times()
    return user + system + children_user + children_system


class CpuSpent:
    """`with CpuSpent() as spent:` ... then `spent.seconds`: the CPU this process (every thread, and the
    children it waited for) used inside the block. For work done in the test's own process: a busy machine
    stretches its wall-clock time, not this."""

    seconds = 0.0

    def __enter__(self) -> "CpuSpent":
        self._start = own_cpu_seconds()
        return self

    def __exit__(self, *exc_info) -> None:
        self.seconds = own_cpu_seconds() - self._start


def wait_until(condition: Callable[[], object], *, pids: Callable[[], Iterable[int]], cpu_budget: float,
               what: str, alive: Callable[[], bool] = lambda: True, details: Callable[[], str] = lambda: ""):
    """Poll `condition` until it returns something truthy, and return that.

    Fails when `alive()` turns false, when the processes listed by `pids()` (asked again each poll: they may
    come and go) have spent over `cpu_budget` CPU seconds since the wait began, or when they stall."""
    spent: dict[int, tuple[float, float]] = {}  # pid -> (CPU at the start of the wait, CPU now)
    still = 0
    while True:
        result = condition()
        if result:
            return result
        assert alive(), f"{what}: the process is gone\n{details()}"
        before = sum(now - start for start, now in spent.values())
        for pid in pids():
            now = cpu_seconds(pid)
            if now is not None:
                spent[pid] = (spent.get(pid, (now, now))[0], now)
        used = sum(now - start for start, now in spent.values())
        assert used <= cpu_budget, f"{what}: not after {used:.1f} CPU seconds\n{details()}"
        still = still + 1 if used == before else 0
        assert still < STALL_POLLS, f"{what}: no progress (no CPU used over {STALL_POLLS} polls)\n{details()}"
        time.sleep(POLL_SECONDS)


def process_tree(root: int) -> list[int]:
    """`root` and every live process descended from it."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()  # noqa: SIM115 - one read of a proc file
            except OSError:
                continue
            parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        tree += frontier
    return tree


def serving(url: str) -> bool:
    """Whether something answers HTTP at `url` (any status). An answer slower than 30 s counts as none yet."""
    import requests

    try:
        requests.get(url, timeout=30)
    except (requests.ConnectionError, requests.Timeout):
        return False
    return True


def wait_for_process(ready: Callable[[], object], process, *, what: str, cpu_budget: float = 120.0,
                     details: Callable[[], str] = lambda: "") -> object:
    """`wait_until(ready)` for a server we started (`process`: a Popen): bounded by the CPU of its process
    tree, ended at once when it exits."""
    return wait_until(ready, pids=lambda: process_tree(process.pid), cpu_budget=cpu_budget, what=what,
                      alive=lambda: process.poll() is None, details=details)


def stop_process(process, *, grace: float = 10.0, sig: int = signal.SIGINT) -> None:
    """Stop a server we started in its own session (`start_new_session=True`): `sig` (SIGINT is gunicorn's
    and runserver's quick shutdown), up to `grace` seconds to exit, then SIGKILL for its whole process group
    (a master that hung, or workers it left behind)."""
    process.send_signal(sig)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def port_open(port: int) -> bool:
    """Whether 127.0.0.1:`port` accepts a connection."""
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError:
        return False
    return True
