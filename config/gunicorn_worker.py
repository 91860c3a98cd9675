"""A gthread worker that takes its share of connections, so keep-alive load spreads over the workers.

gunicorn's workers all wait on the one listening socket and whichever wakes first accepts. A kept-alive
connection then stays with that worker for its whole life, so a burst of connections (a proxy opening
its upstream pool, a load generator starting) can settle mostly on one worker, and that worker's share
of the CPU caps the whole server: measured, about one server start in three halved throughput
(docs/performance.md, "Connections over workers").

Each worker publishes how many connections it holds in a table shared with its siblings (created by
the master before it forks them) and stops accepting while it holds more than the least-loaded live
sibling plus `SLACK`. The least-loaded worker always accepts, so a connection is never left waiting
for a worker; a worker that stopped accepting looks again every `RECHECK_SECONDS`.
"""

import ctypes
import multiprocessing
import os

from gunicorn.workers.gthread import ThreadWorker

# More than any worker count we run; a worker that finds no free slot accepts as stock gthread does.
SLOTS = 256
# How many more connections than the least-loaded sibling a worker may hold and still accept: a burst
# then lands on both workers at once instead of alternating one connection at a time.
SLACK = 1
RECHECK_SECONDS = 0.05


class _Slot(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_int), ("connections", ctypes.c_int)]


# Created when the master imports the worker class (before any fork), inherited by every worker.
_table = multiprocessing.RawArray(_Slot, SLOTS)
_slots_used = multiprocessing.RawValue(ctypes.c_int, 0)  # slots at or past this were never claimed
_claim_lock = multiprocessing.Lock()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim_slot(table, used, pid: int) -> int | None:
    """A free slot for `pid` (one whose worker has exited counts as free), or None if all are taken."""
    with _claim_lock:
        for index in range(len(table)):
            slot = table[index]
            if slot.pid == 0 or not _alive(slot.pid):
                slot.pid, slot.connections = pid, 0
                used.value = max(used.value, index + 1)
                return index
    return None


def release_slot(table, index: int | None, pid: int) -> None:
    if index is not None and table[index].pid == pid:
        table[index].pid = 0


def fewest_elsewhere(table, used: int, own: int) -> int | None:
    """The fewest connections any other live worker holds, or None when this worker is alone.

    A worker killed by the master (timeout, SIGKILL) never released its slot: its pid is checked.
    """
    fewest = None
    for index in range(used):
        slot = table[index]
        if index == own or slot.pid == 0 or not _alive(slot.pid):
            continue
        if fewest is None or slot.connections < fewest:
            fewest = slot.connections
    return fewest


class BalancedThreadWorker(ThreadWorker):
    """gthread, plus: accept only while holding no more than the least-loaded sibling plus SLACK."""

    def init_process(self):
        self._slot = claim_slot(_table, _slots_used, os.getpid())
        self._held_back = False
        super().init_process()

    def run(self):
        try:
            super().run()
        finally:
            release_slot(_table, self._slot, os.getpid())

    def _within_share(self) -> bool:
        if self._slot is None:
            return True
        _table[self._slot].connections = self.nr_conns
        fewest = fewest_elsewhere(_table, _slots_used.value, self._slot)
        return fewest is None or self.nr_conns <= fewest + SLACK

    def set_accept_enabled(self, enabled):
        self._held_back = enabled and self.alive and not self._within_share()
        super().set_accept_enabled(enabled and not self._held_back)

    def notify(self):
        # Called at the top of every turn of the event loop: stop accepting once over our share. Taking
        # connections again needs nothing here: while not accepting, the loop calls set_accept_enabled
        # (True) every turn, which asks _within_share again.
        super().notify()
        if not self.alive:
            # Stopping: no longer a sibling that others should wait for.
            release_slot(_table, self._slot, os.getpid())
            self._held_back = False
        elif self._accepting and not self._within_share():
            self.set_accept_enabled(False)
            self._held_back = True

    def wait_for_and_dispatch_events(self, timeout):
        # While held back, wake often enough to take connections again once the siblings catch up.
        if self._held_back:
            timeout = min(timeout, RECHECK_SECONDS)
        return super().wait_for_and_dispatch_events(timeout)
