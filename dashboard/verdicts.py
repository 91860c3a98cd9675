"""A verification result in words for the /verify page. The words themselves live in verification/summary.py,
which the API's `summary` field uses too, so the page and the API never disagree (spec, What the service
does, 5: finding nothing never means the content was made by a person).

The page follows post/redirect/get: the verdict travels to the result page as a signed value in its
address (`verdict_token`), so a reload or Back shows the same verdict without verifying again, and nobody
can make the page show a verdict the service did not give.
"""

from dataclasses import asdict, dataclass
from datetime import datetime

from django.core import signing
from django.utils import timezone

from media_codecs.disclosure import source_type_term
from verification import summary as words

SALT = "dashboard.verify.result"
MAX_AGE = 24 * 3600  # a result page older than a day asks for the file again: records can change (revocation)


@dataclass(frozen=True)
class VerdictInWords:
    level: str  # the API's `confidence`
    headline: str  # the API's `summary`
    confidence: str  # what the confidence level means
    reason: str | None
    found_through: str | None  # None when nothing was found
    signals: list[words.Signal]
    provenance: dict | None  # {org, model, signed_at, record_id, provider, system, ...} when a record was found
    checked_at: datetime
    time_stamp: str | None = None  # the record signature's time stamp in words
    credentials: dict | None = None  # the file's C2PA manifest checks in words (words.manifest_in_words)


def verdict_in_words(result) -> VerdictInWords:
    """Words for a `verification.services.Verification`."""
    record = result.record
    return VerdictInWords(
        level=result.confidence, headline=words.summary(result), confidence=words.CONFIDENCE[result.confidence],
        reason=words.REASONS.get(result.reason) if result.reason else None,
        found_through=None if result.token_source == "none" else words.SOURCES.get(result.token_source),
        signals=words.signals(result),
        provenance=None if record is None else {"org": record.org.name, "model": record.model,
                                                "signed_at": record.signed_at, "record_id": str(record.pk),
                                                **_disclosed(record.generator)},
        checked_at=timezone.now(), time_stamp=words.time_stamp_in_words(result.time_stamp),
        credentials=words.manifest_in_words(result.c2pa))


def _disclosed(generator) -> dict:
    """The generator's declared disclosure, as the page words it (the source type by its term)."""
    return {"provider": generator.provider_name, "system": generator.system_name,
            "system_version": generator.system_version,
            "source_type": SOURCE_TYPE_WORDS.get(source_type_term(generator.digital_source_type) or "", "")}


# How the page names the IPTC digital source types a generator is likely to declare; others are not worded.
SOURCE_TYPE_WORDS = {
    "trainedAlgorithmicMedia": "made by a generative AI model",
    "compositeWithTrainedAlgorithmicMedia": "combines generative AI output with other material",
    "algorithmicMedia": "made by an algorithm without training data",
    "compositeSynthetic": "a composite of synthetic elements",
    "algorithmicallyEnhanced": "a capture enhanced by an algorithm",
    "digitalCreation": "created digitally by a person",
}


def verdict_token(verdict: VerdictInWords) -> str:
    """The verdict, signed, for the result page's address."""
    value = asdict(verdict)
    value["checked_at"] = verdict.checked_at.isoformat()
    if verdict.provenance is not None:
        value["provenance"]["signed_at"] = verdict.provenance["signed_at"].isoformat()
    return signing.dumps(value, salt=SALT, compress=True)


def verdict_from_token(token: str) -> VerdictInWords | None:
    """The verdict a `verdict_token` carries; None when it is damaged, forged or older than MAX_AGE."""
    try:
        value = signing.loads(token, salt=SALT, max_age=MAX_AGE)
        provenance = value["provenance"]
        if provenance is not None:
            provenance["signed_at"] = datetime.fromisoformat(provenance["signed_at"])
        return VerdictInWords(**{**value, "signals": [words.Signal(**signal) for signal in value["signals"]],
                                 "checked_at": datetime.fromisoformat(value["checked_at"])})
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        return None
