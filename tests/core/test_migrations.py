"""A database migrated before the platform moved from `config` to `core` keeps its rate counters and
stored idempotent responses: core's first migration renames the tables rather than creating new ones."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def _migrate(database: Path, *arguments: str) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "DEBUG": "true", "REDIS_URL": ""}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", *arguments], cwd=PROJECT, env=env,
                   check=True, capture_output=True, timeout=600)


def test_the_former_config_tables_are_adopted_with_their_rows(tmp_path):
    database = tmp_path / "db.sqlite3"
    _migrate(database)
    with sqlite3.connect(database) as connection:  # the database as the `config` app had left it
        connection.execute("ALTER TABLE core_ratecounter RENAME TO config_ratecounter")
        connection.execute("ALTER TABLE core_idempotentrequest RENAME TO config_idempotentrequest")
        connection.execute("DELETE FROM django_migrations WHERE app = 'core'")
        connection.execute("INSERT INTO config_ratecounter (subject, window_end, hits) VALUES ('ip:1', 99, 7)")
    _migrate(database, "core")
    with sqlite3.connect(database) as connection:
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"core_ratecounter", "core_idempotentrequest"} <= tables
        assert not {"config_ratecounter", "config_idempotentrequest"} & tables
        assert connection.execute("SELECT subject, window_end, hits FROM core_ratecounter").fetchall() == [
            ("ip:1", 99, 7)]


def test_a_new_database_gets_the_tables_created(tmp_path):
    database = tmp_path / "db.sqlite3"
    _migrate(database)
    with sqlite3.connect(database) as connection:
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"core_ratecounter", "core_idempotentrequest"} <= tables
