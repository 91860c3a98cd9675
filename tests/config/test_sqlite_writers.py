"""On an SQLite file, concurrent transactions that read and then write wait for each other.

With SQLite's default deferred BEGIN, the second transaction to write fails at once with "database
is locked" (a 500): schemathesis hit it with two concurrent `rotate` calls. Runs in a subprocess on a
file, as deployed; pytest's in-memory database is in shared-cache mode and behaves differently.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
SCRIPT = """
import json, threading, time, uuid, django
django.setup()
from django.core.management import call_command
from django.db import connections, transaction
from core.models import RateCounter
call_command("migrate", verbosity=0)
barrier, errors = threading.Barrier(8), []
def read_then_write():
    try:
        barrier.wait()
        with transaction.atomic():
            RateCounter.objects.filter(subject="x").exists()
            time.sleep(0.05)
            RateCounter.objects.create(subject=uuid.uuid4().hex, window_end=0, hits=1)
    except Exception as exc:
        errors.append(repr(exc))
    finally:
        connections.close_all()
threads = [threading.Thread(target=read_then_write) for _ in range(8)]
[t.start() for t in threads]; [t.join() for t in threads]
print(json.dumps({"errors": errors, "rows": RateCounter.objects.count()}))
"""


def test_concurrent_read_then_write_transactions_wait_instead_of_failing(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "REDIS_URL": "", "DEBUG": "true",
           "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=PROJECT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"errors": [], "rows": 8}
