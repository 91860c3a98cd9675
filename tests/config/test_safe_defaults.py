"""A deployment that sets nothing shows no technical pages and refuses to start on development secrets.

Each case starts Django in a fresh process with exactly the environment a forgetful operator would have
(the suite's own settings turn DEBUG on, and pytest-django forces it off in-process either way).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SECRETS = {"SECRET_KEY": "a-production-secret-key-0123456789abcdef0123456789",
           "KEY_ENCRYPTION_KEY": "a-production-key-encryption-key-0123456789",
           "TOKEN_SIGNING_KEY": "a-production-token-signing-key-0123456789",
           "LOG_SIGNING_KEY": "a-production-log-signing-key-0123456789"}
PROBE = """
import json, django
django.setup()
from django.test import Client
client = Client(raise_request_exception=False)
pages = {"bad_host": client.get("/login", HTTP_HOST="evil.example"),
         "bad_host_api": client.get("/v1/billing/plans", HTTP_HOST="evil.example"),
         "not_found": client.get("/no-such-page")}
print(json.dumps({name: [r.status_code, r["Content-Type"], r.content.decode()] for name, r in pages.items()}))
"""


def _environment(tmp_path, **overrides: str) -> dict[str, str]:
    """The parent's environment without any setting of ours, on a throwaway SQLite file."""
    ours = {"DEBUG", "ALLOWED_HOSTS", "REDIS_URL", *SECRETS}
    env = {key: value for key, value in os.environ.items() if key not in ours}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    env.update(overrides)
    return env


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_with_nothing_set_the_service_refuses_to_start_and_names_secret_key(tmp_path):
    result = _run(_environment(tmp_path), "manage.py", "check")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "SECRET_KEY" in result.stderr


@pytest.mark.parametrize("missing", ["KEY_ENCRYPTION_KEY", "TOKEN_SIGNING_KEY", "LOG_SIGNING_KEY"])
def test_each_missing_production_secret_is_named(tmp_path, missing):
    present = {name: value for name, value in SECRETS.items() if name != missing}
    result = _run(_environment(tmp_path, **present), "manage.py", "check")
    assert result.returncode != 0
    assert missing in result.stderr.splitlines()[-1]


def test_debug_on_starts_with_nothing_else_set(tmp_path):
    result = _run(_environment(tmp_path, DEBUG="true"), "manage.py", "check")
    assert result.returncode == 0, result.stderr


def test_with_debug_unset_errors_are_short_pages_without_technical_detail(tmp_path):
    result = _run(_environment(tmp_path, **SECRETS), "-c", PROBE)
    assert result.returncode == 0, result.stderr
    pages = json.loads(result.stdout.strip().splitlines()[-1])
    for name, (_, _, content) in pages.items():
        assert len(content) < 1000, (name, len(content))
        for technical in ("Traceback", "URLconf", "DisallowedHost", "ALLOWED_HOSTS", "urlpatterns", "settings"):
            assert technical not in content, (name, technical)
    assert pages["bad_host"][0] == 400 and pages["not_found"][0] == 404
    status, content_type, content = pages["bad_host_api"]
    assert (status, content_type, json.loads(content)["error"]) == (400, "application/json", "validation_error")


@pytest.mark.parametrize("name, value, says", [
    ("KEY_ENCRYPTION_KEY", "k2:a-new-key-encryption-secret,k2:an-old-key-encryption-secret", "'k2' is listed twice"),
    ("KEY_ENCRYPTION_KEY", "k2:a-new-key-encryption-secret,,legacy:old", "entry 2 is empty"),
    ("TOKEN_SIGNING_KEY", "t2:,t1:an-old-token-signing-secret", "(id 't2') has an empty secret"),
    ("TOKEN_SIGNING_KEY", "not an id:an-old-token-signing-secret", "entry 1 has a malformed key id"),
])
def test_a_malformed_key_ring_stops_the_start_with_a_message_naming_it(tmp_path, name, value, says):
    result = _run(_environment(tmp_path, **{**SECRETS, name: value}), "manage.py", "check")
    assert result.returncode != 0
    last = result.stderr.splitlines()[-1]
    assert "ImproperlyConfigured" in last and name in last and says in last
    assert "an-old-token-signing-secret" not in result.stderr and "a-new-key-encryption-secret" not in result.stderr


def test_rings_with_ids_start_with_debug_off(tmp_path):
    rings = {"KEY_ENCRYPTION_KEY": "k2:a-new-key-encryption-secret,legacy:a-production-key-encryption-key-0123456789",
             "TOKEN_SIGNING_KEY": "t2:a-new-token-signing-secret,a-production-token-signing-key-0123456789"}
    result = _run(_environment(tmp_path, **{**SECRETS, **rings}), "manage.py", "check")
    assert result.returncode == 0, result.stderr
