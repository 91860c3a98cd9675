"""A real `manage.py signer` beside the test, on the test's own database (PostgreSQL: the signer is another
process and must see the test's committed rows)."""

import os
import subprocess
import sys
from pathlib import Path

from django.db import connection

from tests.waiting import wait_for_process

ROOT = Path(__file__).resolve().parents[2]


def database_url_of_this_test() -> str:
    """The URL of the database this test runs on, for the processes it starts."""
    database = connection.settings_dict
    return (f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/"
            f"{database['NAME']}")


def signer_environment(settings, **values: str) -> dict[str, str]:
    """A development signer's environment on the test's database, without Redis unless `values` gives it."""
    env = {**os.environ, "DATABASE_URL": database_url_of_this_test(), "DEBUG": "true",
           "SECRET_KEY": settings.SECRET_KEY, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("REDIS_URL", None)
    return {**env, **values}


def start_signer(env: dict[str, str], socket_path: str, *, command: tuple[str, ...] = ()) -> subprocess.Popen:
    """`manage.py signer --socket socket_path` (or `command`), once its socket is there."""
    Path(socket_path).unlink(missing_ok=True)  # a killed signer leaves its socket file behind
    process = subprocess.Popen([sys.executable, "manage.py", *(command or ("signer", "--socket", socket_path))],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for_process(lambda: Path(socket_path).exists(), process, what="the signer's socket", cpu_budget=60)
    return process


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(timeout=60)
