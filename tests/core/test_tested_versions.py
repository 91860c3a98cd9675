"""Code that steps around Django or gunicorn runs only on the releases it was tested with."""

import importlib
import re
from importlib.metadata import version
from pathlib import Path

import pytest

# Every module leaning on another package's internals declares TESTED_VERSIONS (package: major.minor).
PINNED_MODULES = ["core.api_chain", "core.gunicorn_worker", "core.hot_sql"]


def _major_minor(package: str) -> str:
    return ".".join(version(package).split(".")[:2])


@pytest.mark.parametrize("module_name", PINNED_MODULES)
def test_installed_releases_are_ones_the_module_was_tested_with(module_name):
    tested = importlib.import_module(module_name).TESTED_VERSIONS
    for package, releases in tested.items():
        assert _major_minor(package) in releases, (
            f"{module_name} was tested with {package} {', '.join(releases)}, not {version(package)}: "
            "measure it again (bench/bypasses.py) and test it before adding the release")


def test_pyproject_bounds_admit_only_tested_releases():
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    for module_name in PINNED_MODULES:
        for package, releases in importlib.import_module(module_name).TESTED_VERSIONS.items():
            bound = re.search(rf'"{package}>=([\d.]+),<([\d.]+)"', pyproject, re.IGNORECASE)
            assert bound, f"pyproject.toml gives {package} no upper bound"
            lowest, above = bound.groups()
            assert lowest == min(releases) and _next_minor(max(releases)) == above, (package, bound.group(0))


def _next_minor(release: str) -> str:
    major, minor = release.split(".")
    return f"{major}.{int(minor) + 1}"
