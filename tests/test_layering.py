"""Which module may know what: checked on the source, so a shortcut fails here rather than in review.

- `core` is the ground floor of the apps: it imports no app and not `config` (settings, URLs, serving).
- The per-IP throttles are infrastructure (core); billing keeps only the per-plan one.
- The signed fields and the content families are each spelled out once.
"""

import ast
from pathlib import Path

import billing.throttles
import core.throttles
from media_codecs import FAMILIES
from record_format.payload import SIGNED_FIELDS

PROJECT = Path(__file__).resolve().parents[1]
APPS = ("accounts", "audit", "billing", "generators", "provenance", "verification", "webhooks", "teams",
        "transparency", "dashboard")


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


def test_core_imports_no_app_and_not_the_configuration():
    offenders = {f"{path.relative_to(PROJECT)}: {module}" for path in _source_files("core")
                 for module in _imported_modules(path) if module.split(".")[0] in (*APPS, "config")}
    assert offenders == set()


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


def test_the_shared_format_packages_and_the_client_import_no_app_and_no_django():
    """media_codecs and record_format ship inside the client's wheel; the client runs without the service."""
    roots = ("media_codecs", "record_format", "client/svc_client")
    offenders = {f"{path.relative_to(PROJECT)}: {module}" for path in _source_files(*roots)
                 for module in _imported_modules(path) if module.split(".")[0] in (*APPS, "config", "core", "django")}
    assert offenders == set()


def test_no_app_imports_the_dashboard():
    # The verdict's words live in verification/summary.py, used by the API and the /verify page alike.
    offenders = {f"{path.relative_to(PROJECT)}: {module}" for app in APPS if app != "dashboard"
                 for path in _source_files(app) for module in _imported_modules(path)
                 if module.split(".")[0] == "dashboard"}
    assert offenders == set()
