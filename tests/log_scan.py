"""A pytest plugin that fails the run if any log line of the whole test session holds a secret.

Every record any logger emits (INFO and up, as production logs; DEBUG too for the project's own loggers)
is formatted and kept, with its traceback, by a handler on the root logger for the whole session. Log
files of servers the tests start in subprocesses are added with `watch_file`. At the end of the session
every line is searched for secret shapes (API keys, provenance tokens, JWTs, private keys, webhook
secrets, TOTP URIs) and for the exact secrets the factories created (`register_secret`); a match fails
the run and names the line. Under xdist each worker scans its own lines and the controller fails the run.

No Django import: tests/config/test_log_scan.py runs this plugin in a bare pytest to prove it fails.
"""

import logging
import re
from pathlib import Path

import pytest

# The project's loggers, scanned from DEBUG: an operator may set LOG_LEVEL=DEBUG in production.
PROJECT_LOGGERS = ("access", "accounts", "audit", "billing", "config", "core", "dashboard", "generators",
                   "media_codecs", "provenance", "record_format", "teams", "transparency", "verification", "webhooks")

SECRET_SHAPES = {
    "API key": re.compile(r"svc_key_[A-Za-z0-9_-]{8,}"),
    "provenance token": re.compile(r"svc_[A-Za-z0-9_-]{20,}"),
    "JWT": re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    "private key": re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"),
    "webhook secret": re.compile(r"whsec_[A-Za-z0-9_-]{8,}"),
    "TOTP secret": re.compile(r"otpauth://|[?&]secret=[A-Z2-7]{16,}"),
    "recovery code": re.compile(r"(?<![\w-])[0-9a-hjkmnp-tv-z]{4}(?:-[0-9a-hjkmnp-tv-z]{4}){3}(?![\w-])"),
    "password field": re.compile(r"""["']?(password|passwd|secret_key)["']?\s*[:=]\s*["'][^"']{4,}""", re.I),
}
MIN_EXACT_LENGTH = 8  # shorter registered values would match ordinary words
KNOWN_PREFIXES = ("svc_key_", "whsec_", "svc_")  # longest first

_secrets: set[str] = set()
_files: list[Path] = []
_LINE_FORMAT = "%(levelname)s %(name)s %(message)s"


def register_secret(value: str | bytes | None) -> None:
    """A secret a test created (a key, a token, a password): no log line may contain it."""
    if isinstance(value, bytes):
        value = value.hex()
    if value and len(value) >= MIN_EXACT_LENGTH:
        _secrets.add(value)
        prefix = next((prefix for prefix in KNOWN_PREFIXES if value.startswith(prefix)), "")
        if prefix and len(value) - len(prefix) >= MIN_EXACT_LENGTH:  # the part after it is as secret
            _secrets.add(value[len(prefix):])


def watch_file(path: Path) -> None:
    """A log file a subprocess writes (a server the test started): scanned at the end of the session."""
    _files.append(Path(path))


class RecordingHandler(logging.Handler):
    """Keeps every formatted record (message and traceback); never fails the code that logs."""

    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.setFormatter(logging.Formatter(_LINE_FORMAT))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:  # a record that cannot be formatted: keep what is known, never fail the caller
            self.lines.append(f"{record.levelname} {record.name} <unformattable: {record.msg!r}>")


def find_leaks(lines: list[str], secrets: set[str]) -> list[str]:
    """One description per line holding a secret shape or one of `secrets`."""
    exact = re.compile("|".join(re.escape(s) for s in sorted(secrets, key=len, reverse=True))) if secrets else None
    leaks = []
    for line in lines:
        kinds = [kind for kind, shape in SECRET_SHAPES.items() if shape.search(line)]
        if exact is not None and exact.search(line):
            kinds.append("a secret a test created")
        if kinds:
            leaks.append(f"{', '.join(kinds)}: {line[:300]!r}")
    return leaks


def _file_lines() -> list[str]:
    lines = []
    for path in _files:
        if path.exists():
            lines += [f"{path.name}: {line}" for line in path.read_text(errors="replace").splitlines()]
    return lines


def pytest_sessionstart(session: pytest.Session) -> None:
    handler = RecordingHandler()
    session.config.stash[_handler_key] = handler
    session.config.stash[_gaps_key] = []
    _attach(handler)
    for name in PROJECT_LOGGERS:
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() > logging.DEBUG:
            logger.setLevel(logging.DEBUG)


_handler_key = pytest.StashKey[RecordingHandler]()
_gaps_key = pytest.StashKey[list]()
_leaks_key = pytest.StashKey[list]()


def _attach(handler: RecordingHandler) -> bool:
    """Put the handler (back) on the root logger; False if it had been removed."""
    root = logging.getLogger()
    if handler in root.handlers:
        return True
    root.addHandler(handler)
    return False


def pytest_collection_finish(session: pytest.Session) -> None:
    # Importing config.wsgi while collecting runs django.setup() again, whose LOGGING replaces the root
    # logger's handlers: nothing was logged in between that matters, so put the handler back.
    handler = session.config.stash.get(_handler_key, None)
    if handler is not None:
        _attach(handler)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    handler = item.config.stash.get(_handler_key, None)
    if handler is not None:
        _attach(handler)
    try:
        return (yield)
    finally:
        if handler is not None and not _attach(handler):
            # Some lines of this test may have gone unscanned: say so, the run cannot claim a full scan.
            item.config.stash[_gaps_key].append(f"the root logger's handlers were replaced during {item.nodeid}")


def _session_leaks(config: pytest.Config) -> list[str]:
    handler = config.stash.get(_handler_key, None)
    if handler is None:
        return []
    return config.stash[_gaps_key] + find_leaks(handler.lines + _file_lines(), _secrets)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    leaks = _session_leaks(session.config)
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller decides
        session.config.workeroutput["log_leaks"] = leaks
        return
    leaks += session.config.stash.get(_leaks_key, [])
    if leaks:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.section("secrets in log lines", sep="=", red=True)
            for leak in leaks[:50]:
                reporter.line(leak)
            reporter.line(f"{len(leaks)} log lines hold secrets (tests/log_scan.py)")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """xdist controller: collect each worker's findings."""
    found = getattr(node, "workeroutput", {}).get("log_leaks", [])
    config = node.config
    config.stash[_leaks_key] = config.stash.get(_leaks_key, []) + list(found)
