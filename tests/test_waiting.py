"""tests/waiting.py: a wait ends on the condition, on the process's exit, on its CPU budget or on a stall."""

import subprocess
import sys
import time

import pytest

from tests import waiting


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code])


def test_a_wait_returns_what_the_condition_found():
    answers = iter([None, 0, "ready"])
    assert waiting.wait_until(lambda: next(answers), pids=lambda: [], cpu_budget=1, what="x") == "ready"


def test_a_wait_fails_once_the_process_has_spent_its_cpu_budget():
    busy = _child("while True: pass")
    try:
        with pytest.raises(AssertionError, match="not after"):
            waiting.wait_until(lambda: False, pids=lambda: waiting.process_tree(busy.pid), cpu_budget=0.3,
                               what="never")
    finally:
        busy.kill()
        busy.wait()


def test_a_wait_fails_at_once_when_the_process_is_gone():
    gone = _child("pass")
    gone.wait()
    with pytest.raises(AssertionError, match="gone"):
        waiting.wait_until(lambda: False, pids=lambda: [gone.pid], cpu_budget=60, what="never",
                           alive=lambda: gone.poll() is None)


def test_a_process_that_uses_no_cpu_at_all_is_reported_stalled(monkeypatch):
    monkeypatch.setattr(waiting, "STALL_POLLS", 5)
    monkeypatch.setattr(waiting, "POLL_SECONDS", 0.01)
    idle = _child("import time; time.sleep(60)")
    try:
        with pytest.raises(AssertionError, match="no progress"):
            waiting.wait_until(lambda: False, pids=lambda: [idle.pid], cpu_budget=60, what="never")
    finally:
        idle.kill()
        idle.wait()


def test_cpu_spent_counts_this_process_work_not_its_sleep():
    with waiting.CpuSpent() as slept:
        time.sleep(0.3)
    with waiting.CpuSpent() as worked:
        sum(range(20_000_000))
    assert slept.seconds < 0.1 < worked.seconds
