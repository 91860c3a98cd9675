"""The webhook signature and target modules are pure: importing them loads no Django."""

import subprocess
import sys


def test_signing_and_targets_import_without_django():
    code = ("import sys, webhooks.signing, webhooks.targets; "
            "assert not [m for m in sys.modules if m == 'django' or m.startswith('django.')]")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=__file__.rsplit("/tests/", 1)[0])
