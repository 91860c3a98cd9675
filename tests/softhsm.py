"""A SoftHSMv2 token for tests: its own token directory and configuration file, made with softhsm2-util.

SoftHSM reads SOFTHSM2_CONF when the module initializes (C_Initialize), once per process, so the
variable is set before anything in the test process loads the module, and every token a test run needs
is made before that first load.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SOFTHSM_MODULE = "/usr/lib/softhsm/libsofthsm2.so"


@dataclass(frozen=True)
class SoftHsmToken:
    module_path: str
    label: str
    pin: str
    so_pin: str
    configuration: Path


def softhsm_missing() -> str | None:
    """Why SoftHSMv2 cannot be used here, or None when it can."""
    if shutil.which("softhsm2-util") is None:
        return "softhsm2-util is not installed (Debian package softhsm2)"
    if not Path(SOFTHSM_MODULE).exists():
        return f"{SOFTHSM_MODULE} is missing (Debian package softhsm2)"
    return None


def softhsm_token_create(directory: Path, *, label: str, pin: str, so_pin: str) -> SoftHsmToken:
    """A fresh token in `directory` (configuration beside it), with SOFTHSM2_CONF pointing there."""
    token_directory = directory / "tokens"
    token_directory.mkdir(parents=True, exist_ok=True)
    configuration = directory / "softhsm2.conf"
    configuration.write_text(
        f"directories.tokendir = {token_directory}\nobjectstore.backend = file\nlog.level = ERROR\n"
    )
    os.environ["SOFTHSM2_CONF"] = str(configuration)
    subprocess.run(
        ["softhsm2-util", "--init-token", "--free", "--label", label, "--pin", pin, "--so-pin", so_pin],
        check=True,
        capture_output=True,
        env={**os.environ, "SOFTHSM2_CONF": str(configuration)},
    )
    return SoftHsmToken(SOFTHSM_MODULE, label, pin, so_pin, configuration)
