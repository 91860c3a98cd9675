"""Key rings in settings: `KEY_ENCRYPTION_KEY` and `TOKEN_SIGNING_KEY` as `id:secret` lists.

    KEY_ENCRYPTION_KEY="k2:<new secret>,k1:<old secret>"

Entries are separated by commas; the first is the newest (it seals new data, mints new tokens), every
entry still reads. An id is 1 to 32 of `[A-Za-z0-9._-]`, starting with a letter or digit; it names one
secret for good (sealed blobs carry it), so an id is never reused for another secret.

An entry without `id:` is a secret from before key rings: it gets the id `legacy`, the id of everything
sealed before blobs carried one. The value of a deployment that predates rings (one plain secret) is
therefore a ring of one `legacy` key and keeps reading its data; `legacy:<secret>` says the same
explicitly and is how a secret that contains `:` is written. `TOKEN_SIGNING_KEY` already listed several
plain secrets: they get `legacy`, `legacy-2`, `legacy-3`, ...

This module must not import Django: settings validate with it at start-up, core.keyring reads with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LEGACY_KEY_ID = "legacy"
KEY_ID_MAX_LENGTH = 32
_KEY_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")


class RingError(ValueError):
    """The setting is not a valid key ring; the message names the setting and the entry."""


@dataclass(frozen=True)
class RingEntry:
    key_id: str
    secret: str


def parse_ring(name: str, value: str, *, several_legacy: bool = False,
               verbatim_single: bool = False) -> tuple[RingEntry, ...]:
    """The ring that setting `name` holds, newest first. Raises RingError with a message for the operator.

    `several_legacy` allows more than one entry without an id (TOKEN_SIGNING_KEY listed plain secrets
    before rings). `verbatim_single` takes a value with neither `,` nor `:` exactly as it is, spaces
    included, because that is how KEY_ENCRYPTION_KEY was read before rings.
    """
    if verbatim_single and value.strip() and "," not in value and ":" not in value:
        return (RingEntry(LEGACY_KEY_ID, value),)
    if not value.strip():
        raise RingError(f"{name} is empty")
    entries = [_entry(name, position, text) for position, text in enumerate(value.split(","), start=1)]
    entries = _name_legacy_entries(name, entries, several_legacy)
    _refuse_duplicates(name, entries)
    return tuple(entries)


def _entry(name: str, position: int, text: str) -> RingEntry:
    text = text.strip()
    if not text:
        raise RingError(f"{name}: entry {position} is empty (two commas in a row, or one at an end)")
    if ":" not in text:
        return RingEntry("", text)  # named by _name_legacy_entries
    key_id, secret = (part.strip() for part in text.split(":", 1))
    if _KEY_ID_RE.fullmatch(key_id) is None:
        # The text before ':' is not echoed: in a legacy secret that contains ':' it is part of the secret.
        raise RingError(f"{name}: entry {position} has a malformed key id; an id is 1 to {KEY_ID_MAX_LENGTH} "
                        "letters, digits, '.', '_' or '-', starting with a letter or digit (a legacy secret "
                        f"that contains ':' is written {LEGACY_KEY_ID}:<secret>)")
    if not secret:
        raise RingError(f"{name}: entry {position} (id {key_id!r}) has an empty secret")
    return RingEntry(key_id, secret)


def _name_legacy_entries(name: str, entries: list[RingEntry], several_legacy: bool) -> list[RingEntry]:
    plain = [index for index, entry in enumerate(entries) if not entry.key_id]
    if len(plain) > 1 and not several_legacy:
        raise RingError(f"{name}: {len(plain)} entries have no id; only the legacy secret may go without one, "
                        "give every other entry an id (id:secret). A secret cannot contain ','.")
    named = list(entries)
    for number, index in enumerate(plain, start=1):
        key_id = LEGACY_KEY_ID if number == 1 else f"{LEGACY_KEY_ID}-{number}"
        named[index] = RingEntry(key_id, entries[index].secret)
    return named


def _refuse_duplicates(name: str, entries: list[RingEntry]) -> None:
    seen_ids: set[str] = set()
    seen_secrets: dict[str, str] = {}
    for entry in entries:
        if entry.key_id in seen_ids:
            raise RingError(f"{name}: the key id {entry.key_id!r} is listed twice")
        if entry.secret in seen_secrets:
            raise RingError(f"{name}: ids {seen_secrets[entry.secret]!r} and {entry.key_id!r} have the same secret")
        seen_ids.add(entry.key_id)
        seen_secrets[entry.secret] = entry.key_id


def read_key_encryption_key(value: str) -> tuple[RingEntry, ...]:
    """KEY_ENCRYPTION_KEY's ring: one entry at most without an id (before rings it was one secret,
    taken verbatim). Raises RingError."""
    return parse_ring("KEY_ENCRYPTION_KEY", value, verbatim_single=True)


def read_token_signing_key(value: str) -> tuple[RingEntry, ...]:
    """TOKEN_SIGNING_KEY's ring: before rings it listed plain secrets, which stay valid. Raises RingError."""
    return parse_ring("TOKEN_SIGNING_KEY", value, several_legacy=True)
