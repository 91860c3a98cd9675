"""A verification result in words a non-expert understands (spec, What the service does, 5: finding
nothing never means the content was made by a person)."""

from dataclasses import dataclass

HEADLINES = {
    "high": "Signed by the service, and unchanged",
    "medium": "Signed by the service, and unchanged (its invisible watermark was not found)",
    "low": "Signs of provenance, but they do not add up",
    "none": "No provenance found: this makes no claim either way",
}
EXPLANATIONS = {
    "high": "The file carries our invisible watermark and its record, and the record's post-quantum signature "
            "(ML-DSA-65) checks out against this exact content.",
    "medium": "The record was found and its signature checks out against this exact content, but the "
              "watermark is missing, for example because the file was re-saved or converted.",
    "low": "Some traces of a signing were found, but not a consistent chain: read the reason below.",
    "none": "We found no token, watermark or matching record. That does not mean a person made it: the "
            "content may never have been signed here, or it was changed so much that nothing survived. "
            "Absence of provenance is not evidence of human origin.",
}
REASONS = {
    "no_provenance_found": "Nothing in the file points to a record.",
    "record_not_found": "The file points to a record that does not exist here.",
    "content_tampered": "A record was found, but the content differs from what was signed: it was edited "
                        "after signing.",
    "signature_invalid": "The record's signature does not check out, or its generator was revoked.",
    "invalid_token": "The token is damaged or was not issued by this service.",
}
SOURCES = {
    "provided": "the token you pasted", "xmp": "the file's XMP metadata", "metadata": "the file's metadata",
    "watermark": "the invisible watermark", "phash": "a visual match with a signed file", "none": "nothing",
}


@dataclass(frozen=True)
class Signal:
    label: str
    present: bool
    meaning: str


@dataclass(frozen=True)
class VerdictInWords:
    headline: str
    explanation: str
    reason: str | None
    found_through: str
    signals: list[Signal]


def verdict_in_words(result) -> VerdictInWords:
    """Words for a `verification.services.Verification`."""
    signals = [
        Signal("Watermark", result.watermark_found, "An invisible mark in the content itself, which survives "
                                                     "many edits and re-saves."),
        Signal("Record", result.record_found, "The service holds a provenance record for this content."),
        Signal("Signature", result.signature_valid, "The record's ML-DSA-65 signature is valid and its "
                                                    "generator is not revoked."),
    ]
    return VerdictInWords(headline=HEADLINES[result.confidence], explanation=EXPLANATIONS[result.confidence],
                          reason=REASONS.get(result.reason) if result.reason else None,
                          found_through=SOURCES.get(result.token_source, result.token_source), signals=signals)
