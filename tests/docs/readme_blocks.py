"""The README's shell blocks, read the way a reader pastes them, and what each says it prints.

A block is a fenced ```sh block. The line just before its fence may be
`<!-- readme-test: skip (why) -->`: such a block is shown to readers but not run (a command that serves
forever, or needs something only a person has). Inside a block, a comment line `# => ...` says what
the commands before it print: its `"key": value` pairs must each appear in a JSON answer of the block
(any order, other fields allowed); a string value ending in `...` is a prefix. A line with no pair is
fragments separated by `...`, each of which must appear in the output as it is.
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

SKIP_MARK = re.compile(r"^<!--\s*readme-test:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->$")
ANY_MARK = re.compile(r"<!--\s*readme-test")
EXPECT = re.compile(r"^\s*# => (?P<text>.*)$")
PAIR = re.compile(r'"(?P<key>[A-Za-z0-9_-]+)":\s*(?P<value>"[^"]*"|true|false|null|-?\d+(?:\.\d+)?)')
ASSIGNED = re.compile(r"(?:^|[\s;(])(?:export\s+)?([A-Z][A-Z0-9_]*)=", re.MULTILINE)


@dataclass
class Block:
    line: int  # of the opening fence, 1-based
    text: str
    skip_reason: str | None = None
    expectations: list[str] = field(default_factory=list)


def blocks_of(markdown: str) -> list[Block]:
    """Every ```sh block, in order. Raises ValueError for a marker that is not a valid skip mark."""
    lines = markdown.splitlines()
    found, index = [], 0
    while index < len(lines):
        line = lines[index]
        if ANY_MARK.search(line) and not SKIP_MARK.match(line.strip()):
            raise ValueError(f"line {index + 1}: malformed readme-test mark: {line}")
        if line.strip() == "```sh":
            start, body = index, []
            index += 1
            while index < len(lines) and lines[index].strip() != "```":
                body.append(lines[index])
                index += 1
            previous = next((lines[i].strip() for i in range(start - 1, -1, -1) if lines[i].strip()), "")
            skip = SKIP_MARK.match(previous)
            found.append(Block(line=start + 1, text="\n".join(body) + "\n",
                               skip_reason=skip["reason"] if skip else None,
                               expectations=[m["text"] for m in map(EXPECT.match, body) if m]))
        index += 1
    return found


def assigned_names(blocks: list[Block]) -> list[str]:
    """The shell variables the blocks set (BASE, TOKEN, ...): what carries over from one block to the next."""
    return sorted({name for block in blocks for name in ASSIGNED.findall(block.text)})


def _compact_json(output: str) -> str:
    """The output with every JSON document in it (several may share a line: curl adds no newline)
    re-written compactly, as the service writes them; text between documents is kept as it is."""
    decoder, parts, index = json.JSONDecoder(), [], 0
    while index < len(output):
        if output[index] in "{[":
            try:
                document, end = decoder.raw_decode(output, index)
            except ValueError:
                pass
            else:
                parts.append(json.dumps(document, separators=(",", ":"), ensure_ascii=False))
                index = end
                continue
        parts.append(output[index])
        index += 1
    return "".join(parts)


def unmet(expectation: str, output: str) -> list[str]:
    """The parts of one `# =>` line that the output does not show (empty: it does)."""
    pairs = list(PAIR.finditer(expectation))
    if not pairs:
        fragments = [part.strip() for part in expectation.split("...") if part.strip()]
        return [fragment for fragment in fragments if fragment not in output]
    compact = _compact_json(output)
    missing = []
    for pair in pairs:
        key, value = pair["key"], json.loads(pair["value"])
        if isinstance(value, str) and value.endswith("..."):
            wanted = json.dumps({key: value[:-3]}, separators=(",", ":"), ensure_ascii=False)[1:-2]
        else:
            wanted = json.dumps({key: value}, separators=(",", ":"), ensure_ascii=False)[1:-1]
        if wanted not in compact:
            missing.append(pair.group(0))
    return missing


def readme_blocks(path: Path) -> list[Block]:
    return blocks_of(path.read_text())
