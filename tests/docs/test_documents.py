"""The documents stand on their own: they cite only files that exist and headings that are there, and
never refer to what a reader of the repository does not have (the contract documents the service was
built from, numbered work items, the sessions that did the work, a folder outside the repository).
Each rule says the thing itself instead ("deliveries happen within the request", not "rule 1")."""

import re
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]


def documents() -> list[Path]:
    found = [PROJECT / "README.md", PROJECT / "client" / "README.md", *sorted((PROJECT / "docs").glob("**/*.md"))]
    found += sorted(PROJECT.glob("bench/**/*.md"))
    return [path for path in found if path.exists()]


FORBIDDEN = re.compile(
    r"\bspec(?:s|'s)?\b"  # the contract the service was built from: say the rule itself
    r"|\baddend(?:um|a)\b"
    r"|\bissues?\s*#\s*\d+|\bissues?\s+\d+"  # numbered work items
    r"|\b(?:the|this|that)\s+issue(?:'s)?\b"
    r"|\bsessions?\s+\d+"  # the sessions that did the work
    r"|\b(?:first|second|third|fourth|fifth|previous|earlier|later|last|next|this|that)\s+session(?:'s)?\b"
    r"|\.\./shared\b|\bshared/(?:spec|docs)\b",
    re.IGNORECASE)
# A repository path with a file extension, not part of a URL, an absolute path or a placeholder.
CITED_PATH = re.compile(r"(?<![\w/.:~$<>{@-])((?:\.?[\w-]+/)+[\w.-]*\w\."
                        r"(?:py|md|sh|conf|toml|yaml|yml|json|txt|html|cfg|ini|js|css))\b")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def forbidden_references(text: str) -> list[str]:
    flat = re.sub(r"\s+", " ", text)
    return [flat[max(0, match.start() - 40):match.end() + 20] for match in FORBIDDEN.finditer(flat)]


def anchor_of(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {anchor_of(heading) for heading in HEADING.findall(FENCE.sub("", path.read_text()))}


def missing_citations(path: Path) -> list[str]:
    """Links whose file or heading is not there, and cited repository paths that do not exist."""
    text = path.read_text()
    missing = []
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in anchors(linked)):
            missing.append(target)
    for cited in CITED_PATH.findall(text):
        if not any((base / cited).exists() for base in (PROJECT, path.parent)):
            missing.append(cited)
    return missing


@pytest.mark.parametrize("path", documents(), ids=lambda path: str(path.relative_to(PROJECT)))
def test_a_document_refers_to_nothing_the_reader_does_not_have(path):
    assert forbidden_references(path.read_text()) == []


@pytest.mark.parametrize("path", documents(), ids=lambda path: str(path.relative_to(PROJECT)))
def test_every_file_and_heading_a_document_cites_exists(path):
    assert missing_citations(path) == []


@pytest.mark.parametrize("planted", [
    "As the spec says, tokens are short.", "The addendum's list of codes.", "Fixed in issue 19.",
    "(see issue #28)", "the issue asks for it", "measured in the previous session", "third session, at noon",
    "read ../shared/spec/service-spec.md", "The spec's rule 1 applies.",
])
def test_a_planted_reference_is_caught(planted):
    assert forbidden_references(f"Some text.\n{planted}\nMore text.") != []


@pytest.mark.parametrize("fine", [
    "A session JWT, valid 24 hours.", "Other sessions' JWTs end.", "The C2PA specification recommends it.",
    "First steps with curl", "logged-out sessions stay logged out", "issued at", "one session per login",
])
def test_ordinary_words_are_not_taken_for_references(fine):
    assert forbidden_references(fine) == []


def test_a_planted_missing_file_or_heading_is_caught(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## The part's name\n")
    document = tmp_path / "doc.md"
    document.write_text("See [other](other.md#the-parts-name), [gone](gone.md), [bad](other.md#nowhere),\n"
                        "[here](#doc) and `config/settings.py`, `deploy/missing.sh`.\n\n# Doc\n")
    assert missing_citations(document) == ["gone.md", "other.md#nowhere", "deploy/missing.sh"]


def _unknown(names: set[str]) -> set[str]:
    """The names that nothing reads: not an environment variable or a setting of the service, its start
    scripts, compose file, Makefile or browser tests."""
    sources = [PROJECT / "config" / "settings.py", PROJECT / "gunicorn.conf.py", PROJECT / "compose.yaml",
               PROJECT / "Makefile", *sorted((PROJECT / "deploy").glob("*.sh")),
               *sorted((PROJECT / "tests" / "browser").glob("*.py"))]
    source = "".join(path.read_text() for path in sources)
    return {name for name in names if not re.search(rf"(?<![A-Z0-9_]){name}(?![A-Z0-9_])", source)}


def cited_settings(text: str) -> set[str]:
    """Environment variables a document cites: `NAME_WITH_UNDERSCORES` in backticks, or a settings table's rows."""
    names = set(re.findall(r"`([A-Z][A-Z0-9]*_[A-Z0-9_]+)`", text))
    names.update(re.findall(r"^\| `([A-Z][A-Z0-9_]+)`", text, re.MULTILINE))
    return names


@pytest.mark.parametrize("name", ["README.md", "docs/operations.md"])
def test_every_setting_a_document_names_is_read_by_the_service(name):
    cited = cited_settings((PROJECT / name).read_text())
    assert cited, "the check found no setting in the document"
    assert _unknown(cited) == set()


def test_a_planted_unknown_setting_is_caught():
    assert _unknown(cited_settings("Back up `KEY_ENCRYPTON_KEY` and `KEY_ENCRYPTION_KEY`.")) == {"KEY_ENCRYPTON_KEY"}
