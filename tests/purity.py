"""The check that a pure module stays pure: imported in a fresh interpreter, it loads no Django.

A fresh interpreter because this one has Django loaded already; started in the project's folder (`python -c`
imports from its working directory first, so ours are the modules found) and without
DJANGO_SETTINGS_MODULE, as a client or a script that imports the module would be.
"""

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def assert_imports_without_django(modules: Iterable[str], *, first: str = "") -> None:
    """Import each of `modules` in a new interpreter and fail if any `django` module was loaded.

    `first`: statements run before the imports, for a test that checks more about the same interpreter.
    """
    script = "\n".join([
        "import importlib, sys",
        first,
        f"for name in {list(modules)!r}:",
        "    importlib.import_module(name)",
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))",
        "assert not loaded, loaded",
        "print('ok')",
    ])
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run([sys.executable, "-c", script], cwd=PROJECT, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
