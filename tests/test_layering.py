"""Which module may know what: checked on the source, so a shortcut fails here rather than in review.

The order between packages (core and the format packages below every app, no app importing one above it, no
Django in the format packages) is import-linter's contract in pyproject.toml, run by `make lint`. Here:
- every package of the project has its place in that contract (one left out would be unconstrained);
- the client imports no app and no Django (it is not a package of the service, so the contract misses it);
- the per-IP throttles are infrastructure (core); billing keeps only the per-plan one;
- the signed fields and the content families are each spelled out once.
"""

import ast
import tomllib
from pathlib import Path

import billing.throttles
import core.throttles
from media_codecs import FAMILIES
from record_format.payload import SIGNED_FIELDS

PROJECT = Path(__file__).resolve().parents[1]
APPS = ("accounts", "audit", "billing", "generators", "signer", "provenance", "verification", "webhooks", "teams",
        "transparency", "dashboard", "jobs")


def _source_files(*roots: str) -> list[Path]:
    """The project's Python source under `roots` (default: every app, config and media_codecs)."""
    folders = [PROJECT / root for root in roots or (*APPS, "config", "core", "media_codecs", "record_format")]
    return sorted(path for folder in folders for path in folder.rglob("*.py") if "migrations" not in path.parts)


def _imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


def _string_collections(path: Path) -> list[set[str]]:
    """The string constants of every tuple, list, set and dict (keys) literal in a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict) and items:
            found.append({item.value for item in items if isinstance(item, ast.Constant)
                          and isinstance(item.value, str)})
    return found


def _modules_spelling_out(values: tuple[str, ...]) -> set[str]:
    return {str(path.relative_to(PROJECT)) for path in _source_files()
            if any(set(values) <= strings for strings in _string_collections(path))}


def test_every_package_of_the_project_has_its_place_in_the_import_contract():
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    packages = {name.rstrip("*") for name in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]}
    linter = pyproject["tool"]["importlinter"]
    layers = next(contract["layers"] for contract in linter["contracts"] if contract["type"] == "layers")
    assert set(layers) == set(linter["root_packages"]) == packages == {*APPS, "config", "core", "media_codecs",
                                                                       "record_format"}
    assert len(layers) == len(set(layers))


def test_the_per_ip_throttles_live_in_core_and_billing_keeps_the_plan_limit():
    assert {"client_ip", "IpThrottle", "VerifyIpThrottle", "AuthIpThrottle"} <= set(vars(core.throttles))
    assert not {"client_ip", "IpThrottle", "VerifyIpThrottle", "AuthIpThrottle"} & set(vars(billing.throttles))
    importers = {str(path.relative_to(PROJECT)) for path in _source_files()
                 if "billing.throttles" in _imported_modules(path)}
    # The DEFAULT_THROTTLE_CLASSES setting names it for the API; the dashboard counts pages on the same counter.
    assert importers == {"dashboard/access.py"}


def test_the_signed_fields_are_spelled_out_once():
    assert SIGNED_FIELDS == ("content_hash", "generator_id", "model", "watermark_id")
    assert _modules_spelling_out(SIGNED_FIELDS) == {"record_format/payload.py"}


def test_the_families_are_spelled_out_once_by_media_codecs():
    assert FAMILIES == ("image", "audio", "text", "video")
    assert _modules_spelling_out(FAMILIES) == {"media_codecs/families.py"}


def test_the_client_imports_no_app_and_no_django():
    """The client runs without the service: its wheel carries media_codecs and record_format, not the apps."""
    offenders = {f"{path.relative_to(PROJECT)}: {module}" for path in _source_files("client/svc_client")
                 for module in _imported_modules(path) if module.split(".")[0] in (*APPS, "config", "core", "django")}
    assert offenders == set()
