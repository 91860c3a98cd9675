"""A verification result in plain sentences, for `svc verify` without `--json`.

The service's result carries `summary`, its own sentences; an older service's result does not, and offline
verification has no service at all. Then the sentences are built here from the fields every result has:
`authentic`, `tampered`, `confidence`, `token_source`, `signals`, `provenance` ({org, model, signed_at}),
`reason` and `record_id`. A result that found nothing makes no claim either way: missing provenance
never means that a person made the file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

# How the record was found, as the end of "The record was found ...".
FOUND_THROUGH = {
    "provided": "through the token given with --token",
    "c2pa": "through the token in the file's C2PA manifest",
    "xmp": "through the token in the file's XMP metadata",
    "metadata": "through the token in the file's metadata",
    "watermark": "through the watermark in the content",
    "content_hash": "by the file's exact content hash (the file carries no token)",
    "phash": "by the picture's perceptual hash, a near match (the file carries no token)",
    "fingerprint": "by the text's word fingerprint (its marks and token are gone)",
}

NOTHING_FOUND = ("No provenance found: this service holds no signature for this file. That makes no claim "
                 "either way: the file may or may not have been made by AI.")


def verdict_text(result: dict[str, Any]) -> str:
    """The service's own `summary` when the result has one; otherwise sentences built from the fields."""
    summary = result.get("summary")
    if isinstance(summary, str) and summary.strip():
        return summary.strip()
    return describe(result)


def describe(result: dict[str, Any]) -> str:
    """Sentences for a verification result that has no `summary` (an older service)."""
    provenance = result.get("provenance") or None
    signals = result.get("signals") or {}
    record = f" (record {result['record_id']})" if result.get("record_id") else ""
    found = FOUND_THROUGH.get(str(result.get("token_source")), "")
    how = f" The record was found {found}." if found else ""
    if result.get("authentic"):
        mark = (" Its watermark was read too: the full chain holds." if signals.get("watermark_found")
                else " No watermark was read (the format may carry none, or it was lost); the signature and the "
                     "content still match.")
        return f"Authentic: this file is exactly the content that {_signer(provenance)} signed{record}.{how}{mark}"
    reason = result.get("reason") or "no_provenance_found"
    if reason == "no_provenance_found" or (provenance is None and reason not in ("invalid_token",
                                                                                 "record_not_found")):
        if signals.get("watermark_found"):
            return ("Not verified: the content carries this service's watermark, but no record of it was found. "
                    "Nothing can be said about who signed it.")
        return NOTHING_FOUND
    if reason == "invalid_token":
        return ("Not authentic: the token is not one this service issued (it was altered or mistyped), so it "
                "names no signer.")
    if reason == "record_not_found":
        return ("Not authentic: the token is well formed, but this service holds no record for it (the record "
                "was deleted, or the token comes from another service).")
    if reason == "signature_invalid":
        changed = " The content also differs from what was signed." if result.get("tampered") else ""
        return (f"Not authentic: a record of {_signer(provenance)} was found{record}, but its signature does not "
                f"hold (the generator was revoked, or the record or its manifest was altered).{how}{changed}")
    if reason == "content_tampered":
        return (f"Changed: this is a changed copy of content that {_signer(provenance)} signed{record}. Its bytes "
                f"differ from the signed file: a re-saved, converted, cropped or edited copy reads this way.{how}")
    return f"Not authentic ({reason}).{how}"


def offline_text(authentic: bool, reason: str | None, record: dict[str, Any]) -> str:
    """The verdict of offline verification (a record and pinned keys, no service) as a sentence."""
    if authentic:
        model = f" with the model {record['model']}" if record.get("model") else ""
        when = f" on {_when(record.get('signed_at'))}" if record.get("signed_at") else ""
        return (f"Authentic: this file is exactly the content of record {record.get('record_id')}, signed by "
                f"generator {record.get('generator_id')}{model}{when}; checked offline with the pinned keys.")
    return f"Not authentic: {reason}."


def _signer(provenance: dict[str, Any] | None) -> str:
    """`Org (model m, signed on ...)` from a result's provenance; "the signer" when there is none."""
    if not provenance:
        return "its signer"
    org = provenance.get("org") or "an organization"
    details = []
    if provenance.get("model"):
        details.append(f"model {provenance['model']}")
    if provenance.get("signed_at"):
        details.append(f"on {_when(provenance['signed_at'])}")
    return f"{org} ({', '.join(details)})" if details else str(org)


def _when(value: Any) -> str:
    """An ISO 8601 timestamp as `2026-11-27 02:25 UTC`; the text as it is when it is not one."""
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")
