"""The log scan of the whole test session (tests/log_scan.py) fails a run that logs a secret.

Each case runs a small pytest session in a subprocess with only the plugin (no Django), and asserts on
its exit status and report; the shapes are checked on lines directly.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.log_scan import find_leaks

PROJECT = Path(__file__).resolve().parents[2]
CONFTEST = """
from tests import log_scan

def pytest_configure(config):
    config.pluginmanager.register(log_scan, "log_scan")
"""


def _run_session(tmp_path: Path, test_code: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(test_code))
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:django", "-p", "no:cacheprovider",
                           "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), *args,
                           str(tmp_path / "test_sample.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_a_session_that_logs_no_secret_passes(tmp_path):
    result = _run_session(tmp_path, """
        import logging
        def test_it():
            logging.getLogger("accounts").info("login for user %s", "someone@example.com")
    """)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "secrets in log lines" not in result.stdout


def test_a_logged_api_key_fails_the_run_even_when_every_test_passed(tmp_path):
    result = _run_session(tmp_path, """
        import logging
        def test_it():
            logging.getLogger("webhooks").warning("calling with %s", "svc_key_3kq0x9ZpLw2Vd8YhTn4Rm6Ja1Uc5Be7F")
    """)
    assert result.returncode == 1
    assert "1 passed" in result.stdout and "API key" in result.stdout and "webhooks" in result.stdout


def test_a_registered_secret_in_a_traceback_fails_the_run(tmp_path):
    result = _run_session(tmp_path, """
        import logging
        from tests.log_scan import register_secret
        def test_it():
            register_secret("plain-looking-value-42")
            try:
                raise ValueError("bad value plain-looking-value-42")
            except ValueError:
                logging.getLogger("x").exception("it failed")
    """)
    assert result.returncode == 1 and "a secret a test created" in result.stdout


def test_a_project_debug_line_is_scanned_too(tmp_path):
    result = _run_session(tmp_path, """
        import logging
        def test_it():
            logging.getLogger("provenance.services").debug("key -----BEGIN PRIVATE KEY-----")
    """)
    assert result.returncode == 1 and "private key" in result.stdout


def test_a_subprocess_log_file_is_scanned(tmp_path):
    result = _run_session(tmp_path, """
        from tests.log_scan import watch_file
        def test_it(tmp_path):
            log = tmp_path / "server.log"
            log.write_text('{"message": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"}')
            watch_file(log)
    """)
    assert result.returncode == 1 and "JWT" in result.stdout and "server.log" in result.stdout


def test_a_leak_in_one_xdist_worker_fails_the_run(tmp_path):
    result = _run_session(tmp_path, """
        import logging
        import pytest
        @pytest.mark.parametrize("n", range(4))
        def test_it(n):
            if n == 3:
                logging.getLogger("teams").error("invite secret whsec_Zm9vYmFyYmF6cXV4cXV1eA")
    """, "-n", "2")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "4 passed" in result.stdout and "webhook secret" in result.stdout


def test_a_test_that_replaces_the_logging_config_is_reported(tmp_path):
    result = _run_session(tmp_path, """
        import logging.config
        def test_it():
            logging.config.dictConfig({"version": 1, "root": {"handlers": []}})
    """)
    assert result.returncode == 1 and "handlers were replaced during" in result.stdout


@pytest.mark.parametrize(("line", "kind"), [
    ("Bearer svc_key_AbCdEfGh12345678", "API key"),
    ("token svc_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3", "provenance token"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "JWT"),
    ("-----BEGIN EC PRIVATE KEY-----", "private key"),
    ("secret whsec_abcdefgh12345", "webhook secret"),
    ("otpauth://totp/Provenance:a@b.c?secret=JBSWY3DPEHPK3PXP", "TOTP secret"),
    ('{"password": "hunter22"}', "password field"),
])
def test_each_secret_shape_is_found(line, kind):
    (leak,) = find_leaks([line], set())
    assert leak.startswith(kind)


def test_ordinary_lines_are_not_leaks():
    lines = ["GET /v1/records/0b0e4c9e-6a53-4b8e-9d5c-1f3f0e1c2a3b 200 3.1ms", "password reset email sent to a@b.c",
             "svc_client retry 2", "content_hash sha256:" + "ab" * 32]
    assert find_leaks(lines, {"a-registered-secret"}) == []


def test_the_part_of_a_registered_secret_after_its_prefix_counts_too(monkeypatch):
    from tests import log_scan

    monkeypatch.setattr(log_scan, "_secrets", set())
    log_scan.register_secret("svc_key_Zm9vYmFyYmF6MTIzNDU2")
    log_scan.register_secret("short")  # too short to tell from ordinary words: ignored
    assert log_scan._secrets == {"svc_key_Zm9vYmFyYmF6MTIzNDU2", "Zm9vYmFyYmF6MTIzNDU2"}
    (leak,) = find_leaks(["created Zm9vYmFyYmF6MTIzNDU2", "a short line"], log_scan._secrets)
    assert leak.startswith("a secret a test created")
