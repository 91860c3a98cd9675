"""bench/cluster.py --short: the whole cluster (nginx, two app instances, the signer, two sequencers, Celery
workers when the project has them, its own PostgreSQL and Redis) through each fault under a mixed load.
The script checks every outcome itself (statuses, exactly once, usage, quota, the log) and says OK per fault."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.nginx_site import NGINX
from tests.own_services import postgres_bin

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(NGINX is None or shutil.which("redis-server") is None or postgres_bin() is None,
                                reason="needs nginx, redis-server and the PostgreSQL server binaries")


def _run_short() -> subprocess.CompletedProcess:
    process = subprocess.Popen([sys.executable, "bench/cluster.py", "--short"], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = process.communicate(timeout=900)  # a guard for a hung cluster, not a measurement
    except subprocess.TimeoutExpired:
        process.terminate()  # SIGTERM: the script stops its cluster before it exits
        stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.timeout(1200)  # beyond the run's own 900 + 120 s guard, which stops the cluster cleanly
def test_every_fault_of_the_short_cluster_run_is_ok():
    run = _run_short()
    outcomes = dict(re.findall(r"^### (.+): (OK|FAILED)$", run.stdout, re.MULTILINE))
    expected = {"no fault", "an app instance killed", "Redis restarted", "the leading sequencer killed"}
    if (ROOT / "config" / "celery.py").exists():
        expected.add("a Celery worker killed mid-job")
    assert set(outcomes) == expected, run.stdout + run.stderr[-3000:]
    assert set(outcomes.values()) == {"OK"}, run.stdout
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
