"""The crypto/provenance helpers must stay importable without Django."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PURE_MODULES = [
    "record_format.crypto",
    "record_format.canonical_json",
    "record_format.hashing",
    "record_format.payload",
    "provenance.tokens",
    "core.sealing",
    "core.hkdf",
    "core.secret_ring",
    "verification.summary",
]
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_pure_modules_import_without_loading_django() -> None:
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    script = (
        "import importlib, sys\n"
        f"for name in {PURE_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not loaded, loaded\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
