"""A verification result in words a non-expert understands: the API's `summary` and the /verify page.

One place for the words, so the API and the page never disagree. `summary` is one or two plain sentences
that say what was found and what it means, naming the organization and the model when a record was found.
Rules the words keep:
- content found through its watermark or its look (pHash) whose bytes differ from the signed ones is a
  *changed copy* (re-saved, resized, converted): the words never call it an edit or a forgery;
- finding nothing (or only a broken token) makes no claim either way: absence of provenance is not
  evidence that a person made the content;
- a mark or token that points to another record than the one answering is named, not hidden.

Pure: no Django import. It reads a `verification.services.Verification` (and its records) by attribute.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

NO_CLAIM = "This makes no claim either way about how the content was made."
NO_PROVENANCE = ("No provenance was found: no token, watermark or signed record matches this file. This makes "
                 "no claim either way: absence of provenance is not evidence that a person made it.")

# What each confidence level means, for the page beside the summary.
CONFIDENCE = {
    "high": "The signature checks out for these exact bytes, and the file carries that signing's watermark.",
    "medium": "The signature checks out for these exact bytes; the file carries no watermark of that signing.",
    "low": "Some signs of a signing were found, but they do not all hold: read the summary.",
    "none": "Nothing was found, so this makes no claim either way.",
}
# The API's `reason` codes in words.
REASONS = {
    "no_provenance_found": "Nothing in the file points to a record.",
    "record_not_found": "The file points to a record that this service does not have.",
    "content_tampered": "The file's bytes differ from the signed ones: it is a changed copy (re-saved, resized, "
                        "converted or edited).",
    "signature_invalid": "The record's signature does not check out, or its generator was revoked.",
    "invalid_token": "The token is damaged or was not issued by this service.",
}
# `token_source` in words: how the record was found.
SOURCES = {
    "provided": "the token you gave", "c2pa": "the file's C2PA manifest", "xmp": "the file's XMP metadata",
    "metadata": "the file's metadata", "watermark": "the invisible watermark",
    "content_hash": "the file's exact bytes (its content hash)", "phash": "a visual match with signed content",
    "fingerprint": "the text's word fingerprint", "none": "nothing",
}
_EMBEDDED = {"c2pa": "C2PA manifest", "xmp": "metadata", "metadata": "metadata"}
# The C2PA manifest's checks (record_format.manifest_checks) as the page names them.
MANIFEST_CHECKS = {
    "claim_signature": "Manifest signature", "pq_signature": "Post-quantum signature",
    "certificate_chain": "Signer's certificate", "time_stamp": "Trusted time", "hard_binding": "File unchanged",
    "assertions": "Statements unchanged", "ingredients": "Earlier versions",
}
MANIFEST_SIGNING = {"hybrid": "a classical signature (ES256) that every Content Credentials reader checks, and a "
                              "post-quantum one (ML-DSA-65)",
                    "ml-dsa-65": "a post-quantum signature (ML-DSA-65) that only this service's verifier and "
                                 "client check today"}
_HELD, _FAILED = ("valid", "trusted"), ("invalid", "untrusted", "unsupported")


def signing(record) -> str:
    """'Acme Labs signed with the model X on 27 November 2026'."""
    return f"{record.org.name} signed with the model {record.model} on {_day(record.signed_at)}"


def summary(result) -> str:
    """One or two sentences for a `Verification`."""
    record = result.record
    if record is None:
        return _nothing_found(result)
    if not result.signature_valid:
        first = _untrusted(result)
        second = "This file also differs from what was signed." if result.tampered else _passed_over(result)
    elif result.tampered:
        first, second = _changed_copy(result), _changed_copy_meaning(result)
    else:
        first = (f"This file is exactly the content that {signing(record)}: its signature checks out and the "
                 f"content has not changed since.")
        second = _passed_over(result) or (
            "It also carries that signing's invisible watermark." if result.watermark_found
            else "It carries no invisible watermark of that signing, so the record alone vouches for it.")
    return f"{first} {second}" if second else first


def _untrusted(result) -> str:
    record = result.record
    claim = (f"A record says that {record.org.name} signed this content with the model {record.model} on "
             f"{_day(record.signed_at)}, but")
    if record.generator.is_revoked:
        return f"{claim} that generator has since been revoked, so its signature no longer counts."
    return f"{claim} the record's signature does not check out, so the record cannot be trusted."


def _changed_copy(result) -> str:
    what = signing(result.record)
    if result.token_source == "phash":
        return f"This looks like a changed copy of content that {what}: it matches that content visually, " \
               f"not byte for byte."
    if result.token_source == "watermark":
        return f"This is a changed copy of content that {what}: its invisible watermark names that signing, " \
               f"but its bytes differ."
    named_by = "the token you gave" if result.token_source == "provided" else "the token in the file"
    return f"This is a changed copy of content that {what}: {named_by} names that signing, but the bytes differ."


def _changed_copy_meaning(result) -> str:
    if result.token_source == "phash":
        return ("Re-saving, resizing or converting a file makes such a copy; the signature vouches only for the "
                "original file.")
    return ("Re-saving, resizing or converting a file makes such a copy, so this is not evidence of "
            "manipulation; the signature vouches only for the original file.")


def _passed_over(result) -> str:
    """What an embedded token or a watermark pointed to when the exact bytes' record answered instead."""
    other = result.passed_over
    if other is None:
        return ""
    if other.source == "watermark":
        if other.record is None:
            return "It also carries an invisible watermark this service has no record of."
        return (f"It also carries the invisible watermark of content that {signing(other.record)}, so it was "
                f"made from that content.")
    where = _EMBEDDED.get(other.source, "metadata")
    if other.record is None:
        return f"The token in its {where} is damaged or unknown here; the file's exact bytes found the record."
    return f"Its {where} carries a token for different content, which {signing(other.record)}."


def _nothing_found(result) -> str:
    reason = result.reason
    if reason == "invalid_token":
        where = "The token you gave" if result.token_source == "provided" else "The token in the file"
        return f"{where} is damaged or was not issued by this service, so it names no record. {NO_CLAIM}"
    if reason == "record_not_found":
        if result.token_source == "watermark":
            return ("The file carries an invisible watermark, but this service has no record for it (it may "
                    f"have been deleted). {NO_CLAIM}")
        where = "The token you gave" if result.token_source == "provided" else "The token in the file"
        return f"{where} names a record this service does not have (it may have been deleted). {NO_CLAIM}"
    return NO_PROVENANCE


def _day(moment: datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment.day} {moment:%B %Y}"


@dataclass(frozen=True)
class Signal:
    """One signal for the page: `state` is `held` (shown green), `failed` (shown red), or `absent` (grey:
    not found, or not checked because there was nothing to check)."""

    label: str
    state: str
    words: str


def signals(result) -> list[Signal]:
    """The page's list of signals. Only a signal that held is `held`; nothing else is shown in green."""
    record = result.record
    if result.watermark_found:
        mark = Signal("Watermark", "held", "found: an invisible mark in the content itself, which survives "
                                           "re-saving" + (" (it belongs to this record)." if record else "."))
    elif result.passed_over is not None and result.passed_over.source == "watermark":
        mark = Signal("Watermark", "absent", "this record's was not found (the mark in the file belongs to other "
                                             "content).")
    else:
        mark = Signal("Watermark", "absent", "not found: no invisible mark of a signing was read in the content.")
    if record is None:
        return [mark, Signal("Record", "absent", "not found: no provenance record matches this file."),
                Signal("Signature", "absent", "not checked: there is no record to check."),
                Signal("Content unchanged", "absent", "not checked: there is no record to compare with.")]
    revoked = record.generator.is_revoked
    signature = (Signal("Signature", "held", "valid: the record's ML-DSA-65 signature checks out.")
                 if result.signature_valid else
                 Signal("Signature", "failed", "not valid: the generator was revoked." if revoked
                        else "not valid: the record's signature does not check out."))
    unchanged = (Signal("Content unchanged", "failed", "no: the file's bytes differ from the signed ones "
                                                       "(a changed copy).")
                 if result.tampered else
                 Signal("Content unchanged", "held", "yes: the file's bytes are exactly the signed ones."))
    return [mark, Signal("Record", "held", f"found, through {SOURCES.get(result.token_source, 'nothing')}."),
            signature, unchanged]


def manifest_in_words(report) -> dict | None:
    """The file's C2PA manifest checks for the page: {signing, valid, time, checks: [Signal as dict]}."""
    if report is None:
        return None
    checks = [{"label": MANIFEST_CHECKS[check.name], "words": check.message,
               "state": "held" if check.status in _HELD else "failed" if check.status in _FAILED else "absent"}
              for check in report.checks]
    signing = MANIFEST_SIGNING.get(report.signing, f"a signature the service does not make ({report.signing})")
    return {"signing": signing, "valid": report.signatures_valid and report.intact,
            "time": _day(report.time) if report.time else None, "checks": checks}


def time_stamp_in_words(check) -> str | None:
    """The record signature's time stamp in one sentence, or None without one."""
    if check is None:
        return None
    if check.status == "valid":
        return (f"A trusted time-stamp authority ({check.authority}) saw this signature on {_day(check.time)}, "
                "so its date does not rest on the signer's clock.")
    if check.status == "unchecked":
        return "The signature carries a time stamp, but this service trusts no time-stamp authority to check it."
    return f"The signature's time stamp does not check out: {check.problem}."
